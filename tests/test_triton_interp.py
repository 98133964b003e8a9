"""Triton kernels in the CPU interpreter (TRITON_INTERPRET=1) against the reference oracle.

Store: tqgen.testing.compare_store (V and fp8 bytes identical; a Lloyd-Max index may differ only
where the rotated coordinate lies within 1e-5 of a midpoint). Decode: max error relative to
max |out| within tqgen.testing.DECODE_TOL for the query dtype (fp16/bf16 dot inputs and output).
Dequant (float32 out): K within 1e-5 relative (fast Walsh-Hadamard vs GEMM summation order), V exact
up to one fp32 rounding (1e-6).
"""

import pytest
import torch

from tqgen import LayoutSpec
from tqgen import reference as ref
from tqgen.testing import DECODE_TOL, Case, check_decode, compare_store, rel_err, special_store_diff
from tqgen.triton_launch import bf16_parts, load_triton

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="interpreter tests run where there is no GPU")

PRESETS = ["k8v4", "4bit_nc", "k3v4_nc", "3bit_nc"]
CASES = [dict(preset=p, layout=l) for p in PRESETS for l in ("aos", "soa")] + [
    dict(preset="4bit_nc", layout="aos", fold_norm=True),
    dict(preset="k3v4_nc", layout="soa", fold_norm=False),
    dict(preset="4bit_nc", layout="soa", rotation="rht", rotation_seed=7),
    dict(preset="3bit_nc", layout="aos", block_size=64),
    dict(preset="k8v4", layout="soa", block_size=64),
    dict(preset="k8v4", layout="soa", rotation="hadamard"),  # fp8 of the rotated key
    dict(preset="k8v4", layout="aos", rotation="rht", rotation_seed=3, head_dim=64),
    dict(preset="4bit_nc", layout="soa", head_dim=64, gqa=1),
    dict(preset="k3v4_nc", layout="aos", head_dim=64, dtype=torch.float16),
    dict(preset="k8v4", layout="aos", key_codec="fp8_e4m3fnuz", gqa=1),
    dict(preset="k8v4", layout="soa", key_codec="fp8_e4b15", scale_keys=0.5),
    dict(preset="4bit_nc", layout="aos", key_bits=2, value_bits=2),
    dict(preset="4bit_nc", layout="soa", value_bits=8),
    dict(preset="4bit_nc", layout="soa", head_dim=256, block_size=32),
    dict(preset="k3v4_nc", layout="aos", block_size=128, gqa=16),
    # head_dim no power of two (Phi-3's 96, Phi-2's 80): computed padded to the next one, masked; the orthogonal
    # rotation (the one such heads take) as an IEEE fp32 dot with the zero-padded matrix, also at a power of two
    dict(preset="4bit_nc", layout="aos", head_dim=96, rotation="orthogonal", rotation_seed=5),  # norm renormalised
    dict(preset="4bit_nc", layout="soa", head_dim=96, rotation="orthogonal", rotation_seed=5, dtype=torch.float16),
    dict(preset="k3v4_nc", layout="soa", head_dim=80, rotation="orthogonal", rotation_seed=2, gqa=1),
    dict(preset="3bit_nc", layout="aos", head_dim=80, rotation="orthogonal", block_size=32),
    dict(preset="k8v4", layout="aos", head_dim=96),  # fp8 keys as they are: the query padded in the split kernel
    dict(preset="k8v4", layout="soa", head_dim=48, rotation="orthogonal", rotation_seed=1),
    dict(preset="4bit_nc", layout="aos", head_dim=96, rotation="orthogonal", key_bits=2, value_bits=8),
    dict(preset="4bit_nc", layout="soa", rotation="orthogonal", rotation_seed=9),  # the dense rotation at D=128
]


def _id(c):
    return "-".join(f"{k}={v}" if k not in ("preset", "layout") else str(v) for k, v in c.items()).replace("torch.", "")


def make(c):
    c = dict(c)
    gqa = c.pop("gqa", 4)
    dtype = c.pop("dtype", torch.bfloat16)
    scale_keys = c.pop("scale_keys", 1.0)
    preset, layout = c.pop("preset"), c.pop("layout")
    head_dim, block_size = c.pop("head_dim", 128), c.pop("block_size", 16)
    spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=head_dim, block_size=block_size, **c)
    return spec, gqa, dtype, scale_keys


