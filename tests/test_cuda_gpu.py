"""Every default-matrix CUDA C++ variant (and the portable fragment path the HIP variants use)
against the reference oracle and the Triton variant of the same spec, on a real GPU.

Store: tqgen.testing.compare_store's rule (V and fp8 bytes identical; Lloyd-Max index flips only
at a midpoint within 1e-5). Decode: max error relative to max |out| ≤ tqgen.testing.DECODE_TOL,
against the reference and against Triton. Dequant (fp32 out): the reference's float32 values
within 1e-5 relative (the only difference is the fp32 summation order of the inverse rotation).
Run on the H200: ``python -m pytest -q -m gpu tests/test_cuda_gpu.py``.
"""

import pytest
import torch

from cpp_checks import (BALANCED_CASES, balanced_lens, check_balanced_decode, check_decode_past_64_splits, check_dequant,
                        check_merge_kernels, check_moving_maximum, check_store_special_values, check_unwritten_slots,
                        check_variant, cuda_runner)
from tqgen.build import default_matrix
from tqgen import LayoutSpec
from tqgen.ir import Backend, Target
from tqgen.lower_cuda import cuda_options, make_variant

pytestmark = pytest.mark.gpu

CUDA = [v for v in default_matrix()[0] if v.backend is Backend.CUDA]
# fp8 keys stored rotated (y = k·Πᵀ; not in the default matrix): built on demand
ROTATED_FP8 = [make_variant(LayoutSpec.from_preset("k8v4", layout=lay, rotation=rot, rotation_seed=seed), "sm90")
               for lay, rot, seed in (("soa", "hadamard", 0), ("aos", "rht", 5))]
# head_dim 64 (the SmolLM2 shape; not in the default matrix): line loads of 6-byte 3-bit key quarters and
# 3-byte value eighths (tq_lds_bytes) run only here
D64 = [make_variant(LayoutSpec.from_preset(p, layout="soa", head_dim=64), "sm90")
       for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc")] + [make_variant(LayoutSpec.from_preset(
           "3bit_nc", layout="aos", head_dim=64), "sm90")]
# head-group rows on SoA records (CudaOptions.head_groups; not default options): a block's warps are neighbour
# KV heads copying their records side by side, each warp its own field runs; 2 and 4 heads a block, fp8 keys
# (two runs), head_dim 64 (funnel-shifted pieces); SHAPES' 3 KV heads leave a group partly idle
GROUPED = [make_variant(s, "sm90", options=cuda_options(s, Target.SM90).with_changes(
    ["head_groups=1", f"decode_warps={w}", f"decode_min_blocks={16 // w}"]))
    for s, w in ((LayoutSpec.from_preset("k3v4_nc", layout="soa"), 2), (LayoutSpec.from_preset("k3v4_nc", layout="soa"), 4),
                 (LayoutSpec.from_preset("k8v4", layout="soa"), 2),
                 (LayoutSpec.from_preset("3bit_nc", layout="soa", head_dim=64), 2))]
SHAPES = [
    ([32768, 1, 0, 4099, 16, 1000, 8191, 17], 8, 4, torch.bfloat16),
    ([int(x) for x in torch.randint(1, 2048, (64,), generator=torch.Generator().manual_seed(1))], 2, 8,
     torch.bfloat16),
    ([513, 4096, 77], 4, 1, torch.float16),
    ([3000, 40], 3, 3, torch.bfloat16),
    ([2500, 700], 2, 12, torch.float16),  # two query octets per KV head, the second one partial
]


def _portable(v):
    return make_variant(v.spec, v.target, "portable")


@pytest.mark.parametrize("variant", CUDA + [_portable(v) for v in CUDA if str(v.target) == "sm90"] + ROTATED_FP8 + D64
                         + GROUPED, ids=lambda v: v.id)


def test_variant_matches_reference(variant):
    """cpp_checks.check_variant: store bytes, decode (with sinks + window) against the reference and the Triton
    decode, dequant in three dtypes."""
    from tqgen.triton_launch import load_triton

    # the shuffle-emulated fragments are slow: a shorter first batch
    check_variant(cuda_runner(), variant, SHAPES, other=load_triton(variant.spec, "sm90"),
                  short_first=[4099, 16, 1000] if variant.kind == "portable" else None)

@pytest.mark.parametrize("variant", [v for v in CUDA if str(v.target) == "sm90"]
                         + [_portable(v) for v in CUDA if str(v.target) == "sm90"] + ROTATED_FP8, ids=lambda v: v.id)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_store_special_values(variant, dtype):
    """NaN, ±inf, huge, saturating, signed-zero and tie inputs store what the reference stores (compare_store's rule),
    from a strided, offset view on the device (cpp_checks.check_store_special_values)."""
    check_store_special_values(cuda_runner(), variant, dtype)

@pytest.mark.parametrize("head_dim", [128, 64])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_merge_kernels_match_the_log_sum_exp(head_dim, dtype):
    """Both decode merges against the merge in float64 (cpp_checks.check_merge_kernels states the tolerance)."""
    check_merge_kernels(cuda_runner(), make_variant(LayoutSpec.from_preset("4bit_nc", layout="soa", head_dim=head_dim),
                                                    "sm90"), dtype)

