"""Every default-matrix NVIDIA Triton variant against the reference oracle on a real GPU.

Real sizes: batches up to 64, sequences up to 32K tokens, shuffled block tables, padding slots.
Store: tqgen.testing.compare_store's rule (V and fp8 bytes identical; Lloyd-Max index flips only
at a midpoint within 1e-5). Decode: max error relative to max |out| ≤ tqgen.testing.DECODE_TOL.
Run on the H200: ``python -m pytest -q -m gpu tests/test_triton_gpu.py``.
"""

import pytest
import torch

from cpp_checks import NON_PRESET_WIDTHS
from tqgen import LayoutSpec
from tqgen import reference as ref
from tqgen.build import default_matrix
from tqgen.ir import Vendor
from tqgen.testing import Case, check_decode, compare_store, rel_err, special_store_diff, width_spec
from tqgen.lower_triton import make_variant
from tqgen.triton_launch import load_variant

pytestmark = pytest.mark.gpu

NVIDIA = [v for v in default_matrix()[0] if v.target.info.vendor is Vendor.NVIDIA and str(v.backend) == "triton"]
# (seq_lens, num_kv_heads, gqa, dtype): a long mixed batch, a wide batch, a GQA-1 fp16 batch
SHAPES = [
    ([32768, 1, 0, 4099, 16, 1000, 8191, 17], 8, 4, torch.bfloat16),
    ([int(x) for x in torch.randint(1, 2048, (64,), generator=torch.Generator().manual_seed(1))], 2, 8,
     torch.bfloat16),
    ([513, 4096, 77], 4, 1, torch.float16),
]


# widths no preset has (the C++ tests' first five): the runtime's fallback behind the C++ kernels
NON_PRESET = [make_variant(width_spec(*w), "sm90") for w in NON_PRESET_WIDTHS[:5]]
# head_dims no power of two (Phi-3's 96, Phi-2's 80: Triton only, padded to the next power of two) with the orthogonal
# rotation they take (bf16x6 dots on the GPU), every preset x layout at 96; fp8 keys unrotated; the dense rotation at 128
PADDED = [make_variant(LayoutSpec.from_preset(p, layout=lay, head_dim=96, rotation="orthogonal", rotation_seed=3), "sm90")
          for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc") for lay in ("soa", "aos")] + [
    make_variant(LayoutSpec.from_preset("k8v4", layout="aos", head_dim=80), "sm90"),
    make_variant(LayoutSpec.from_preset("3bit_nc", layout="soa", head_dim=80, rotation="orthogonal"), "sm90"),
    make_variant(LayoutSpec.from_preset("4bit_nc", layout="aos", rotation="orthogonal"), "sm90"),
    make_variant(LayoutSpec.from_preset("k3v4_nc", layout="soa", rotation="orthogonal"), "sm90")]


@pytest.mark.parametrize("variant", NVIDIA + NON_PRESET + PADDED, ids=lambda v: v.id)
def test_variant_matches_reference(variant):
    kern = load_variant(variant)
    spec = variant.spec
    dev = torch.device("cuda")
    for i, (lens, hk, g, dt) in enumerate(SHAPES):
        case = Case(spec, lens, hk, g, dtype=dt, seed=i).build(dev)
        got = ref.allocate(spec, case["num_blocks"], hk, dev)
        want = ref.allocate(spec, case["num_blocks"], hk, dev)
        kern.store(case["key"], case["value"], got, case["slot_mapping"])
        n = case["key"].shape[0]
        for s in range(0, n, 16384):  # the reference expands bits to int64: store in chunks
            sl = slice(s, s + 16384)
            ref.store(spec, case["key"][sl], case["value"][sl], want, case["slot_mapping"][sl])
        diff = compare_store(spec, got, want, case["key"], case["slot_mapping"])
        assert diff.ok, diff.summary()
        # decode and dequant read the reference's bytes, so only the attention math is compared; the classic splits
        # and (where the variant has them) the length-balanced ones
        for bal in (False, True) if variant.options.balanced_decode else (False,):
            check_decode(kern, spec, case, want, 1000, what=f"shape {i} balanced={bal}", balanced=bal)
        if i == 2:  # dequant on the small shape (reference dequant materialises everything)
            k, v = kern.dequant(want, case["block_table"], case["seq_lens"], dtype=torch.float32)
            ek, ev = ref.dequant(spec, want, case["block_table"], case["seq_lens"])
            assert rel_err(k, ek) < 1e-5 and rel_err(v, ev) < 1e-6


@pytest.mark.parametrize("variant", [v for v in NVIDIA if str(v.target) == "sm90"] + PADDED[2:4] + PADDED[:1],
                         ids=lambda v: v.id)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_store_special_values(variant, dtype):
    """NaN, ±inf, huge, saturating (fp8 keys by the hardware's satfinite conversion alone), signed-zero and tie inputs
    store what the reference stores (compare_store's rule); the CPU interpreter runs the same rows
    (tests/test_triton_interp.py), this checks the GPU's conversions and fmas."""
    kern = load_variant(variant)
    diff = special_store_diff(kern.store, variant.spec, dtype, "cuda")
    assert diff.ok, diff.summary()


