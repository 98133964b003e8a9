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

from tqgen import reference as ref
from tqgen.build import default_matrix
from tqgen import LayoutSpec
from tqgen.ir import Backend, Target
from tqgen.lower_cuda import cuda_options, make_variant
from tqgen.testing import DECODE_TOL, Case, compare_store, rel_err, special_store_diff

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
    from tqgen.cuda_launch import load_variant
    from tqgen.triton_launch import load_triton

    kern = load_variant(variant)
    spec = variant.spec
    dev = torch.device("cuda")
    tri = load_triton(spec, "sm90")
    for i, (lens, hk, g, dt) in enumerate(SHAPES):
        if variant.kind == "portable" and i == 0:
            lens = [4099, 16, 1000]  # the shuffle-emulated fragments are slow: a shorter batch
        case = Case(spec, lens, hk, g, dtype=dt, seed=i).build(dev)
        got = ref.allocate(spec, case["num_blocks"], hk, dev)
        want = ref.allocate(spec, case["num_blocks"], hk, dev)
        kern.store(case["key"], case["value"], got, case["slot_mapping"])
        n = case["key"].shape[0]
        for s in range(0, n, 16384):
            sl = slice(s, s + 16384)
            ref.store(spec, case["key"][sl], case["value"][sl], want, case["slot_mapping"][sl])
        diff = compare_store(spec, got, want, case["key"], case["slot_mapping"])
        assert diff.ok, diff.summary()
        if i == 1:  # the kernel reads int32 and int64 slot mappings: the same bytes
            got64 = ref.allocate(spec, case["num_blocks"], hk, dev)
            kern.store(case["key"], case["value"], got64, case["slot_mapping"].to(torch.int64))
            assert case["slot_mapping"].dtype == torch.int32 and torch.equal(got64, got)
        for sinks, window in ((None, None), (case["sinks"], 1000)):
            out = kern.decode(case["query"], want, case["block_table"], case["seq_lens"], sinks=sinks,
                              sliding_window=window)
            exp = ref.decode(spec, case["query"], want, case["block_table"], case["seq_lens"], sinks=sinks,
                             sliding_window=window)
            assert torch.isfinite(out).all()
            err = rel_err(out, exp)
            assert err <= DECODE_TOL[dt], f"decode rel err {err:.2e} > {DECODE_TOL[dt]:.2e} (shape {i})"
            t_out = tri.decode(case["query"], want, case["block_table"], case["seq_lens"], sinks=sinks,
                               sliding_window=window)
            assert rel_err(out, t_out) <= 2 * DECODE_TOL[dt], "cuda and triton disagree"
        if i == 2:
            k, v = kern.dequant(want, case["block_table"], case["seq_lens"], dtype=torch.float32)
            ek, ev = ref.dequant(spec, want, case["block_table"], case["seq_lens"])
            assert rel_err(k, ek) < 1e-5 and rel_err(v, ev) < 1e-6
            kb, vb = kern.dequant(want, case["block_table"], case["seq_lens"], dtype=torch.bfloat16)
            assert rel_err(kb, ek) < 2**-8 and rel_err(vb, ev) < 2**-8
            kh, vh = kern.dequant(want, case["block_table"], case["seq_lens"], dtype=torch.float16)
            assert rel_err(kh, ek) < 2**-11 and rel_err(vh, ev) < 2**-11  # one fp16 rounding
            assert not kh[0, :, 513:].any() and not vh[2, :, 77:].any()  # zeros past each length


@pytest.mark.parametrize("variant", [v for v in CUDA if str(v.target) == "sm90"]
                         + [_portable(v) for v in CUDA if str(v.target) == "sm90"] + ROTATED_FP8, ids=lambda v: v.id)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_store_special_values(variant, dtype):
    """NaN, ±inf, huge, saturating, signed-zero and tie inputs store what the reference stores
    (compare_store's rule), from a strided, offset view (the launcher realigns it)."""
    from tqgen.cuda_launch import load_variant

    kern = load_variant(variant)
    d = variant.spec.head_dim

    def store(key, value, cache, slots):
        # an offset view inside a wider tensor on the device: rows 3 elements (6 bytes) in, not 16-byte aligned (built
        # on the host and moved with .to(), as until session 37, the view arrived as a contiguous copy)
        wide_k = torch.zeros(*key.shape[:2], d + 3, dtype=key.dtype, device=key.device)
        wide_k[:, :, 3:] = key
        view = wide_k[:, :, 3:]
        assert view.storage_offset() == 3 and not view.is_contiguous()
        kern.store(view, value, cache, slots)

    diff = special_store_diff(store, variant.spec, dtype, "cuda")
    assert diff.ok, diff.summary()