@pytest.mark.parametrize("variant", [make_variant(LayoutSpec.from_preset(p, layout=lay, head_dim=d), "sm90")
                                     for p, lay, d in (("3bit_nc", "soa", 128), ("k8v4", "aos", 128),
                                                       ("4bit_nc", "soa", 64))],
                         ids=lambda v: v.id)


def test_decode_past_64_splits(variant):
    """More than 64 splits a (sequence, KV head) at a long context: the launcher's own count and 128 / 300 / 512
    (cpp_checks.check_decode_past_64_splits)."""
    check_decode_past_64_splits(cuda_runner(), variant)

@pytest.mark.parametrize("variant", [make_variant(LayoutSpec.from_preset(p, layout=lay, head_dim=d), "sm90")
                                     for p, lay, d in (("3bit_nc", "soa", 128), ("k8v4", "aos", 128),
                                                       ("4bit_nc", "soa", 64), ("k3v4_nc", "aos", 64))],
                         ids=lambda v: v.id)


@pytest.mark.parametrize("ramp", ["rising", "falling"])
def test_decode_follows_a_moving_maximum(variant, ramp):
    """The online softmax's lazy maximum under rising and falling maxima (cpp_checks.check_moving_maximum)."""
    check_moving_maximum(cuda_runner(), variant, ramp)

@pytest.mark.parametrize("variant", [make_variant(LayoutSpec.from_preset(p, layout=lay, head_dim=d), "sm90")
                                     for p, lay, d in (("3bit_nc", "soa", 128), ("4bit_nc", "aos", 128),
                                                       ("k8v4", "aos", 128), ("k3v4_nc", "soa", 64))],
                         ids=lambda v: v.id)


def test_decode_ignores_unwritten_slots(variant):
    """All-ones bytes (NaN norms, scales, fp8 keys) past each length weigh nothing (cpp_checks.check_unwritten_slots)."""
    check_unwritten_slots(cuda_runner(), variant)

@pytest.mark.parametrize("variant", [make_variant(LayoutSpec.from_preset(p, layout=lay, head_dim=d), "sm90")
                                     for p, lay, d in (("3bit_nc", "soa", 128), ("k3v4_nc", "soa", 128),
                                                       ("k8v4", "aos", 128), ("4bit_nc", "aos", 128),
                                                       ("4bit_nc", "soa", 64))] + GROUPED[1:2],
                         ids=lambda v: v.id)


def test_balanced_decode_deals_splits_by_length(variant):
    """A balanced decode on batches of mixed lengths (empty, one-token, mid-tile and long sequences), equal lengths
    (the classic grid taken as is; the warp-a-row merge takes the classic rows without reading the plan up to 256
    sequences, reads it for 260) and one sequence; 64 sequences for the warp-per-row merge; a grid past one wave (the
    blocks past the dealt ones exit); a sliding window with sinks; several split counts
    (cpp_checks.check_balanced_decode: the reference decode, the plan the kernel wrote)."""
    hk = 3 if variant.options.head_groups and variant.options.decode_warps == 4 else 2
    check_balanced_decode(cuda_runner(), variant, [(balanced_lens(name), g, counts)
                                                   for name, g, counts in BALANCED_CASES], hk=hk)

# the rows dequant (CudaOptions.dequant_rows: the store's mapping run backwards, the inverse rotation mostly in
# registers) at 1, 2 and 4 rounds a warp, beside whichever kernel the defaults choose: every preset x layout at head_dim
# 128 and 64, fp8 keys stored rotated (Hadamard, RHT)
DEQUANT_ROWS = [make_variant(s, "sm90", options=cuda_options(s, Target.SM90).with_changes([f"dequant_rows={r}"]))
                for s, r in [(LayoutSpec.from_preset(p, layout=lay, head_dim=d), r)
                             for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc") for lay in ("soa", "aos")
                             for d, r in ((128, 1), (64, 2))]
                + [(LayoutSpec.from_preset("4bit_nc", layout="soa"), 4), (LayoutSpec.from_preset("3bit_nc", layout="aos"), 4)]
                + [(v.spec, 1) for v in ROTATED_FP8]] + [
    # AMD's default since session 37 (one round, 4 logical warps a block) through the HIP fragment path compiled for
    # NVIDIA: the rows kernel as the HIP instances run it, short of the wave64 platform macros
    make_variant(s, "sm90", "portable", options=cuda_options(s, Target.SM90, "portable").with_changes(
        ["dequant_rows=1", "row_warps=4"]))
    for s in [LayoutSpec.from_preset(p, layout=lay, head_dim=d) for p in ("4bit_nc", "k3v4_nc", "3bit_nc")
              for lay in ("soa", "aos") for d in (128, 64)]]


@pytest.mark.parametrize("variant", DEQUANT_ROWS, ids=lambda v: v.id)
def test_dequant_rows_matches_reference(variant):
    """The rows dequant against the reference in fp32 / bf16 / fp16, zeros past each length and up to a longer max_len
    (cpp_checks.check_dequant states the tolerances)."""
    check_dequant(cuda_runner(), variant)
