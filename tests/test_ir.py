"""The layout IR (tqgen/ir.py): frozen hashable specs, presets as data, every reason at once.

DESIGN §2 (presets, defaults), §4 (checks return all reasons), STYLE habits 1, 3, 7.
"""

import dataclasses
import subprocess
import sys

import pytest

import tqgen
from tqgen import KeyCodec, Layout, LayoutSpec, Rotation, SpecError, check_target, parse_target
from tqgen.ir import PRESETS, resolve_preset

PRESET_NAMES = ["k8v4", "4bit_nc", "k3v4_nc", "3bit_nc"]
TARGET_NAMES = ["sm80", "sm86", "sm89", "sm90", "gfx90a", "gfx942", "gfx950", "cpu"]


# ------------------------------------------------------------------------------ light import
def test_import_tqgen_imports_neither_torch_nor_triton():
    code = "import tqgen, sys; assert 'torch' not in sys.modules and 'triton' not in sys.modules"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_layout_derivation_and_codebook_stay_torch_free():
    # the CLI's show path (derive_layout) and the numpy helpers must not drag torch in either
    code = ("import sys, tqgen; tqgen.derive_layout(tqgen.LayoutSpec.from_preset('4bit_nc', layout='soa')).page(8); "
            "tqgen.lloyd_max(128, 4); tqgen.rotation_matrix(128, 'rht', 3); "
            "bad = [m for m in ('torch', 'triton') if m in sys.modules]; assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------------------- frozen, hashable
def test_spec_is_frozen():
    spec = LayoutSpec.from_preset("4bit_nc")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.head_dim = 64
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.layout = Layout.SOA
    assert spec.head_dim == 128 and spec.layout is Layout.AOS


def test_spec_is_hashable_and_equal_by_value():
    a = LayoutSpec.from_preset("4bit_nc", layout="soa")
    b = LayoutSpec(layout="soa", key_bits=4, value_bits=4, norm_correction=True, fold_norm=True)
    c = LayoutSpec.from_preset("4bit_nc", layout="aos")
    assert a == b and hash(a) == hash(b)
    assert a != c
    table = {a: "soa", c: "aos"}
    assert table[b] == "soa" and len({a, b, c}) == 2
    # tokens are parsed into enums, so a string and an enum spelling give the same spec
    assert LayoutSpec(layout=Layout.SOA, rotation=Rotation.RHT) == LayoutSpec(layout="soa", rotation="rht")


# ----------------------------------------------------------------------------------- presets
# DESIGN §2 preset table: (key codec, key bits, value bits, norm correction)
PRESET_TABLE = {
    "k8v4": (KeyCodec.FP8_E4M3FN, 8, 4, False),
    "4bit_nc": (KeyCodec.LLOYD_MAX, 4, 4, True),
    "k3v4_nc": (KeyCodec.LLOYD_MAX, 3, 4, True),
    "3bit_nc": (KeyCodec.LLOYD_MAX, 3, 3, True),
}


def test_presets_are_exactly_the_four_vllm_names():
    assert list(PRESETS) == PRESET_NAMES


@pytest.mark.parametrize("name", PRESET_NAMES)
@pytest.mark.parametrize("layout", ["aos", "soa"])
def test_preset_fields_and_defaults(name, layout):
    codec, kb, vb, nc = PRESET_TABLE[name]
    spec = LayoutSpec.from_preset(name, layout=layout)
    assert (spec.key_codec, spec.key_bits, spec.value_bits, spec.norm_correction) == (codec, kb, vb, nc)
    assert (spec.head_dim, spec.block_size) == (128, 16)
    assert spec.layout is Layout(layout)
    if codec is KeyCodec.LLOYD_MAX:
        assert spec.rotation is Rotation.HADAMARD  # vLLM's rotation (byte compatibility)
        # vLLM defaults: AoS stores the raw norm, SoA folds 1/‖c[idx]‖ into it
        assert spec.fold_norm is (layout == "soa")
    else:
        assert spec.rotation is Rotation.NONE and spec.fold_norm is False  # fp8 keys: no rotation, no norm
    assert spec.preset_name == name


@pytest.mark.parametrize("name", PRESET_NAMES)
@pytest.mark.parametrize("layout", ["aos", "soa"])
def test_turboquant_prefix_is_accepted(name, layout):
    assert LayoutSpec.from_preset("turboquant_" + name, layout=layout) == LayoutSpec.from_preset(name, layout=layout)


def test_from_preset_overrides_win():
    assert LayoutSpec.from_preset("4bit_nc", layout="soa", fold_norm=False).fold_norm is False
    assert LayoutSpec.from_preset("4bit_nc", layout="aos", fold_norm=True).fold_norm is True
    spec = LayoutSpec.from_preset("k8v4", key_codec="fp8_e4m3fnuz")
    assert spec.key_codec is KeyCodec.FP8_E4M3FNUZ and spec.key_bits == 8
    with pytest.raises(SpecError, match="headdim"):  # an unknown override field is named
        LayoutSpec.from_preset("4bit_nc", headdim=64)


# ------------------------------------------------------------------------ every reason at once
def _reason_lines(err: SpecError) -> list[str]:
    return [line for line in str(err).splitlines() if line.strip().startswith("- ")]


def test_invalid_spec_reports_every_reason_with_field_value_and_allowed():
    with pytest.raises(SpecError) as e:
        LayoutSpec(block_size=8, key_bits=5)
    err = e.value
    assert isinstance(err, ValueError)  # callers may catch ValueError
    assert {r.field for r in err.reasons} == {"block_size", "key_bits"} and len(err.reasons) == 2
    lines = _reason_lines(err)
    assert len(lines) == 2, str(err)
    bs = next(line for line in lines if "block_size" in line)
    kb = next(line for line in lines if "key_bits" in line)
    # each reason names the field, the given value and the allowed values
    assert "block_size=8" in bs and "16, 32, 64, 128" in bs
    assert "key_bits=5" in kb and "2, 3, 4" in kb
    assert "Try --block-size 16" in bs  # and what to try


def test_three_reasons_including_values():
    with pytest.raises(SpecError) as e:
        LayoutSpec(block_size=8, key_bits=5, value_bits=7)
    msg = str(e.value)
    assert len(e.value.reasons) == 3 and "3 problem(s)" in msg
    for want in ("block_size=8", "key_bits=5", "value_bits=7", "2, 3, 4, 8"):
        assert want in msg, msg


def test_an_unknown_token_does_not_hide_the_other_reasons():
    # regression: a layout that failed to parse used to suppress the field checks
    with pytest.raises(SpecError) as e:
        LayoutSpec(layout="csr", block_size=8, key_bits=5)
    assert {r.field for r in e.value.reasons} == {"layout", "block_size", "key_bits"}
    assert "aos, soa" in str(e.value)
    with pytest.raises(SpecError) as e:
        LayoutSpec.from_preset("4bit_nc", layout="csr", block_size=8)
    assert {r.field for r in e.value.reasons} == {"layout", "block_size"}


def test_fp8_spec_rules_list_all_reasons():
    with pytest.raises(SpecError) as e:
        LayoutSpec(key_codec="fp8_e4m3fn", key_bits=4, rotation="hadamard", norm_correction=True, fold_norm=True)
    fields = sorted(r.field for r in e.value.reasons)
    assert fields == ["fold_norm", "key_bits", "norm_correction"], str(e.value)


def test_fp8_keys_may_be_rotated():
    """fp8 keys are cast as they are by default (vLLM's k8v4); rotation='hadamard' / 'rht' stores the
    fp8 of y = k·Πᵀ instead (eval/results/smollm2-k8v4-rotation.md), a different token."""
    plain = LayoutSpec.from_preset("k8v4", layout="soa")
    rot = LayoutSpec.from_preset("k8v4", layout="soa", rotation="hadamard")
    assert plain.rotation is Rotation.NONE and rot.rotation is Rotation.HADAMARD
    assert plain.token != rot.token and "hadamard" in rot.token


def test_lloyd_max_keys_must_be_rotated():
    with pytest.raises(SpecError, match="rotation='none'") as e:
        LayoutSpec(rotation="none")
    assert "hadamard, rht, orthogonal" in str(e.value)


def test_fold_requires_norm_correction():
    with pytest.raises(SpecError, match="fold_norm=True") as e:
        LayoutSpec(norm_correction=False, fold_norm=True)
    assert "norm_correction=True" in str(e.value)


# ----------------------------------------------------------------------------- unknown names
def test_unknown_preset_lists_valid_names():
    with pytest.raises(SpecError) as e:
        LayoutSpec.from_preset("5bit_nc")
    msg = str(e.value)
    assert "preset='5bit_nc'" in msg
    for name in PRESET_NAMES:
        assert name in msg
    assert "turboquant_" in msg  # says the prefix is optional


def test_unknown_target_lists_valid_names():
    with pytest.raises(SpecError) as e:
        parse_target("sm100")
    msg = str(e.value)
    assert "target='sm100'" in msg
    for name in TARGET_NAMES:
        assert name in msg
    assert [str(parse_target(t)) for t in TARGET_NAMES] == TARGET_NAMES


@pytest.mark.parametrize("given, want", [("SOA", "soa"), ("so a", "soa"), (" aos", "aos")])
def test_a_misspelt_token_names_the_close_value(given, want):
    with pytest.raises(SpecError) as e:
        Layout.parse(given, "layout")
    assert f"did you mean {want!r}?" in str(e.value) and "invalid TurboQuant spec" in str(e.value)


@pytest.mark.parametrize("given, want", [("sm_90", "sm90"), ("SM90", "sm90"), ("gfx94", "gfx942"), ("sm100", None),
                                         ("gfx1100", None)])
def test_an_unknown_target_suggests_only_a_misspelling(given, want):
    """A close spelling is named; another GPU (Blackwell sm100, RDNA gfx1100) gets no look-alike suggested."""
    with pytest.raises(SpecError) as e:
        parse_target(given)
    msg = str(e.value)
    assert msg.startswith("unknown target") and f"target={given!r}" in msg
    if want:
        assert f"did you mean {want!r}?" in msg
    else:
        assert "did you mean" not in msg and "e.g. target='sm80'" in msg


@pytest.mark.parametrize("given, want", [("4bit", "4bit_nc"), ("turboquant_3bit", "3bit_nc"), ("k3v4", "k3v4_nc"),
                                         ("K8", "k8v4"), ("4bit_c", "4bit_nc"), ("2bit", None), ("k", None)])
def test_an_unknown_preset_names_the_one_it_shortens(given, want):
    """A shortened preset name that begins exactly one preset, or a misspelling, is named with the prefix hint; a
    name that begins several ('k': k8v4, k3v4_nc) or none gets the hint alone."""
    with pytest.raises(SpecError) as e:
        resolve_preset(given)
    msg = str(e.value)
    assert msg.startswith("unknown preset") and f"preset={given!r}" in msg and "prefix is optional" in msg
    assert (f"did you mean {want!r}?" in msg) if want else ("did you mean" not in msg)


def test_target_format_check_returns_reasons():
    k8 = LayoutSpec.from_preset("k8v4")  # fp8_e4m3fn keys
    reasons = check_target(k8, "gfx90a")
    assert len(reasons) == 1 and reasons[0].field == "key_codec" and "gfx90a has no fp8" in str(reasons[0])
    assert "use key_codec=fp8_e4m3fnuz" in str(check_target(k8, "gfx942")[0])  # what to try
    assert check_target(k8, "sm90") == [] and check_target(LayoutSpec.from_preset("4bit_nc"), "gfx90a") == []


# --------------------------------------------------------------------- non-power-of-two D
@pytest.mark.parametrize("rotation", ["hadamard", "rht"])
def test_hadamard_at_head_dim_96_is_refused_with_a_hint(rotation):
    with pytest.raises(SpecError) as e:
        LayoutSpec.from_preset("4bit_nc", head_dim=96, rotation=rotation)
    (reason,) = e.value.reasons
    assert reason.field == "rotation" and reason.given == rotation
    msg = str(e.value)
    assert "power of two" in msg and "given 96" in msg and "rotation='orthogonal'" in msg


def test_head_dim_96_default_preset_is_refused_and_orthogonal_accepted():
    with pytest.raises(SpecError, match="orthogonal"):
        LayoutSpec.from_preset("k3v4_nc", head_dim=96)  # the preset's default rotation is hadamard
    spec = LayoutSpec.from_preset("k3v4_nc", head_dim=96, rotation="orthogonal")
    assert spec.rotation is Rotation.ORTHOGONAL and spec.head_dim == 96
    assert LayoutSpec.from_preset("k8v4", head_dim=96).head_dim == 96  # fp8 keys are not rotated


def test_head_dim_must_fill_whole_bytes():
    with pytest.raises(SpecError, match="head_dim=100"):
        LayoutSpec(head_dim=100, rotation="orthogonal")


def test_token_has_the_fixed_field_order():
    assert LayoutSpec.from_preset("4bit_nc", layout="soa").token == "soa-k4nc-v4-fold-hadamard-d128-b16"
    assert LayoutSpec.from_preset("k8v4").token == "aos-kfp8e4m3fn-v4-d128-b16"
    assert tqgen.LayoutSpec.from_preset("3bit_nc", rotation="rht", rotation_seed=7, block_size=64).token \
        == "aos-k3nc-v3-rht7-d128-b64"