@pytest.mark.parametrize("c", CASES, ids=_id)
def test_store_decode_dequant_match_reference(c):
    spec, gqa, dtype, scale_keys = make(c)
    case = Case(spec, [37, 0, 70, 1], 2, gqa, dtype=dtype, seed=3).build("cpu")
    key = (case["key"].float() * scale_keys).to(dtype)  # e4b15 holds |k| ≤ 1.75: keep keys in range
    kern = load_triton(spec, "cpu")
    got = ref.allocate(spec, case["num_blocks"], 2)
    want = ref.allocate(spec, case["num_blocks"], 2)
    kern.store(key, case["value"], got, case["slot_mapping"])
    ref.store(spec, key, case["value"], want, case["slot_mapping"])
    diff = compare_store(spec, got, want, key, case["slot_mapping"])
    assert diff.ok, diff.summary()
    assert diff.identical_slots >= diff.slots - 2, diff.summary()  # flips are rare: at most a couple here
    bt, sl = case["block_table"], case["seq_lens"]
    for bal in (False, True):  # the classic splits and the length-balanced deal
        for out in check_decode(kern, spec, case, want, 20, num_splits=3, what=f"{_id(c)} balanced={bal}", balanced=bal):
            assert out.dtype == dtype and torch.equal(out[1], torch.zeros_like(out[1]))  # seq_len 0 → zeros
    k, v = kern.dequant(want, bt, sl, dtype=torch.float32)
    ek, ev = ref.dequant(spec, want, bt, sl)
    assert rel_err(k, ek) < 1e-5 and rel_err(v, ev) < 1e-6


@pytest.mark.parametrize("preset,head_dim", [(p, 128) for p in PRESETS] + [("k3v4_nc", 96)])
def test_layout_equivalence_aos_soa_decode(preset, head_dim):
    """Same inputs, same fold setting: AoS and SoA caches decode to the same outputs (also at a padded head_dim)."""
    outs = []
    rot = {} if head_dim == 128 else dict(rotation="orthogonal")
    for layout in ("aos", "soa"):
        spec = LayoutSpec.from_preset(preset, layout=layout, fold_norm=preset != "k8v4" and True or False,
                                      head_dim=head_dim, **rot)
        case = Case(spec, [50, 19], 2, 4, seed=11).build("cpu")
        kern = load_triton(spec, "cpu")
        cache = ref.allocate(spec, case["num_blocks"], 2)
        kern.store(case["key"], case["value"], cache, case["slot_mapping"])
        outs.append(kern.decode(case["query"], cache, case["block_table"], case["seq_lens"], num_splits=2))
    # identical bytes per slot in both layouts and the same kernel math: equal up to tile-order rounding
    assert rel_err(outs[0], outs[1]) <= DECODE_TOL[torch.bfloat16] / 8


def test_fp8_keys_with_queries_past_fp16_range():
    """fp8 keys meet the query in an fp16 dot: each query row is first scaled by a power of two into
    [2^13, 2^14) (exact), so a query of 1e6 (1.3e5 after the softmax scale: past fp16's 65504, inf without
    the scaling) and one of 1e-6 (fp16 subnormal or zero without it) decode like the reference."""
    spec = LayoutSpec.from_preset("k8v4", layout="soa")
    case = Case(spec, [40, 23], 2, 4, seed=13).build("cpu")
    kern = load_triton(spec, "cpu")
    cache = ref.allocate(spec, case["num_blocks"], 2)
    kern.store(case["key"], case["value"], cache, case["slot_mapping"])
    q = case["query"].float()
    q[:, 0::2] *= 1e6
    q[:, 1::2] *= 1e-6
    q = q.to(torch.bfloat16)
    out = kern.decode(q, cache, case["block_table"], case["seq_lens"], num_splits=2)
    exp = ref.decode(spec, q, cache, case["block_table"], case["seq_lens"])
    assert torch.isfinite(out).all()
    assert rel_err(out, exp) <= DECODE_TOL[torch.bfloat16]