@pytest.mark.parametrize("head_dim", [128, 64])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_merge_kernels_match_the_log_sum_exp(head_dim, dtype):
    """Both decode merges (a block per row, a warp per row; cuda_launch.merge_kind picks one per shape)
    against the merge in float64: out = Σ 2^(lse_s - M)·acc_s / (Σ 2^(lse_s - M) + 2^(sink·log2 e - M)),
    empty rows (every lse -inf) zero. Tolerance: the output's rounding to bf16 / fp16 (2^-8 / 2^-11 of
    the row's largest value) plus fp32 sums of at most `splits` terms (up to tuning.MAX_SPLITS, B=1's
    count at long contexts)."""
    from tqgen.cuda_launch import load_variant
    kern = load_variant(make_variant(LayoutSpec.from_preset("4bit_nc", layout="soa", head_dim=head_dim), "sm90"))
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(3)
    for b, hq, splits in ((128, 32, 4), (3, 8, 64), (16, 12, 16), (2, 8, 512)):
        acc = torch.randn(b, hq, splits, head_dim, device=dev, generator=g)
        lse = torch.randn(b, hq, splits, device=dev, generator=g) * 6
        lse[0, 1] = float("-inf")                 # an empty row (seq_len 0)
        lse[1, 0, : splits // 2] = float("-inf")  # empty splits
        sinks = torch.randn(hq, device=dev, generator=g)
        for sk in (None, sinks):
            m = lse.double().amax(-1, keepdim=True)
            if sk is not None:
                m = torch.maximum(m, sk.double().view(1, hq, 1) * 1.4426950408889634)
            w = torch.exp2(lse.double() - m).nan_to_num(0.0)
            den = w.sum(-1) + (torch.exp2(sk.double().view(1, hq) * 1.4426950408889634 - m[..., 0]) if sk is not None
                               else 0.0)
            want = (w.unsqueeze(-1) * acc.double()).sum(-2) / den.clamp_min(1e-300).unsqueeze(-1)
            want[torch.isinf(lse).all(-1)] = 0.0
            for kind in ("groups", "rows"):
                out = torch.empty(b, hq, head_dim, device=dev, dtype=dtype)
                kern.merge({"acc": acc, "lse": lse}, sk, out, hq, splits, torch.cuda.current_stream().cuda_stream, kind)
                torch.cuda.synchronize()
                eps = 2.0 ** -8 if dtype == torch.bfloat16 else 2.0 ** -11
                tol = (eps + splits * 2.0 ** -23) * want.abs().amax(-1, keepdim=True) + 1e-6
                assert ((out.double() - want).abs() <= tol).all(), (kind, b, hq, splits, sk is not None)
                assert (out[0, 1] == 0).all()


@pytest.mark.parametrize("variant", [make_variant(LayoutSpec.from_preset(p, layout=lay, head_dim=d), "sm90")
                                     for p, lay, d in (("3bit_nc", "soa", 128), ("k8v4", "aos", 128),
                                                       ("4bit_nc", "soa", 64))],
                         ids=lambda v: v.id)
def test_decode_past_64_splits(variant):
    """Few (sequence, KV head) units at a long context take more than 64 splits (cuda_launch.decode_splits:
    up to half the resident warps, tuning.MAX_SPLITS at most): the launcher's own count and explicit 128 /
    300 / 512 (the last leaves a fifth of the first sequence's splits and most of the short one's empty)
    against the reference decode within tqgen.testing.DECODE_TOL."""
    from tqgen.cuda_launch import load_variant
    from tqgen.tuning import MAX_SPLITS

    spec, dev = variant.spec, torch.device("cuda")
    kern = load_variant(variant)
    lens, hk, g = [20000, 1500], 2, 4
    case = Case(spec, lens, hk, g, seed=5).build(dev)
    cache = ref.allocate(spec, case["num_blocks"], hk, dev)
    kern.store(case["key"], case["value"], cache, case["slot_mapping"])
    q, bt, sl = case["query"], case["block_table"], case["seq_lens"]
    own = kern.num_splits_for(len(lens), hk, bt.shape[1] * spec.block_size, dev)
    assert own <= MAX_SPLITS, own
    if torch.cuda.get_device_properties(dev).multi_processor_count >= 100:  # half the resident warps: > 64 a unit
        assert own > 64, own
    exp = ref.decode(spec, q, cache, bt, sl)
    for splits in (None, 128, 300, MAX_SPLITS):
        out = kern.decode(q, cache, bt, sl, num_splits=splits)
        assert torch.isfinite(out).all(), splits
        err = rel_err(out, exp)
        assert err <= DECODE_TOL[q.dtype], f"{splits or own} splits: decode rel err {err:.2e}"


@pytest.mark.parametrize("variant", [make_variant(LayoutSpec.from_preset(p, layout=lay, head_dim=d), "sm90")
                                     for p, lay, d in (("3bit_nc", "soa", 128), ("k8v4", "aos", 128),
                                                       ("4bit_nc", "soa", 64), ("k3v4_nc", "aos", 64))],
                         ids=lambda v: v.id)
@pytest.mark.parametrize("ramp", ["rising", "falling"])
def test_decode_follows_a_moving_maximum(variant, ramp):
    """The decode's online softmax reduces the maximum across lanes only when a score of the tile exceeds
    the running maximum (the warp votes). Keys pulled towards each head's first query by a weight that
    grows with the position (rising: the maximum moves on many tiles of every split) or shrinks with it
    (falling: mostly on a split's first tiles), on ordinary random data besides; the reference decode
    within tqgen.testing.DECODE_TOL."""
    from tqgen.cuda_launch import load_variant

    spec, dev = variant.spec, torch.device("cuda")
    kern = load_variant(variant)
    lens, hk, g = [6000, 333, 17], 2, 4
    case = Case(spec, lens, hk, g, seed=11).build(dev)
    seq, pos = case["token_seq"], case["token_pos"].float()
    real = seq >= 0
    frac = pos / max(lens) if ramp == "rising" else 1.0 - pos / max(lens)
    q0 = case["query"].float()[:, ::g]  # [B, Hk, D]: each KV head's first query
    pull = (q0 / q0.norm(dim=-1, keepdim=True))[seq.clamp_min(0)] * (8.0 * frac)[:, None, None]
    key = (case["key"].float() + pull * real[:, None, None]).to(case["key"].dtype)
    cache = ref.allocate(spec, case["num_blocks"], hk, dev)
    ref.store(spec, key, case["value"], cache, case["slot_mapping"])
    out = kern.decode(case["query"], cache, case["block_table"], case["seq_lens"])
    exp = ref.decode(spec, case["query"], cache, case["block_table"], case["seq_lens"])
    assert torch.isfinite(out).all()
    err = rel_err(out, exp)
    assert err <= DECODE_TOL[case["query"].dtype], f"{ramp}: decode rel err {err:.2e}"


@pytest.mark.parametrize("variant", [make_variant(LayoutSpec.from_preset(p, layout=lay, head_dim=d), "sm90")
                                     for p, lay, d in (("3bit_nc", "soa", 128), ("4bit_nc", "aos", 128),
                                                       ("k8v4", "aos", 128), ("k3v4_nc", "soa", 64))],
                         ids=lambda v: v.id)
def test_decode_ignores_unwritten_slots(variant):
    """Slots past a sequence's length in its last block hold whatever the cache held (here all-ones bytes: NaN
    fp16 norms, scales and zeros, NaN fp8 keys): the decode reads them with the tile and masks them, and a masked
    token must weigh exactly nothing (p = 0 times a NaN value scale would be NaN: it did before the kernel zeroed
    masked tokens' value fields). Lengths that end mid-block and mid-tile, several split counts; the reference
    decode within tqgen.testing.DECODE_TOL."""
    from tqgen.cuda_launch import load_variant

    spec, dev = variant.spec, torch.device("cuda")
    kern = load_variant(variant)
    lens, hk, g = [1000, 37, 16 * 7 + 3], 2, 4
    case = Case(spec, lens, hk, g, seed=13).build(dev)
    cache = ref.allocate(spec, case["num_blocks"], hk, dev)
    cache.fill_(0xFF)
    kern.store(case["key"], case["value"], cache, case["slot_mapping"])
    exp = ref.decode(spec, case["query"], cache, case["block_table"], case["seq_lens"])
    assert torch.isfinite(exp).all()
    for splits in (None, 3, 7):
        out = kern.decode(case["query"], cache, case["block_table"], case["seq_lens"], num_splits=splits)
        assert torch.isfinite(out).all(), splits
        err = rel_err(out, exp)
        assert err <= DECODE_TOL[case["query"].dtype], f"{splits} splits: decode rel err {err:.2e}"


@pytest.mark.parametrize("variant", [make_variant(LayoutSpec.from_preset(p, layout=lay, head_dim=d), "sm90")
                                     for p, lay, d in (("3bit_nc", "soa", 128), ("k3v4_nc", "soa", 128),
                                                       ("k8v4", "aos", 128), ("4bit_nc", "aos", 128),
                                                       ("4bit_nc", "soa", 64))] + GROUPED[1:2],
                         ids=lambda v: v.id)
def test_balanced_decode_deals_splits_by_length(variant):
    """A balanced decode (cuda_launch.balanced_blocks: the grid's blocks dealt to the sequences by their tiles) on
    batches of mixed lengths (empty, one-token, mid-tile and long sequences), equal lengths (the classic grid taken
    as is; the warp-a-row merge takes the classic rows without reading the plan up to 256 sequences, reads it for
    260) and one sequence; 64 sequences for the warp-per-row merge; a grid past one wave (the blocks past the dealt
    ones exit); a sliding window with sinks; several split counts: the reference decode within
    tqgen.testing.DECODE_TOL, as the classic decode of the same call. The plan the kernel wrote (each non-empty
    sequence's splits and first partial row) is the deal cuda_launch.balanced_blocks re-enacts, at the cap
    balanced_cap gives (one wave at 2 warps a block, 3/4 of one at 4)."""
    from tqgen.cuda_launch import balanced_blocks, balanced_cap, decode_grid, load_variant, merge_kind
    from tqgen.tuning import sm_count

    spec, dev = variant.spec, torch.device("cuda")
    kern = load_variant(variant)
    step = variant.options.split_step()
    hk = 3 if variant.options.head_groups and variant.options.decode_warps == 4 else 2
    many = [int(x) * (i % 5 != 0) for i, x in enumerate(torch.randint(1, 3000, (64,), generator=torch.Generator().manual_seed(4)))]
    cases = [([9000, 0, 17, 1, 700, 2500, 16, 33, 4096, 5], 4, (None, step, 3 * step)),
             ([3000] * 4, 4, (None, 2 * step)), ([5000], 4, (step, 4 * step)), (many, 8, (2 * step,)),
             ([20000] + [10] * 40, 4, (16 * step,)),  # more blocks than one wave's cap: the ones past it exit
             ([200] * 64, 8, (2 * step,)),  # equal lengths, the warp-a-row merge: the plan not read
             ([40] * 260, 4, (2 * step,))]  # equal lengths past one round of tq_bal_equal_round: warp 0's plan
    for lens, g, split_counts in cases:
        case = Case(spec, lens, hk, g, seed=21).build(dev)
        cache = ref.allocate(spec, case["num_blocks"], hk, dev)
        kern.store(case["key"], case["value"], cache, case["slot_mapping"])
        q, bt, sl = case["query"], case["block_table"], case["seq_lens"]
        for window, sinks in ((None, None), (1000, case["sinks"])):
            exp = ref.decode(spec, q, cache, bt, sl, sinks=sinks, sliding_window=window)
            for splits in split_counts:
                for balanced, wide in ((True, False), (True, True), (False, False)):
                    ns = splits or kern.num_splits_for(len(lens), hk, bt.shape[1] * spec.block_size, dev)
                    # wide: the workspace has room for balanced_width's grid (the uniform path keeps ns)
                    ws = kern.workspace(len(lens), q.shape[1], ns, dev, **({"num_kv_heads": hk} if wide else {}))
                    out = kern.decode(q, cache, bt, sl, num_splits=splits, sinks=sinks, sliding_window=window,
                                      balanced=balanced, workspace=ws)
                    label = (len(lens), g, window, splits, balanced, wide, merge_kind(len(lens) * hk * g, ns))
                    if balanced:
                        grid = decode_grid(variant.options, ns, hk, g, len(lens))
                        cap = balanced_cap(variant.options, sm_count(dev), grid[1])
                        width = kern.balanced_grid_width(len(lens), hk, g, ns, dev, room=ws["acc"].shape[2])
                        assert wide or width == ns // step, label
                        deal = balanced_blocks(lens, window or 0, width, cap, uniform_blocks=ns // step)
                        plan, rows = ws["plan"][: len(lens)].tolist(), 0
                        for n, x, (row, nsplit) in zip(lens, deal, plan):
                            if n:  # an empty sequence has no blocks and writes no plan
                                assert (nsplit, row) == (x * step, q.shape[1] * step * rows), (label, lens, deal, plan)
                            rows += x
                        kind = merge_kind(len(lens) * q.shape[1], width * step)
                        if len(set(lens)) == 1 and len(lens) <= 256 and kind == "rows":
                            # equal lengths: the warp-a-row merge takes the classic rows without reading the plan (a
                            # plan of -1s merges to the same bytes); past 256 sequences, and the block-a-row merge,
                            # read the plan
                            again, junk = torch.empty_like(out), torch.full_like(ws["plan"], -1)
                            sk = sinks.float().contiguous() if sinks is not None else None
                            kern.merge(ws, sk, again, q.shape[1], ns, torch.cuda.current_stream().cuda_stream, kind,
                                       plan=junk, seq_lens=sl, window=window or 0)
                            assert torch.equal(again, out), label
                    assert torch.isfinite(out).all(), label
                    err = rel_err(out, exp)
                    assert err <= DECODE_TOL[q.dtype], f"{label}: decode rel err {err:.2e}"
                    if lens[0] == 0 or 0 in lens:
                        assert (out[[i for i, n in enumerate(lens) if n == 0]] == 0).all(), label


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
    """fp32 out: the reference's values within 1e-5 relative (the inverse rotation's fp32 summation order: its five
    in-register stages and the shuffle stages pair elements differently from the reference's matmul); bf16 / fp16
    out: one rounding of those (2^-8 / 2^-11 relative); zeros past each length and up to max_len (a longer max_len
    than any sequence: whole warps and blocks past the end)."""
    from tqgen.cuda_launch import load_variant
    kern = load_variant(variant)
    spec = variant.spec
    dev = torch.device("cuda")
    for i, (lens, hk) in enumerate((([513, 4096, 77, 1, 0], 4), ([3000, 40, 17], 3))):
        case = Case(spec, lens, hk, 1, seed=10 + i).build(dev)
        cache = ref.allocate(spec, case["num_blocks"], hk, dev)
        ref.store(spec, case["key"], case["value"], cache, case["slot_mapping"])
        ek, ev = ref.dequant(spec, cache, case["block_table"], case["seq_lens"])
        k, v = kern.dequant(cache, case["block_table"], case["seq_lens"], dtype=torch.float32)
        assert k.shape == ek.shape and v.shape == ev.shape
        assert rel_err(k, ek) < 1e-5 and rel_err(v, ev) < 1e-6
        kb, vb = kern.dequant(cache, case["block_table"], case["seq_lens"], dtype=torch.bfloat16)
        assert rel_err(kb, ek) < 2**-8 and rel_err(vb, ev) < 2**-8
        kh, vh = kern.dequant(cache, case["block_table"], case["seq_lens"], dtype=torch.float16)
        assert rel_err(kh, ek) < 2**-11 and rel_err(vh, ev) < 2**-11
        m = max(lens) + 300
        k2, v2 = kern.dequant(cache, case["block_table"], case["seq_lens"], max_len=m, dtype=torch.float32)
        assert k2.shape[2] == m and torch.equal(k2[:, :, :max(lens)], k) and torch.equal(v2[:, :, :max(lens)], v)
        for s, n in enumerate(lens):
            assert not k2[s, :, n:].any() and not v2[s, :, n:].any()