EDGE = [(p, lay, d) for d in (64, 256) for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc") for lay in ("soa", "aos")]


@pytest.mark.parametrize("preset,layout,head_dim", EDGE, ids=lambda x: str(x))
def test_decode_at_other_head_dims(preset, layout, head_dim):
    """The sm90 Triton decode at head_dim 64 (byte loads) and 256 (SoA 4-bit fields as int32 words in eight parts, 4
    warps x 32 tokens; Triton-only, the C++ decode stops at 128) against the reference, with sinks and a window, on a
    mixed batch; DECODE_TOL as above."""
    from tqgen.build import preset_spec_for_target
    from tqgen.ir import Target
    from tqgen.lower_triton import make_variant

    spec = preset_spec_for_target(preset, Target.SM90, layout=layout, head_dim=head_dim)
    kern = load_variant(make_variant(spec, "sm90"))
    dev = torch.device("cuda")
    case = Case(spec, [5000, 1, 333, 2048], 3, 3, dtype=torch.bfloat16, seed=3).build(dev)
    cache = ref.allocate(spec, case["num_blocks"], 3, dev)
    ref.store(spec, case["key"], case["value"], cache, case["slot_mapping"])
    check_decode(kern, spec, case, cache, 700, what=f"{preset} {layout} D{head_dim}")


@pytest.mark.parametrize("preset,layout", [("4bit_nc", "soa"), ("3bit_nc", "aos")])
def test_split_count_is_a_runtime_argument(preset, layout):
    """The Triton decode's split count: 64 one-warp programs an SM on sm90 (B=32 L=32K Hk 8 on the H200's 132 SMs:
    33 splits, B=128 L=8K: 9, B=1 L=4K: 64), passed at run time, so a decode at another count (7) reuses the compiled
    split kernel (no new specialisation; the merge compiles once per power-of-two bucket of counts) and matches the
    reference."""
    from tqgen.build import preset_spec_for_target
    from tqgen.ir import Target
    from tqgen.triton_launch import load_triton
    dev = torch.device("cuda")
    spec = preset_spec_for_target(preset, Target.SM90, layout=layout)
    kern = load_triton(spec, "sm90")
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    for b, L, want in ((32, 32768, -(-64 * sms // 256)), (128, 8192, -(-64 * sms // 1024)), (1, 4096, 64)):
        assert kern.num_splits_for(b, 8, L, dev) == min(want, 64), (b, L)
    case = Case(spec, [4099, 16, 1000], 8, 4, dtype=torch.bfloat16, seed=7).build(dev)
    cache = ref.allocate(spec, case["num_blocks"], 8, dev)
    kern.store(case["key"], case["value"], cache, case["slot_mapping"])
    check_decode(kern, spec, case, cache, 1000, what=f"{preset} {layout} own splits")
    compiled = len(kern.module.tq_decode_split.device_caches[dev.index][0])
    check_decode(kern, spec, case, cache, 1000, num_splits=7, what=f"{preset} {layout} 7 splits")
    assert len(kern.module.tq_decode_split.device_caches[dev.index][0]) == compiled


@pytest.mark.parametrize("preset,layout", [("4bit_nc", "soa"), ("k8v4", "aos"), ("3bit_nc", "aos")])
def test_balanced_decode_replays_in_a_cuda_graph(preset, layout):
    """The balanced Triton decode deals its programs on the device from seq_lens, so one captured call serves any
    lengths: a CUDA graph captured on one mix of lengths, replayed after the lengths tensor is rewritten in place
    (equal lengths, one long among short ones, an empty sequence), matches the reference within DECODE_TOL and the
    eager call on the same inputs exactly (the kernels are deterministic: no atomics)."""
    from tqgen.build import preset_spec_for_target
    from tqgen.ir import Target
    from tqgen.testing import DECODE_TOL
    from tqgen.triton_launch import load_triton
    dev = torch.device("cuda")
    spec = preset_spec_for_target(preset, Target.SM90, layout=layout)
    kern = load_triton(spec, "sm90")
    case = Case(spec, [6000, 6000, 6000, 6000], 8, 4, dtype=torch.bfloat16, seed=11).build(dev)
    cache = ref.allocate(spec, case["num_blocks"], 8, dev)
    ref.store(spec, case["key"], case["value"], cache, case["slot_mapping"])
    q, bt = case["query"], case["block_table"]
    sl = case["seq_lens"].clone()
    splits = kern.num_splits_for(4, 8, 6000, dev)
    ws = kern.workspace(4, q.shape[1], splits, dev)
    out = torch.empty_like(q)
    run = lambda: kern.decode(q, cache, bt, sl, num_splits=splits, workspace=ws, out=out, balanced=True,  # noqa: E731
                              check=False)  # the argument checks read lengths on the host: not while capturing
    st = torch.cuda.Stream(dev)
    st.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(st):
        run()
    torch.cuda.current_stream(dev).wait_stream(st)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        run()
    for lens in ([6000, 6000, 6000, 6000], [6000, 40, 17, 300], [1, 0, 5999, 64], [2048, 2048, 2048, 1]):
        sl.copy_(torch.tensor(lens, dtype=torch.int32))
        g.replay()
        torch.cuda.synchronize(dev)
        got = out.clone()
        eager = kern.decode(q, cache, bt, sl, num_splits=splits, balanced=True)
        assert torch.equal(got, eager), lens
        err = rel_err(got, ref.decode(spec, q, cache, bt, sl))
        assert err <= DECODE_TOL[q.dtype], (lens, err)