def test_gfx950_special_runs_in_interpreter():
    spec = LayoutSpec.from_preset("4bit_nc", layout="soa")
    kern = load_triton(spec, "gfx950", "gfx950_mfma")
    case = Case(spec, [64, 33], 1, 8, seed=5).build("cpu")
    cache = ref.allocate(spec, case["num_blocks"], 1)
    kern.store(case["key"], case["value"], cache, case["slot_mapping"])
    out = kern.decode(case["query"], cache, case["block_table"], case["seq_lens"])
    exp = ref.decode(spec, case["query"], cache, case["block_table"], case["seq_lens"])
    assert rel_err(out, exp) <= DECODE_TOL[torch.bfloat16]
    with pytest.raises(ValueError, match="sliding_window"):  # compiled out: its rules refuse it
        kern.decode(case["query"], cache, case["block_table"], case["seq_lens"], sliding_window=8)


SPECIAL_CASES = [dict(preset=p, layout=l) for p in PRESETS for l in ("aos", "soa")] + [
    dict(preset="k8v4", layout="soa", rotation="rht", rotation_seed=3),
    dict(preset="4bit_nc", layout="aos", fold_norm=True, head_dim=64),
    dict(preset="4bit_nc", layout="soa", head_dim=96, rotation="orthogonal"),  # the padded head, the dense rotation
    dict(preset="k8v4", layout="aos", head_dim=80, rotation="orthogonal", rotation_seed=4),
]


