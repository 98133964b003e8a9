"""The command line: `tqgen show` (byte table), `tqgen check` (eligibility, exit codes), unknown names.

In-process through tqgen.cli.main (capsys), plus the installed `tqgen` console script in a subprocess.
Expected numbers are worked out by hand from DESIGN §2 in the comments.
"""

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tqgen.cli import main

PRESET_NAMES = ["k8v4", "4bit_nc", "k3v4_nc", "3bit_nc"]
TARGET_NAMES = ["sm80", "sm86", "sm89", "sm90", "gfx90a", "gfx942", "gfx950", "cpu"]
FIELDS = ("k_data", "k_norm", "v_data", "v_scale", "v_zero")


def _rows(out: str) -> dict[str, list[str]]:
    """The byte table's rows keyed by field name: [field, offset, token_stride, head_stride, bytes, ...]."""
    return {line.split()[0]: line.split() for line in out.splitlines() if line.split() and line.split()[0] in FIELDS}


def test_show_soa_table(capsys):
    assert main(["show", "--preset", "4bit_nc", "--layout", "soa", "--head-dim", "128", "--block-size", "16"]) == 0
    out = capsys.readouterr().out
    header = next(line.split() for line in out.splitlines() if line.startswith("field"))
    assert header[:5] == ["field", "offset", "token_stride", "head_stride", "bytes"]
    rows = _rows(out)
    assert list(rows) == list(FIELDS)
    # default 8 kv heads; KD = VD = 64: data region [16][8][128] = 16384 bytes, token stride 8·128 = 1024,
    # head stride 128; fp16 metadata [H=8][F=3][16] at 16384: field stride 16·2 = 32, head stride 3·32 = 96
    assert rows["k_data"][1:5] == ["0", "1024", "128", "64"]
    assert rows["v_data"][1:5] == ["64", "1024", "128", "64"]
    assert rows["k_norm"][1:5] == ["16384", "2", "96", "2"]
    assert rows["v_scale"][1:5] == ["16416", "2", "96", "2"]
    assert rows["v_zero"][1:5] == ["16448", "2", "96", "2"]
    assert "slot 134 bytes" in out and "block 17152 bytes" in out  # 16·8·134
    assert "soa-k4nc-v4-fold-hadamard-d128-b16" in out  # SoA folds by default


