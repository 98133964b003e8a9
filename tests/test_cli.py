"""CLI: show, check (eligibility), unknown names."""

import subprocess

from tqgen.cli import main


def test_show_soa_table(capsys):
    assert main(["show", "--preset", "4bit_nc", "--layout", "soa", "--head-dim", "128", "--block-size", "16"]) == 0
    out = capsys.readouterr().out
    assert "field" in out and "offset" in out and "token_stride" in out and "bytes" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split() and line.split()[0] in
            ("k_data", "k_norm", "v_data", "v_scale", "v_zero")}
    # 8 kv heads: data region 16*8*128 = 16384 bytes, then fp16 [H][3][16]
    assert rows["k_data"][1:5] == ["0", "1024", "128", "64"]
    assert rows["v_data"][1:5] == ["64", "1024", "128", "64"]
    assert rows["k_norm"][1:5] == ["16384", "2", "96", "2"]
    assert rows["v_zero"][1] == str(16384 + 2 * 32)
    assert "slot 134 bytes" in out


def test_show_aos_offsets(capsys):
    assert main(["show", "--preset", "k3v4_nc"]) == 0
    assert "k_data 0-47 | k_norm 48-49 | v_data 50-113 | v_scale 114-115 | v_zero 116-117" in capsys.readouterr().out


def test_check_eligibility_exit_codes(capsys):
    assert main(["check", "--preset", "k8v4", "--target", "gfx90a", "--key-codec", "fp8_e4m3fn"]) == 1
    out = capsys.readouterr().out
    assert "not supported" in out and "gfx90a has no fp8" in out
    assert main(["check", "--preset", "4bit_nc", "--target", "sm90"]) == 0
    assert "triton: eligible" in capsys.readouterr().out
    assert main(["check", "--preset", "4bit_nc", "--layout", "soa", "--target", "gfx950"]) == 0
    assert "triton:gfx950_mfma: eligible" in capsys.readouterr().out
    assert main(["check", "--preset", "k8v4", "--target", "gfx942"]) == 0  # preset fp8 = the target's fnuz
    assert main(["check", "--preset", "4bit_nc", "--head-dim", "96", "--rotation", "orthogonal", "--target", "sm90"]) == 1
    assert "reference: eligible" in capsys.readouterr().out


def test_unknown_names_are_listed(capsys):
    assert main(["show", "--preset", "bogus"]) == 2
    assert "k8v4, 4bit_nc, k3v4_nc, 3bit_nc" in capsys.readouterr().err
    assert main(["check", "--preset", "4bit_nc", "--target", "sm100"]) == 2
    assert "gfx950" in capsys.readouterr().err


def test_console_script():
    r = subprocess.run(["tqgen", "show", "--preset", "3bit_nc"], capture_output=True, text=True)
    assert r.returncode == 0 and "slot 102 bytes" in r.stdout