@pytest.mark.parametrize("target", ["cpu", "sm90"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("c", SPECIAL_CASES, ids=_id)
def test_store_special_values(c, dtype, target):
    """NaN, ±inf, huge (squares past fp32: an inf norm), saturating (fp8 past ±448, values past ±65504), signed-zero
    and tie inputs store what the reference stores (compare_store's rule), in the portable and the sm90 rendering:
    the key scaled once a row (0 for an inf norm, as the reference's k / inf), the Markstein value codes without a
    clamp (in [0, levels] by construction), fp8 keys on sm90 by the saturating conversion alone."""
    spec, _, _, _ = make(c)
    diff = special_store_diff(load_triton(spec, target).store, spec, dtype)
    assert diff.ok, diff.summary()


def test_orthogonal_store_operands_split_exactly():
    """The store's orthogonal rotation (_rot_cols_exact) as plain bf16 dots: Π^T's three bf16 parts (bf16_parts, each
    the rest rounded to nearest) sum to it exactly (24 bits in 3 x 8), and an fp16 key's two (its bf16 rounding and
    the rest) to the key (11 bits in 2 x 8), subnormals and the largest values included; a bf16 key is its own one.
    The dots then drop only products below 2^-16 of the largest, as bf16x6 does."""
    for d in (96, 80, 128):
        pt = ref.rotation(LayoutSpec.from_preset("4bit_nc", head_dim=d, rotation="orthogonal")).T
        p = bf16_parts(pt)
        assert p.dtype == torch.bfloat16 and p.shape == (3, d, d)
        assert torch.equal(p.double().sum(0), pt.double())
        assert (p[2] != 0).any()  # the third part is needed
    k = torch.cat([torch.randn(8192) * 100, torch.tensor([65504.0, -65504.0, 6e-8, -3e-5, 2049.0, 0.0])]).half()
    a0 = k.float().to(torch.bfloat16)
    a1 = (k.float() - a0.float()).to(torch.bfloat16)
    assert torch.equal(a0.double() + a1.double(), k.double())
    assert (a1 != 0).any()


def test_store_rejects_bad_input():
    spec = LayoutSpec.from_preset("4bit_nc")
    kern = load_triton(spec, "cpu")
    cache = ref.allocate(spec, 2, 2)
    k = torch.randn(3, 2, 128, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="slot_mapping"):
        kern.store(k, k, cache, torch.tensor([0, 1, 99], dtype=torch.int32))
    with pytest.raises(ValueError, match="key"):
        kern.store(k.float(), k, cache, torch.tensor([0, 1, 2], dtype=torch.int32))


def test_interpreter_rounds_to_bf16_like_the_gpu():
    """fp32 / fp16 -> bf16 in the interpreter rounds to nearest even, as the GPU's cvt.rn.bf16.f32 and torch do
    (tqgen.interpreter_fixes item 6; Triton 3.6's interpreter truncates: half of random values one unit low), with
    ±inf, NaN, signed zeros, ties and the largest finite values; round toward zero stays available."""
    import triton
    import triton.language as tl

    @triton.jit
    def cast(x_ptr, h_ptr, y_ptr, yh_ptr, z_ptr, N: tl.constexpr):
        i = tl.arange(0, N)
        x = tl.load(x_ptr + i)
        tl.store(y_ptr + i, x.to(tl.bfloat16))
        tl.store(yh_ptr + i, tl.load(h_ptr + i).to(tl.bfloat16))
        tl.store(z_ptr + i, x.to(tl.bfloat16, fp_downcast_rounding="rtz"))

    n = 4096
    x = torch.randn(n, generator=torch.Generator().manual_seed(3)) * 3
    ties = torch.tensor([1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 2 ** -130 * 3])  # halfway: to even
    x[:10] = torch.cat([torch.tensor([float("inf"), -float("inf"), 0.0, -0.0, 3.39e38, -3.39e38]), ties])
    h = x.clamp(-60000, 60000).half()
    y, yh, z = (torch.empty(n, dtype=torch.bfloat16) for _ in range(3))
    cast[(1,)](x, h, y, yh, z, N=n)
    assert torch.equal(y.view(torch.int16), x.to(torch.bfloat16).view(torch.int16))
    assert torch.equal(yh.view(torch.int16), h.to(torch.bfloat16).view(torch.int16))
    trunc = (x.view(torch.int32) & ~0xFFFF).view(torch.float32).to(torch.bfloat16)  # exact: low bits cleared
    assert torch.equal(z[10:].float(), trunc[10:].float())
    nan = torch.empty(n, dtype=torch.bfloat16)
    cast[(1,)](torch.full((n,), float("nan")), h, nan, yh, torch.empty_like(z), N=n)
    assert nan.isnan().all()


def test_interpreter_fma_rounds_once_like_the_gpu():
    """tl.fma in the interpreter is the correctly rounded fma (tqgen.interpreter_fixes item 7; Triton 3.6's
    interpreter rounds the product, then the sum): every result is a nearest fp32 (fp16) value to the exact
    a·b + c, computed in Fraction arithmetic, on random operands and on division residuals x - q·s with
    q = RN(x / s) (Markstein's step in the Triton store), which are exact and mostly nonzero; the interpreter's own
    product-then-sum loses them."""
    from fractions import Fraction

    import triton
    import triton.language as tl

    @triton.jit
    def fma(a_ptr, b_ptr, c_ptr, o_ptr, N: tl.constexpr):
        i = tl.arange(0, N)
        tl.store(o_ptr + i, tl.fma(tl.load(a_ptr + i), tl.load(b_ptr + i), tl.load(c_ptr + i)))

    n = 1024
    g = torch.Generator().manual_seed(5)
    s = torch.rand(n, generator=g) * 7 + 0.01
    x = torch.rand(n, generator=g) * 15 * s
    q = x / s  # RN(x / s) in fp32
    a, b, c = torch.cat([-q[:512], torch.randn(512, generator=g)]), torch.cat([s[:512], torch.randn(512, generator=g)]), \
        torch.cat([x[:512], torch.randn(512, generator=g)])

    def correctly_rounded(a, b, c, out):
        for i in range(n):
            exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
            near = [Fraction(float(torch.nextafter(out[i], torch.tensor(v, dtype=out.dtype))))
                    for v in (-float("inf"), float("inf"))]
            assert abs(Fraction(float(out[i])) - exact) <= min(abs(v - exact) for v in near), (i, float(out[i]))

    out = torch.empty(n)
    fma[(1,)](a, b, c, out, N=n)
    correctly_rounded(a, b, c, out)
    assert (out[:512] != 0).sum() > 400  # the residuals are mostly nonzero (a double rounding gives many zeros)
    ah, bh, ch = (v.clamp(-100, 100).half() for v in (a, b, c))
    oh = torch.empty(n, dtype=torch.float16)
    fma[(1,)](ah, bh, ch, oh, N=n)
    correctly_rounded(ah, bh, ch, oh)


def test_interpreter_min_max_ignore_nan_like_the_gpu():
    """tl.minimum / tl.maximum at the default propagate_nan=NONE lower to the GPU's min.f32 / max.f32 (IEEE minNum /
    maxNum: the other operand where one is NaN), and so do tl.min / tl.max; PropagateNan.ALL (min.NaN.f32) gives
    NaN. The interpreter did NumPy's NaN-propagating minimum for both (tqgen.interpreter_fixes item 8), so a kernel
    relying on NaN reaching a reduction passed on the CPU and not on the GPU (the Triton store's value range did)."""
    import triton
    import triton.language as tl

    @triton.jit
    def mm(x_ptr, y_ptr, o_ptr, N: tl.constexpr):
        i = tl.arange(0, N)
        x, y = tl.load(x_ptr + i), tl.load(y_ptr + i)
        tl.store(o_ptr + i, tl.minimum(x, y))
        tl.store(o_ptr + N + i, tl.maximum(x, y))
        tl.store(o_ptr + 2 * N + i, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))
        tl.store(o_ptr + 3 * N + i, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
        tl.store(o_ptr + 4 * N, tl.min(x, axis=0))
        tl.store(o_ptr + 4 * N + 1, tl.max(x, axis=0))

    nan = float("nan")
    x = torch.tensor([nan, 1.0, -2.0, nan, 5.0, 0.5, -0.0, 3.0])
    y = torch.tensor([1.0, nan, 3.0, nan, 4.0, 0.25, 0.0, -1.0])
    o = torch.empty(4 * 8 + 2)
    mm[(1,)](x, y, o, N=8)
    assert torch.allclose(o[:8], torch.fmin(x, y), equal_nan=True)
    assert torch.allclose(o[8:16], torch.fmax(x, y), equal_nan=True)
    assert torch.allclose(o[16:24], torch.minimum(x, y), equal_nan=True)
    assert torch.allclose(o[24:32], torch.maximum(x, y), equal_nan=True)
    assert o[32].item() == -2.0 and o[33].item() == 5.0  # reductions skip the NaNs


@pytest.mark.parametrize("preset,dtype", [("4bit_nc", torch.bfloat16), ("3bit_nc", torch.float16)])
def test_decode_rotates_the_query_in_its_own_kernel(preset, dtype):
    """Rotated keys: the decode's stage 0 (tq_prep_query) writes q · Πᵀ · scale · log2(e), computed in fp32 and
    rounded once to the query's dtype, into the workspace's 'q' buffer; the split kernel reads it from there. Against
    the unfused formula: equal up to fp32 summation order (butterflies vs a matmul), so within one unit in the last
    place of the dtype; the decode matches the reference; a workspace without the buffer is refused."""
    spec = LayoutSpec.from_preset(preset, layout="soa")
    kern = load_triton(spec, "cpu")
    case = Case(spec, [40, 23], 2, 4, dtype=dtype, seed=11).build("cpu")
    cache = ref.allocate(spec, case["num_blocks"], 2)
    kern.store(case["key"], case["value"], cache, case["slot_mapping"])
    q, scale = case["query"] * 3, 0.0883883
    ws = kern.workspace(2, q.shape[1], 2, "cpu")
    out = kern.decode(q, cache, case["block_table"], case["seq_lens"], scale=scale, num_splits=2, workspace=ws)
    want = (q.float() * (scale * 1.4426950408889634)) @ ref.rotation(spec, torch.device("cpu")).T
    got = ws["q"].view(dtype).float()
    ulp = torch.finfo(dtype).eps * want.abs().clamp_min(torch.finfo(dtype).tiny)
    assert ((got - want.to(dtype).float()).abs() <= ulp * 1.01).all()
    assert rel_err(out, ref.decode(spec, q, cache, case["block_table"], case["seq_lens"], scale=scale)) <= DECODE_TOL[dtype]
    del ws["q"]
    with pytest.raises(ValueError, match="'q'"):
        kern.decode(q, cache, case["block_table"], case["seq_lens"], num_splits=2, workspace=ws)
    assert "q" not in load_triton(LayoutSpec.from_preset("k8v4"), "cpu").workspace(2, 8, 2, "cpu")  # no rotation


NVIDIA_CASES = [dict(preset=p, layout=l) for p in PRESETS for l in ("aos", "soa")] + [
    dict(preset="4bit_nc", layout="soa", dtype=torch.float16),  # the fp16 value patterns (0x64cc)
    dict(preset="4bit_nc", layout="soa", fold_norm=False),  # word parts with the decode-time norm correction
    dict(preset="4bit_nc", layout="soa", head_dim=64),  # byte loads below head_dim 128
    dict(preset="k3v4_nc", layout="aos", head_dim=64),
    dict(preset="4bit_nc", layout="soa", head_dim=256, block_size=32),  # words at 4 warps x 32 tokens
]


@pytest.mark.parametrize("c", NVIDIA_CASES, ids=_id)
def test_nvidia_rendering_decodes_like_the_reference(c):
    """The sm90 rendering of the decode (inline PTX: centroid lookups by byte permutes, SoA int32 words in eight
    parts, biased value codes, e4m3 pairs, 3-bit value parts) run whole in the interpreter, its asm executed by
    tqgen.ptx_emu (interpreter_fixes), against the reference with and without sinks and a window, within
    DECODE_TOL: the part order of the queries, the accumulators and the output columns is checked here on the
    CPU (a swapped query part measured 0.65 relative error)."""
    spec, gqa, dtype, _ = make(c)
    case = Case(spec, [37, 0, 70, 1], 2, gqa, dtype=dtype, seed=5).build("cpu")
    kern = load_triton(spec, "sm90")
    cache = ref.allocate(spec, case["num_blocks"], 2)
    ref.store(spec, case["key"], case["value"], cache, case["slot_mapping"])
    for out in check_decode(kern, spec, case, cache, 20, num_splits=3, what=_id(c)):
        assert out.dtype == dtype and torch.equal(out[1], torch.zeros_like(out[1]))  # seq_len 0 → zeros


# ---------------------------------------------------------------------------------- balanced splits
BAL_CASES = [("4bit_nc", "soa", 128), ("k8v4", "aos", 64), ("3bit_nc", "aos", 64), ("k3v4_nc", "soa", 64)]


@pytest.mark.parametrize("preset,layout,head_dim", BAL_CASES, ids=str)
def test_balanced_decode_on_mixed_and_equal_lengths(preset, layout, head_dim):
    """The length-balanced Triton decode (``balanced=True``: the batch's programs dealt by the sequences' tiles,
    computed on the device from seq_lens) against the reference, plain and with sinks + a sliding window, within
    DECODE_TOL: a long sequence among short and empty ones (its 38 tiles in 38 one-tile pieces, merged 16 at a time),
    split counts 1 (nothing to deal: one piece a sequence) to 16. On equal lengths the deal is the classic splits, so
    only the merge's fp32 order differs (online, 16 pieces at a time): fp16 outputs within one fp16 ulp of the
    classic decode's, 2^-10 relative to max |out|."""
    spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=head_dim)
    kern = load_triton(spec, "cpu")
    case = Case(spec, [600, 5, 0, 33, 1], 2, 3, dtype=torch.float16, seed=5).build("cpu")
    cache = ref.allocate(spec, case["num_blocks"], 2)
    ref.store(spec, case["key"], case["value"], cache, case["slot_mapping"])
    for ns in (1, 3, 16):
        for out in check_decode(kern, spec, case, cache, 100, num_splits=ns, balanced=True, what=f"{ns} splits"):
            assert torch.equal(out[2], torch.zeros_like(out[2]))  # seq_len 0 → zeros
    eq = Case(spec, [77, 77, 77], 2, 3, dtype=torch.float16, seed=6).build("cpu")
    cache = ref.allocate(spec, eq["num_blocks"], 2)
    ref.store(spec, eq["key"], eq["value"], cache, eq["slot_mapping"])
    for ns in (2, 5):
        outs = [kern.decode(eq["query"], cache, eq["block_table"], eq["seq_lens"], sinks=eq["sinks"],
                            num_splits=ns, balanced=bal) for bal in (False, True)]
        assert rel_err(outs[1], outs[0]) <= 2.0 ** -10, f"{ns} splits: balanced vs classic {rel_err(outs[1], outs[0]):.2e}"


def test_balanced_deal_spreads_a_long_sequence():
    """Where the programs go (read from the workspace's log-sum-exp rows: a program with tokens writes a finite one):
    4 sequences of 400, 16, 16, 16 tokens at 4 splits are 16 programs a KV head. The classic grid gives each sequence
    4 (the long one 7 tiles a program); the deal cuts the 28 tiles into pieces of 2 (the fewest that fit: 13 + 1 + 1 + 1
    = 16), so the long sequence runs on 13 programs."""
    spec = LayoutSpec.from_preset("4bit_nc", layout="soa", head_dim=64)
    kern = load_triton(spec, "cpu")
    assert kern.variant.options.block_n == 16
    case = Case(spec, [400, 16, 16, 16], 2, 2, dtype=torch.bfloat16, seed=8).build("cpu")
    cache = ref.allocate(spec, case["num_blocks"], 2)
    ref.store(spec, case["key"], case["value"], cache, case["slot_mapping"])
    b, hq = 4, 4
    for bal, want in ((False, [4, 1, 1, 1]), (True, [13, 1, 1, 1])):
        ws = kern.workspace(b, hq, 4, "cpu")
        ws["lse"].fill_(float("nan"))
        out = kern.decode(case["query"], cache, case["block_table"], case["seq_lens"], num_splits=4, workspace=ws,
                          balanced=bal)
        assert rel_err(out, ref.decode(spec, case["query"], cache, case["block_table"], case["seq_lens"])) \
            <= DECODE_TOL[torch.bfloat16]
        rows = ws["lse"].reshape(-1)
        if bal:  # row (hk · 16 + program) · G + g; KV head 0, query 0: programs 0..12 the long sequence's, then one each
            lse = rows.reshape(2, 16, 2)[0, :, 0]
            got = [int(torch.isfinite(lse[a:z]).sum()) for a, z in ((0, 13), (13, 14), (14, 15), (15, 16))]
        else:  # row ((b · Hk + hk) · G + g) · 4 + split
            lse = rows.reshape(4, 2, 2, 4)[:, 0, 0, :]
            got = [int(torch.isfinite(lse[i]).sum()) for i in range(4)]
        assert got == want, (bal, got)
    # the default: balanced here (the block table's 25 tiles are more than 4 splits); at 32 splits every classic split
    # is one tile already, so the classic grid (the same calls bit for bit)
    args = (case["query"], cache, case["block_table"], case["seq_lens"])
    assert case["block_table"].shape[1] * 16 == 400
    assert torch.equal(kern.decode(*args, num_splits=4), kern.decode(*args, num_splits=4, balanced=True))
    assert torch.equal(kern.decode(*args, num_splits=32), kern.decode(*args, num_splits=32, balanced=False))
    assert not torch.equal(kern.decode(*args, num_splits=4), kern.decode(*args, num_splits=4, balanced=False))


def test_balanced_decode_refusals():
    """balanced=True where the deal cannot run says why: a batch past BALANCED_MAX_BATCH; a variant whose options
    turn it off (sm90 AoS 4-bit keys at head_dim 128: the deal cost its 255-register decode a stack frame). Both
    are refused before any kernel runs."""
    from tqgen.triton_launch import BALANCED_MAX_BATCH
    spec = LayoutSpec.from_preset("4bit_nc", layout="aos")
    kern = load_triton(spec, "cpu")
    n = BALANCED_MAX_BATCH + 1
    q = torch.zeros(n, 4, 128, dtype=torch.bfloat16)
    cache = ref.allocate(spec, 1, 1)
    bt = torch.zeros(n, 1, dtype=torch.int32)
    sl = torch.ones(n, dtype=torch.int32)
    with pytest.raises(ValueError, match="deals at most"):
        kern.decode(q, cache, bt, sl, num_splits=2, balanced=True)
    sm90 = load_triton(spec, "sm90")
    assert not sm90.variant.options.balanced_decode
    with pytest.raises(ValueError, match="has no balanced decode"):
        sm90.decode(q[:2], cache, bt[:2], sl[:2], num_splits=2, balanced=True)