def test_show_soa_one_head_and_fp8_keys(capsys):
    # k8v4, 1 head, block 32: KD = 128, VD = 64; META = 32·1·192 = 6144; F = 2 (v_scale, v_zero)
    assert main(["show", "--preset", "k8v4", "--layout", "soa", "--block-size", "32", "--num-kv-heads", "1"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert "k_norm" not in rows
    assert rows["k_data"][1:5] == ["0", "192", "192", "128"]
    assert rows["v_data"][1:5] == ["128", "192", "192", "64"]
    assert rows["v_scale"][1:5] == ["6144", "2", "128", "2"]
    assert rows["v_zero"][1:5] == ["6208", "2", "128", "2"]


@pytest.mark.parametrize("preset,slot,line", [
    ("k8v4", 196, "k_data 0-127 | v_data 128-191 | v_scale 192-193 | v_zero 194-195"),
    ("4bit_nc", 134, "k_data 0-63 | k_norm 64-65 | v_data 66-129 | v_scale 130-131 | v_zero 132-133"),
    ("k3v4_nc", 118, "k_data 0-47 | k_norm 48-49 | v_data 50-113 | v_scale 114-115 | v_zero 116-117"),
    ("3bit_nc", 102, "k_data 0-47 | k_norm 48-49 | v_data 50-97 | v_scale 98-99 | v_zero 100-101"),
])
def test_show_aos_offsets_match_the_design_table(capsys, preset, slot, line):
    assert main(["show", "--preset", preset, "--num-kv-heads", "2"]) == 0
    out = capsys.readouterr().out
    assert line in out and f"slot {slot} bytes" in out
    rows = _rows(out)
    assert rows["k_data"][2:4] == [str(2 * slot), str(slot)]  # AoS: token stride H·slot, head stride slot


def test_check_k8v4_on_gfx90a_is_refused_with_a_reason(capsys):
    assert main(["check", "--preset", "k8v4", "--target", "gfx90a"]) == 1
    out = capsys.readouterr().out
    assert "key_codec='fp8_e4m3fn' not supported" in out and "gfx90a has no fp8" in out
    assert "4bit_nc" in out  # what to try instead


def test_check_4bit_nc_on_sm90_is_eligible(capsys):
    assert main(["check", "--preset", "4bit_nc", "--target", "sm90"]) == 0
    out = capsys.readouterr().out
    assert "triton: eligible" in out


def test_check_more_targets(capsys):
    assert main(["check", "--preset", "4bit_nc", "--layout", "soa", "--target", "gfx950"]) == 0
    out = capsys.readouterr().out
    # listed in the order the runtime tries them (tqgen.backends.generated_chain)
    names = [line.split(":")[0].strip() + (":gfx950_mfma" if "gfx950_mfma" in line else "")
             for line in out.splitlines()[1:] if line.startswith("  ") and not line.startswith("    ")]
    assert names == ["triton:gfx950_mfma", "hip", "triton", "reference"], out
    assert main(["check", "--preset", "k8v4", "--target", "gfx942"]) == 0  # the preset's fp8 = gfx942's fnuz
    assert "fp8e4m3fnuz" in capsys.readouterr().out
    # D=96 with an orthogonal rotation: Triton (padded to 128, the rotation a dot) and C++ (session 50: the decode;
    # 51: the store and dequant, the rotation by m16n8k16 products);
    # D=80: C++ too (session 54: the decode; 55: the store and dequant)
    assert main(["check", "--preset", "4bit_nc", "--head-dim", "96", "--rotation", "orthogonal", "--target", "sm90"]) == 0
    out = capsys.readouterr().out
    assert "triton: eligible" in out and "cuda: eligible\n" in out, out
    assert main(["check", "--preset", "4bit_nc", "--head-dim", "80", "--rotation", "orthogonal", "--target", "sm90"]) == 0
    out = capsys.readouterr().out
    assert "triton: eligible" in out and "cuda: eligible\n" in out, out
    # only the reference holds D=8: no kernel backend fits -> exit 1
    assert main(["check", "--preset", "4bit_nc", "--head-dim", "8", "--target", "sm90"]) == 1
    out = capsys.readouterr().out
    assert "reference: eligible" in out and "16..256 for Triton" in out, out


def test_check_needs_preset_and_target(capsys):
    assert main(["check", "--preset", "4bit_nc"]) == 2
    assert "--target" in capsys.readouterr().err


@pytest.mark.parametrize("verb", ["show", "check"])
def test_unknown_preset_lists_the_valid_names(capsys, verb):
    argv = [verb, "--preset", "5bit_nc"] + (["--target", "sm90"] if verb == "check" else [])
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert "preset='5bit_nc'" in err
    for name in PRESET_NAMES:
        assert name in err


def test_unknown_target_lists_the_valid_names(capsys):
    assert main(["check", "--preset", "4bit_nc", "--target", "sm100"]) != 0
    err = capsys.readouterr().err
    assert "target='sm100'" in err
    for name in TARGET_NAMES:
        assert name in err


def test_invalid_spec_flags_report_every_reason(capsys):
    assert main(["show", "--preset", "4bit_nc", "--layout", "csr", "--block-size", "8"]) == 2
    err = capsys.readouterr().err
    assert "layout='csr'" in err and "aos, soa" in err
    assert "block_size=8" in err and "16, 32, 64, 128" in err
    assert main(["show", "--preset", "4bit_nc", "--head-dim", "96"]) == 2
    assert "rotation='orthogonal'" in capsys.readouterr().err  # the hint for non-power-of-two head_dim



def test_width_flags_override_the_preset(capsys, tmp_path):
    """--key-bits / --value-bits / --(no-)norm-correction: any width the IR allows, from a preset's base. 2-bit keys,
    2-bit values at D=128: K 128·2/8 = 32 bytes, V 32, three fp16 fields -> a 70-byte AoS slot (no padding: fp16
    fields need 2-byte alignment); SoA folds the norm by default whenever norm correction is on."""
    assert main(["show", "--preset", "4bit_nc", "--key-bits", "2", "--value-bits", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("aos-k2nc-v2-hadamard-d128-b16: slot 70 bytes")
    assert _rows(out)["k_data"][4] == "32" and _rows(out)["v_data"][4] == "32"
    assert main(["show", "--preset", "3bit_nc", "--layout", "soa", "--no-norm-correction"]) == 0
    assert capsys.readouterr().out.startswith("soa-k3-v3-hadamard-d128-b16:")  # no nc, so nothing to fold
    assert main(["show", "--preset", "k8v4", "--key-codec", "lloyd_max", "--key-bits", "3", "--norm-correction"]) == 0
    assert capsys.readouterr().out.startswith("aos-k3nc-v4-hadamard-d128-b16: slot 118 bytes")  # = k3v4_nc
    assert main(["build", "--preset", "4bit_nc", "--value-bits", "8", "--target", "sm90", "--out", str(tmp_path)]) == 0
    built = sorted(p.name.rsplit("-", 1)[0] for p in tmp_path.glob("sm90/*/*"))
    assert built == ["cuda-sm90-generic-aos-k4nc-v8-hadamard-d128-b16", "triton-sm90-generic-aos-k4nc-v8-hadamard-d128-b16"]
    capsys.readouterr()
    # out of range, and a width the key codec cannot have: what was given, what is allowed, what to pass
    assert main(["show", "--preset", "4bit_nc", "--value-bits", "5", "--key-bits", "1"]) == 2
    err = capsys.readouterr().err
    assert "value_bits=5" in err and "2, 3, 4, 8" in err and "key_bits=1" in err and "--key-bits 3" in err
    assert main(["show", "--preset", "k8v4", "--key-bits", "3"]) == 2
    assert "--key-codec lloyd_max" in capsys.readouterr().err

def _console_script() -> str:
    """The installed `tqgen` entry point of this interpreter's environment (the venv's in CI)."""
    here = Path(sysconfig.get_path("scripts")) / "tqgen"
    if here.exists():
        return str(here)
    found = shutil.which("tqgen", path=str(Path(sys.executable).parent)) or shutil.which("tqgen")
    assert found, "the tqgen console script is not installed: pip install -e ."
    return found


def test_console_script_runs_show_and_check():
    exe = _console_script()
    r = subprocess.run([exe, "show", "--preset", "4bit_nc", "--layout", "soa", "--head-dim", "128",
                        "--block-size", "16"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert _rows(r.stdout)["k_norm"][1:5] == ["16384", "2", "96", "2"]
    r = subprocess.run([exe, "check", "--preset", "k8v4", "--target", "gfx90a"], capture_output=True, text=True)
    assert r.returncode == 1 and "gfx90a has no fp8" in r.stdout
    r = subprocess.run([exe, "check", "--preset", "nope", "--target", "sm90"], capture_output=True, text=True)
    assert r.returncode != 0 and "k8v4, 4bit_nc, k3v4_nc, 3bit_nc" in r.stderr
