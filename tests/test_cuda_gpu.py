"""Every default-matrix CUDA C++ variant (and the portable fragment path the HIP variants use)
against the reference oracle and the Triton variant of the same spec, on a real GPU.

Store: tqgen.testing.compare_store's rule (V and fp8 bytes identical; Lloyd-Max index flips only
at a midpoint within 1e-5). Decode: max error relative to max |out| ≤ tqgen.testing.DECODE_TOL,
against the reference and against Triton. Dequant (fp32 out): the reference's float32 values
within 1e-5 relative (the only difference is the fp32 summation order of the inverse rotation).
The checks and variant lists live in tests/cpp_checks.py (the CPU simulator runs them too: tests/test_cpu_sim.py).
Run on the H200: ``python -m pytest -q -m gpu tests/test_cuda_gpu.py``.
"""

import pytest
import torch

from cpp_checks import (BALANCED, BALANCED_CASES, BLOCKS, CUDA, D64, D80, D80_STORE, D96, D256, DEQUANT_ROWS, DQ_ROUNDS,
                        GROUPED, MOVING_MAX, NON_PRESET, PAST_64, PORTABLE, ROTATED_FP8, ROUNDS, SM90, UNWRITTEN, balanced_lens, check_balanced_decode,
                        check_decode_past_64_splits, check_dequant, check_merge_kernels, check_moving_maximum,
                        check_store_rows, check_store_special_values, rounds_id, check_unwritten_slots, check_variant, cuda_runner)
from tqgen import LayoutSpec
from tqgen.lower_cuda import make_variant

pytestmark = pytest.mark.gpu

SHAPES = [
    ([32768, 1, 0, 4099, 16, 1000, 8191, 17], 8, 4, torch.bfloat16),
    ([int(x) for x in torch.randint(1, 2048, (64,), generator=torch.Generator().manual_seed(1))], 2, 8,
     torch.bfloat16),
    ([513, 4096, 77], 4, 1, torch.float16),
    ([3000, 40], 3, 3, torch.bfloat16),
    ([2500, 700], 2, 12, torch.float16),  # two query octets per KV head, the second one partial
]


@pytest.mark.parametrize("variant", CUDA + PORTABLE + ROTATED_FP8 + D64 + GROUPED + NON_PRESET + BLOCKS + D256 + D96 + D80,
                         ids=lambda v: v.id)
def test_variant_matches_reference(variant):
    """cpp_checks.check_variant: store bytes, decode (with sinks + window) against the reference and the Triton
    decode, dequant in three dtypes."""
    from tqgen.triton_launch import load_triton

    # the shuffle-emulated fragments are slow: a shorter first batch
    check_variant(cuda_runner(), variant, SHAPES, other=load_triton(variant.spec, "sm90"),
                  short_first=[4099, 16, 1000] if variant.kind == "portable" else None)


@pytest.mark.parametrize("variant", SM90 + PORTABLE + ROTATED_FP8 + D80_STORE + ROUNDS, ids=rounds_id)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_store_special_values(variant, dtype):
    """NaN, ±inf, huge, saturating, signed-zero and tie inputs store what the reference stores (compare_store's rule),
    from a strided, offset view on the device (cpp_checks.check_store_special_values)."""
    check_store_special_values(cuda_runner(), variant, dtype)


@pytest.mark.parametrize("variant", ROUNDS, ids=rounds_id)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_store_rounds_match_reference(variant, dtype):
    """The dense store's rounds (CudaOptions.store_rounds): several blocks of rounds, the last partial, a padding slot
    (cpp_checks.check_store_rows)."""
    check_store_rows(cuda_runner(), variant, dtype, tokens=700, heads=8)


@pytest.mark.parametrize("head_dim", [128, 64, 256, 96, 80])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_merge_kernels_match_the_log_sum_exp(head_dim, dtype):
    """Both decode merges against the merge in float64 (cpp_checks.check_merge_kernels states the tolerance)."""
    from tqgen.build import rotation_for  # head_dim 96: the orthogonal rotation
    check_merge_kernels(cuda_runner(), make_variant(LayoutSpec.from_preset("4bit_nc", layout="soa", head_dim=head_dim,
                                                                           **rotation_for(head_dim, "4bit_nc")),
                                                    "sm90"), dtype)


@pytest.mark.parametrize("variant", PAST_64, ids=lambda v: v.id)
def test_decode_past_64_splits(variant):
    """More than 64 splits a (sequence, KV head) at a long context: the launcher's own count and 128 / 300 / 512
    (cpp_checks.check_decode_past_64_splits)."""
    check_decode_past_64_splits(cuda_runner(), variant)


@pytest.mark.parametrize("variant", MOVING_MAX, ids=lambda v: v.id)
@pytest.mark.parametrize("ramp", ["rising", "falling"])
def test_decode_follows_a_moving_maximum(variant, ramp):
    """The online softmax's lazy maximum under rising and falling maxima (cpp_checks.check_moving_maximum)."""
    check_moving_maximum(cuda_runner(), variant, ramp)


@pytest.mark.parametrize("variant", UNWRITTEN, ids=lambda v: v.id)
def test_decode_ignores_unwritten_slots(variant):
    """All-ones bytes (NaN norms, scales, fp8 keys) past each length weigh nothing (cpp_checks.check_unwritten_slots)."""
    check_unwritten_slots(cuda_runner(), variant)


@pytest.mark.parametrize("variant", BALANCED, ids=lambda v: v.id)
def test_balanced_decode_deals_splits_by_length(variant):
    """A balanced decode on batches of mixed lengths (empty, one-token, mid-tile and long sequences), equal lengths
    (the classic grid taken as is; the warp-a-row merge takes the classic rows without reading the plan up to 256
    sequences, reads it for 260) and one sequence; 64 sequences for the warp-per-row merge; a grid past one wave (the
    blocks past the dealt ones exit); a sliding window with sinks; several split counts
    (cpp_checks.check_balanced_decode: the reference decode, the plan the kernel wrote)."""
    hk = 3 if variant.options.head_groups and variant.options.decode_warps == 4 else 2
    check_balanced_decode(cuda_runner(), variant, [(balanced_lens(name), g, counts)
                                                   for name, g, counts in BALANCED_CASES], hk=hk)


@pytest.mark.parametrize("variant", DEQUANT_ROWS + DQ_ROUNDS, ids=rounds_id)
def test_dequant_rows_matches_reference(variant):
    """The rows dequant against the reference in fp32 / bf16 / fp16, zeros past each length and up to a longer max_len
    (cpp_checks.check_dequant states the tolerances); the dense rotation's rounds (DQ_ROUNDS) too."""
    check_dequant(cuda_runner(), variant)
