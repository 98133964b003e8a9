"""The C++ kernels' checks, shared by the GPU tests (tests/test_cuda_gpu.py: CUDA and the portable fragment path on an
NVIDIA GPU) and the CPU simulator's (tests/test_cpu_sim.py: the CUDA and HIP variants on the host). A ``Runner`` says
where the kernels run; the shapes are arguments (the simulator takes shorter sequences than the GPU). Every tolerance
is stated where it is asserted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from tqgen import LayoutSpec
from tqgen import reference as ref
from tqgen.build import default_matrix
from tqgen.ir import Backend, Target
from tqgen.lower_cuda import cuda_options, dense_rotation, make_variant
from tqgen.testing import DECODE_TOL, Case, compare_store, rel_err, special_store_diff, width_spec

# ------------------------------------------------------------------ the CUDA variants the checks run on
CUDA = [v for v in default_matrix()[0] if v.backend is Backend.CUDA]
SM90 = [v for v in CUDA if v.target is Target.SM90]
# the HIP instances' fragment and byte-permute code compiled as CUDA
PORTABLE = [make_variant(v.spec, v.target, "portable") for v in SM90]
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
# (two runs), head_dim 64 (funnel-shifted pieces); 3 KV heads leave a group partly idle
GROUPED = [make_variant(s, "sm90", options=cuda_options(s, Target.SM90).with_changes(
    ["head_groups=1", f"decode_warps={w}", f"decode_min_blocks={16 // w}"]))
    for s, w in ((LayoutSpec.from_preset("k3v4_nc", layout="soa"), 2), (LayoutSpec.from_preset("k3v4_nc", layout="soa"), 4),
                 (LayoutSpec.from_preset("k8v4", layout="soa"), 2),
                 (LayoutSpec.from_preset("3bit_nc", layout="soa", head_dim=64), 2))]


# widths no preset has (the per-spec options were measured on the presets, cuda_options applies them by field): 2-bit
# keys, 2- / 3- / 8-bit values, fp8 keys with 2-bit values; 8-bit values at head_dim 128 and SoA 4-bit keys with 3-bit
# values at 64 take their own launch bounds (lower_cuda's overrides: the presets' spilled or overran shared memory).
# NVIDIA ones here, the simulator adds AMD ones
# (layout, key bits, value bits, head_dim) for tqgen.testing.width_spec; tests/test_triton_gpu.py runs the first five
NON_PRESET_WIDTHS = (("aos", 4, 8, 128), ("soa", 2, 2, 128), ("aos", 3, 2, 64), ("soa", 8, 2, 128), ("soa", 3, 8, 128),
                     ("soa", 4, 3, 64))
NON_PRESET = [make_variant(width_spec(*w), "sm90") for w in NON_PRESET_WIDTHS]

# pages of 32, 64 and 128 tokens (the default matrix builds 16): a tile is 16 tokens of one block, the block table
# read once a tile; AoS and SoA, head_dim 128 and 64
BLOCKS = [make_variant(LayoutSpec.from_preset(p, layout=lay, block_size=bs, head_dim=d), "sm90")
          for p, lay, bs, d in (("4bit_nc", "aos", 32, 128), ("3bit_nc", "soa", 64, 128), ("k8v4", "aos", 128, 128),
                                ("4bit_nc", "soa", 128, 64))]

# head_dim 256 (Gemma's; session 47): 8 elements a lane, 16 value m-tiles, 2 warps a block at 255 registers, the
# line-load pipeline in dynamic shared memory (lower_cuda's head_dim-256 override); every preset x layout
D256 = [make_variant(LayoutSpec.from_preset(p, layout=lay, head_dim=256), "sm90")
        for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc") for lay in ("soa", "aos")]


# head_dim 96 (Phi-3-mini's; 3 elements a lane, 6 chunks of 16, 3 store lanes a row): fp8 keys unrotated (store,
# decode, dequant) and, with the orthogonal rotation (no Hadamard matrix at 96), store and decode (the query rotated by
# the launcher; lower_cuda.dense_rotation): every preset x layout (3bit_nc's value eighths are 4.5 bytes: the line
# loads' words funnel-shifted into place), fp8 keys rotated
D96 = [make_variant(LayoutSpec.from_preset(p, layout=lay, head_dim=96, **({} if p == "k8v4" else {"rotation": "orthogonal"})),
                    "sm90") for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc") for lay in ("soa", "aos")] + \
    [make_variant(LayoutSpec.from_preset("k8v4", layout="soa", head_dim=96, rotation="orthogonal", rotation_seed=3), "sm90")]


# head_dim 80 (Phi-2's; no multiple of 32: the decode's 5 chunks of 16, 3 query elements a lane on lanes 0-26, the
# rows merge's 4 elements on lanes 0-19; the store's and rows dequant's rows 5 lanes of 16 elements, 6 a warp, 3-bit
# codes in 6-byte chunks): every preset x layout (the orthogonal rotation; fp8 keys unrotated); 3-bit keys' 7.5-byte
# quarters and 3-bit values' 3.75-byte eighths by the register prefetch, read from lower_cuda.thread_piece's bytes and
# shifted), and widths no preset has: 2-bit values (2.5-byte eighths, the line loads' half bytes), 2-bit keys with
# 3-bit values
D80 = [make_variant(LayoutSpec.from_preset(p, layout=lay, head_dim=80, **({} if p == "k8v4" else {"rotation": "orthogonal"})),
                    "sm90") for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc") for lay in ("soa", "aos")] + \
    [make_variant(width_spec(lay, kb, vb, 80), "sm90") for lay, kb, vb in (("soa", 4, 2), ("aos", 2, 3))]
# ... the store's special values at 80: 4- and 3-bit keys through the dense rotation, 3-bit values' 6-byte chunks, fp8
# keys
D80_STORE = [v for v in D80 if (v.spec.layout.value, v.spec.key_bits, v.spec.value_bits)
             in (("soa", 4, 4), ("aos", 3, 3), ("soa", 8, 4))]


def _rounds(preset: str, layout: str, head_dim: int, rounds: int):
    spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=head_dim, rotation="orthogonal")
    return make_variant(spec, "sm90", options=cuda_options(spec, Target.SM90).with_changes([f"store_rounds={rounds}"]))


# the dense store's rounds (CudaOptions.store_rounds: a block's rounds of rows through one rotation): head_dim 80's 4
# (96 rows, 6 m-tiles, no pad rows), 96's 2 (80 rows, 5 m-tiles)
ROUNDS = [_rounds("4bit_nc", "soa", 80, 4), _rounds("3bit_nc", "aos", 80, 4), _rounds("k3v4_nc", "aos", 96, 2)]


def _dq_rounds(preset: str, layout: str, head_dim: int, rounds: int, **kw):
    spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=head_dim, rotation="orthogonal", **kw)
    return make_variant(spec, "sm90", options=cuda_options(spec, Target.SM90).with_changes([f"dequant_rounds={rounds}"]))


# the dense rows dequant's rounds (CudaOptions.dequant_rounds: a block's rounds of rows through one rotation for bf16 /
# fp16 outputs, fp32 one round; the NVIDIA default at 80 and 96): head_dim 80's 4 (96 rows, 6 m-tiles), 96's 2 (80
# rows, 5 m-tiles); 3- and 4-bit Lloyd-Max keys, rotated fp8 keys; and one round a rotation at 80 (AMD's dequant,
# the option at 1)
DQ_ROUNDS = [_dq_rounds("4bit_nc", "soa", 80, 4), _dq_rounds("3bit_nc", "aos", 80, 4),
             _dq_rounds("k3v4_nc", "aos", 96, 2), _dq_rounds("k8v4", "aos", 80, 4, rotation_seed=3),
             _dq_rounds("3bit_nc", "soa", 80, 1)]


def rounds_id(v) -> str:
    """A test id: the variant's, with its store or dequant rounds where it has them (-k rounds selects those)."""
    return v.id + (f"-rounds{v.options.store_rounds}" if v.options.store_rounds > 1 else "") + (
        f"-dqrounds{v.options.dequant_rounds}" if v in DQ_ROUNDS else "")


def sm90_variants(*cases) -> list:
    """sm90 variants of (preset, layout, head_dim) cases."""
    return [make_variant(LayoutSpec.from_preset(p, layout=lay, head_dim=d), "sm90") for p, lay, d in cases]


# head_dim 256 past 64 splits: the block-a-row merge's groups stop at 1024 threads (4 groups of 256, not 8)
PAST_64 = sm90_variants(("3bit_nc", "soa", 128), ("k8v4", "aos", 128), ("4bit_nc", "soa", 64), ("k3v4_nc", "aos", 256))
MOVING_MAX = sm90_variants(("3bit_nc", "soa", 128), ("k8v4", "aos", 128), ("4bit_nc", "soa", 64), ("k3v4_nc", "aos", 64))
UNWRITTEN = sm90_variants(("3bit_nc", "soa", 128), ("4bit_nc", "aos", 128), ("k8v4", "aos", 128), ("k3v4_nc", "soa", 64))
BALANCED = sm90_variants(("3bit_nc", "soa", 128), ("k3v4_nc", "soa", 128), ("k8v4", "aos", 128), ("4bit_nc", "aos", 128),
                         ("4bit_nc", "soa", 64), ("4bit_nc", "soa", 256)) + GROUPED[1:2]
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


@dataclass(frozen=True)
class Runner:
    """Where the kernels run: ``load(variant)`` gives a ``CudaKernels``, ``dev`` its tensors' device, ``stream()`` the
    raw stream a direct ``merge`` call takes, ``sync()`` waits for the device, ``sms`` its SM (CU) count as the
    launcher reads it (``tqgen.tuning.sm_count``)."""

    load: Callable
    dev: torch.device
    stream: Callable[[], int]
    sync: Callable[[], None]
    sms: int


def cuda_runner() -> Runner:
    from tqgen.cuda_launch import load_variant
    from tqgen.tuning import sm_count
    dev = torch.device("cuda")
    return Runner(load_variant, dev, lambda: torch.cuda.current_stream().cuda_stream, torch.cuda.synchronize,
                  sm_count(dev))


def sim_runner(load) -> Runner:
    """tqgen.cpu_sim as a Runner: ``load(variant)`` gives its kernels; CPU tensors, no stream, one SM (what
    tqgen.tuning.sm_count says of a CPU device)."""
    return Runner(load, torch.device("cpu"), lambda: 0, lambda: None, 1)


# The simulator's sizes of the checks' inputs (tests/test_cpu_sim.py, bench/dbg/sim_check.py): the GPU tests' shapes
# (tests/test_cuda_gpu.py SHAPES) with shorter sequences
SIM_SHAPES = [
    ([900, 1, 0, 209, 16, 300, 219, 17], 8, 4, torch.bfloat16),
    ([int(x) for x in torch.randint(1, 300, (64,), generator=torch.Generator().manual_seed(1))], 2, 8, torch.bfloat16),
    ([513, 1096, 77], 4, 1, torch.float16),
    ([900, 40], 3, 3, torch.bfloat16),
    ([700, 250], 2, 12, torch.float16),  # two query octets per KV head, the second one partial
]
SIM_MERGE_SHAPES = ((16, 32, 4), (3, 8, 64), (4, 12, 16), (2, 8, 512))
SIM_PAST_64_LENS = (3000, 300)
SIM_MOVING_LENS = (1500, 333, 17)
SIM_BALANCED_SCALE = 0.05
SIM_DEQUANT_SHAPES = (([513, 1096, 77, 1, 0], 4), ([900, 40, 17], 3))
# the race check's shapes (kernel_outputs under several schedules): bf16 and fp16 (each store kernel), an empty and a
# one-token sequence, two query octets a KV head
SIM_SCHEDULE_SHAPES = [([300, 17, 40, 1], 4, 4, torch.bfloat16), ([129, 64], 2, 12, torch.float16)]


def check_variant(run: Runner, variant, shapes, *, other=None, short_first: list[int] | None = None) -> dict:
    """Store (compare_store's rule: V and fp8 bytes identical, Lloyd-Max index flips only at a midpoint within 1e-5;
    int32 and int64 slot mappings the same bytes), decode with and without sinks + a sliding window (max error relative
    to max |out| <= DECODE_TOL, against the reference and within 2x of it against ``other``'s decode of the same
    cache), dequant on the third shape (fp32: the reference within 1e-5 relative, the inverse rotation's fp32
    summation order; bf16 / fp16: one rounding, 2^-8 / 2^-11; zeros past each length) of every ``(lens, hk, gqa,
    dtype)`` in ``shapes``; ``short_first``: lengths that replace the first shape's. Returns what it measured: the
    largest decode error a query dtype and the fp32 dequant's (``bench/dbg/sim_errors.py`` tabulates them)."""
    kern = run.load(variant)
    spec, dev = variant.spec, run.dev
    seen = {"decode": {}, "dequant_f32": None}
    for i, (lens, hk, g, dt) in enumerate(shapes):
        if short_first is not None and i == 0:
            lens = short_first
        case = Case(spec, lens, hk, g, dtype=dt, seed=i).build(dev)
        got = ref.allocate(spec, case["num_blocks"], hk, dev)
        want = ref.allocate(spec, case["num_blocks"], hk, dev)
        n = case["key"].shape[0]
        for s in range(0, n, 16384):
            sl = slice(s, s + 16384)
            ref.store(spec, case["key"][sl], case["value"][sl], want, case["slot_mapping"][sl])
        kern.store(case["key"], case["value"], got, case["slot_mapping"])
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
            seen["decode"][dt] = max(err, seen["decode"].get(dt, 0.0))
            if other is not None:
                t_out = other.decode(case["query"], want, case["block_table"], case["seq_lens"], sinks=sinks,
                                     sliding_window=window)
                assert rel_err(out, t_out) <= 2 * DECODE_TOL[dt], "the two backends disagree"
        if i == 2:
            k, v = kern.dequant(want, case["block_table"], case["seq_lens"], dtype=torch.float32)
            ek, ev = ref.dequant(spec, want, case["block_table"], case["seq_lens"])
            assert rel_err(k, ek) < 1e-5 and rel_err(v, ev) < 1e-6
            seen["dequant_f32"] = max(rel_err(k, ek), rel_err(v, ev))
            kb, vb = kern.dequant(want, case["block_table"], case["seq_lens"], dtype=torch.bfloat16)
            assert rel_err(kb, ek) < 2**-8 and rel_err(vb, ev) < 2**-8
            kh, vh = kern.dequant(want, case["block_table"], case["seq_lens"], dtype=torch.float16)
            assert rel_err(kh, ek) < 2**-11 and rel_err(vh, ev) < 2**-11  # one fp16 rounding
            for s, n in enumerate(lens):  # zeros past each length
                assert not kh[s, :, n:].any() and not vh[s, :, n:].any()
    return seen


def check_store_special_values(run: Runner, variant, dtype) -> None:
    """NaN, ±inf, huge, saturating, signed-zero and tie inputs store what the reference stores (compare_store's rule),
    the keys from an offset, strided view on the device (rows 3 elements, 6 bytes, in: not 16-byte aligned; the
    launcher realigns it)."""
    kern = run.load(variant)
    d = variant.spec.head_dim

    def store(key, value, cache, slots):
        # built on the device: a host view moved with .to() arrives as a contiguous copy (as until session 37)
        wide_k = torch.zeros(*key.shape[:2], d + 3, dtype=key.dtype, device=key.device)
        wide_k[:, :, 3:] = key
        view = wide_k[:, :, 3:]
        assert view.storage_offset() == 3 and not view.is_contiguous()
        kern.store(view, value, cache, slots)

    diff = special_store_diff(store, variant.spec, dtype, run.dev)
    assert diff.ok, diff.summary()


def check_store_rows(run: Runner, variant, dtype, tokens: int = 70, heads: int = 3) -> None:
    """A store of ``tokens`` x ``heads`` rows (several blocks, the last one partial; a padding slot among them, shuffled
    slots) against the reference store (compare_store's rule)."""
    kern = run.load(variant)
    spec, g = variant.spec, torch.Generator().manual_seed(3)
    key = (torch.randn(tokens, heads, spec.head_dim, generator=g) * 3).to(dtype)
    value = torch.randn(tokens, heads, spec.head_dim, generator=g).to(dtype)
    blocks = -(-tokens // spec.block_size) + 2
    slots = torch.randperm(blocks * spec.block_size, generator=g)[:tokens]
    slots[tokens // 2] = -1
    got = ref.allocate(spec, blocks, heads, run.dev)
    kern.store(key.to(run.dev), value.to(run.dev), got, slots.to(run.dev))
    want = ref.allocate(spec, blocks, heads, "cpu")
    ref.store(spec, key, value, want, slots)
    diff = compare_store(spec, got.cpu(), want, key, slots)
    assert diff.ok, diff.summary()


def check_merge_kernels(run: Runner, variant, dtype, shapes=((128, 32, 4), (3, 8, 64), (16, 12, 16), (2, 8, 512))):
    """Both decode merges (a block per row, a warp per row; cuda_launch.merge_kind picks one per shape) against the
    merge in float64: out = Σ 2^(lse_s - M)·acc_s / (Σ 2^(lse_s - M) + 2^(sink·log2 e - M)), empty rows (every lse
    -inf) zero. Tolerance: the output's rounding to bf16 / fp16 (2^-8 / 2^-11 of the row's largest value) plus fp32
    sums of at most `splits` terms (up to tuning.MAX_SPLITS, B=1's count at long contexts). ``shapes``: (batch,
    query heads, splits)."""
    kern = run.load(variant)
    head_dim, dev = variant.spec.head_dim, run.dev
    g = torch.Generator(device=dev).manual_seed(3)
    for b, hq, splits in shapes:
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
                kern.merge({"acc": acc, "lse": lse}, sk, out, hq, splits, run.stream(), kind)
                run.sync()
                eps = 2.0 ** -8 if dtype == torch.bfloat16 else 2.0 ** -11
                tol = (eps + splits * 2.0 ** -23) * want.abs().amax(-1, keepdim=True) + 1e-6
                assert ((out.double() - want).abs() <= tol).all(), (kind, b, hq, splits, sk is not None)
                assert (out[0, 1] == 0).all()


def check_decode_past_64_splits(run: Runner, variant, lens=(20000, 1500), split_counts=(None, 128, 300, 512)) -> None:
    """Few (sequence, KV head) units at a long context take more than 64 splits (cuda_launch.decode_splits: up to half
    the resident warps, tuning.MAX_SPLITS at most): the launcher's own count and explicit ones (512 leaves a fifth of
    the first sequence's splits and most of the short one's empty) against the reference decode within
    tqgen.testing.DECODE_TOL."""
    from tqgen.tuning import MAX_SPLITS

    spec, dev = variant.spec, run.dev
    kern = run.load(variant)
    hk, g = 2, 4
    case = Case(spec, list(lens), hk, g, seed=5).build(dev)
    cache = ref.allocate(spec, case["num_blocks"], hk, dev)
    kern.store(case["key"], case["value"], cache, case["slot_mapping"])
    q, bt, sl = case["query"], case["block_table"], case["seq_lens"]
    own = kern.num_splits_for(len(lens), hk, bt.shape[1] * spec.block_size, dev)
    assert own <= MAX_SPLITS, own
    if run.sms >= 100:  # half the resident warps: > 64 a unit
        assert own > 64, own
    exp = ref.decode(spec, q, cache, bt, sl)
    for splits in split_counts:
        out = kern.decode(q, cache, bt, sl, num_splits=splits)
        assert torch.isfinite(out).all(), splits
        err = rel_err(out, exp)
        assert err <= DECODE_TOL[q.dtype], f"{splits or own} splits: decode rel err {err:.2e}"


def check_moving_maximum(run: Runner, variant, ramp: str, lens=(6000, 333, 17), num_splits: int | None = None) -> None:
    """The decode's online softmax reduces the maximum across lanes only when a score of the tile exceeds the running
    maximum (the warp votes). Keys pulled towards each head's first query by a weight that grows with the position
    (rising: the maximum moves on many tiles of every split) or shrinks with it (falling: mostly on a split's first
    tiles), on ordinary random data besides; the reference decode within tqgen.testing.DECODE_TOL."""
    spec, dev = variant.spec, run.dev
    kern = run.load(variant)
    hk, g = 2, 4
    case = Case(spec, list(lens), hk, g, seed=11).build(dev)
    seq, pos = case["token_seq"], case["token_pos"].float()
    real = seq >= 0
    frac = pos / max(lens) if ramp == "rising" else 1.0 - pos / max(lens)
    q0 = case["query"].float()[:, ::g]  # [B, Hk, D]: each KV head's first query
    pull = (q0 / q0.norm(dim=-1, keepdim=True))[seq.clamp_min(0)] * (8.0 * frac)[:, None, None]
    key = (case["key"].float() + pull * real[:, None, None]).to(case["key"].dtype)
    cache = ref.allocate(spec, case["num_blocks"], hk, dev)
    ref.store(spec, key, case["value"], cache, case["slot_mapping"])
    out = kern.decode(case["query"], cache, case["block_table"], case["seq_lens"], num_splits=num_splits)
    exp = ref.decode(spec, case["query"], cache, case["block_table"], case["seq_lens"])
    assert torch.isfinite(out).all()
    err = rel_err(out, exp)
    assert err <= DECODE_TOL[case["query"].dtype], f"{ramp}: decode rel err {err:.2e}"


def check_unwritten_slots(run: Runner, variant, lens=(1000, 37, 16 * 7 + 3)) -> None:
    """Slots past a sequence's length in its last block hold whatever the cache held (here all-ones bytes: NaN fp16
    norms, scales and zeros, NaN fp8 keys): the decode reads them with the tile and masks them, and a masked token
    must weigh exactly nothing (p = 0 times a NaN value scale would be NaN). Lengths that end mid-block and mid-tile,
    several split counts; the reference decode within tqgen.testing.DECODE_TOL."""
    spec, dev = variant.spec, run.dev
    kern = run.load(variant)
    hk, g = 2, 4
    case = Case(spec, list(lens), hk, g, seed=13).build(dev)
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


#: the balanced decode's batches on the GPU: (lengths, GQA group, split counts in units of the block's splits;
#: None: the launcher's count)
BALANCED_CASES = (
    ("mixed", 4, (None, 1, 3)), ("equal3000", 4, (None, 2)), ("one5000", 4, (1, 4)), ("many", 8, (2,)),
    ("one-long", 4, (16,)),  # more blocks than one wave's cap: the ones past it exit
    ("equal200x64", 8, (2,)),  # equal lengths, the warp-a-row merge: the plan not read
    ("equal40x260", 4, (2,)),  # equal lengths past one round of tq_bal_equal_round: warp 0's plan
)


def balanced_lens(name: str, scale: float = 1.0) -> list[int]:
    """The lengths of one ``BALANCED_CASES`` batch, long ones scaled by ``scale`` (the simulator's shorter runs; the
    batch sizes and the empty / one-token / mid-tile lengths kept)."""
    s = (lambda n: max(1, int(n * scale)) if n > 40 else n)
    many = [int(x) * (i % 5 != 0) for i, x in enumerate(torch.randint(1, 3000, (64,), generator=torch.Generator().manual_seed(4)))]
    return {"mixed": [s(9000), 0, 17, 1, s(700), s(2500), 16, 33, s(4096), 5], "equal3000": [s(3000)] * 4,
            "one5000": [s(5000)], "many": [s(n) if n else 0 for n in many], "one-long": [s(20000)] + [10] * 40,
            "equal200x64": [s(200)] * 64, "equal40x260": [40] * 260}[name]


def check_balanced_decode(run: Runner, variant, cases, hk: int = 2) -> None:
    """A balanced decode (cuda_launch.balanced_blocks: the grid's blocks dealt to the sequences by their tiles) on
    ``cases`` of (lengths, GQA group, split counts): the reference decode within tqgen.testing.DECODE_TOL, as the
    classic decode of the same call; with and without a sliding window + sinks, balanced with the classic workspace,
    balanced with room for the wider grid, and classic. The plan the kernel wrote (each non-empty sequence's splits
    and first partial row) is the deal cuda_launch.balanced_blocks re-enacts, at the cap balanced_cap gives (one wave
    at 2 warps a block, 3/4 of one at 4); on equal lengths the warp-a-row merge takes the classic rows without reading
    the plan (a plan of -1s merges to the same bytes) up to 256 sequences."""
    from tqgen.cuda_launch import balanced_blocks, balanced_cap, decode_grid, merge_kind

    spec, dev = variant.spec, run.dev
    kern = run.load(variant)
    step = variant.options.split_step()
    for lens, g, split_counts in cases:
        case = Case(spec, lens, hk, g, seed=21).build(dev)
        cache = ref.allocate(spec, case["num_blocks"], hk, dev)
        kern.store(case["key"], case["value"], cache, case["slot_mapping"])
        q, bt, sl = case["query"], case["block_table"], case["seq_lens"]
        for window, sinks in ((None, None), (1000, case["sinks"])):
            exp = ref.decode(spec, q, cache, bt, sl, sinks=sinks, sliding_window=window)
            for splits in (None if c is None else c * step for c in split_counts):
                for balanced, wide in ((True, False), (True, True), (False, False)):
                    ns = splits or kern.num_splits_for(len(lens), hk, bt.shape[1] * spec.block_size, dev)
                    # wide: the workspace has room for balanced_width's grid (the uniform path keeps ns)
                    ws = kern.workspace(len(lens), q.shape[1], ns, dev, **({"num_kv_heads": hk} if wide else {}))
                    out = kern.decode(q, cache, bt, sl, num_splits=splits, sinks=sinks, sliding_window=window,
                                      balanced=balanced, workspace=ws)
                    label = (len(lens), g, window, splits, balanced, wide, merge_kind(len(lens) * hk * g, ns))
                    if balanced:
                        grid = decode_grid(variant.options, ns, hk, g, len(lens))
                        cap = balanced_cap(variant.options, run.sms, grid[1])
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
                            again, junk = torch.empty_like(out), torch.full_like(ws["plan"], -1)
                            sk = sinks.float().contiguous() if sinks is not None else None
                            kern.merge(ws, sk, again, q.shape[1], ns, run.stream(), kind,
                                       plan=junk, seq_lens=sl, window=window or 0)
                            assert torch.equal(again, out), label
                    assert torch.isfinite(out).all(), label
                    err = rel_err(out, exp)
                    assert err <= DECODE_TOL[q.dtype], f"{label}: decode rel err {err:.2e}"
                    if 0 in lens:
                        assert (out[[i for i, n in enumerate(lens) if n == 0]] == 0).all(), label


def check_dequant(run: Runner, variant, shapes=(([513, 4096, 77, 1, 0], 4), ([3000, 40, 17], 3))) -> None:
    """fp32 out: the reference's values within 1e-5 relative (the inverse rotation's fp32 summation order: its
    in-register and shuffle stages pair elements differently from the reference's matmul); bf16 / fp16 out: one
    rounding of those (2^-8 / 2^-11 relative); zeros past each length and up to max_len (a longer max_len than any
    sequence: whole warps and blocks past the end). ``shapes``: (lengths, KV heads)."""
    kern = run.load(variant)
    spec, dev = variant.spec, run.dev
    for i, (lens, hk) in enumerate(shapes):
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


def kernel_outputs(run: Runner, variant, shape, kern=None) -> dict[str, torch.Tensor]:
    """Every output of the variant's kernels on one ``(lens, hk, gqa, dtype)`` shape, raw (no comparison): the cache the
    store writes, the decode of that cache without and with sinks + a sliding window (splits and merge) and balanced
    (the plan's kernel), its bf16 and fp32 dequant. Two schedules of a correct kernel give the same bytes
    (tests/test_cpu_sim.py); ``kern``: loaded kernels to use instead of ``run.load(variant)``."""
    kern = kern or run.load(variant)
    lens, hk, g, dt = shape
    case = Case(variant.spec, lens, hk, g, dtype=dt, seed=11).build(run.dev)
    cache = ref.allocate(variant.spec, case["num_blocks"], hk, run.dev)
    kern.store(case["key"], case["value"], cache, case["slot_mapping"])
    out = {"cache": cache}
    for name, sinks, window, balanced in (("decode", None, None, False), ("decode_sinks_window", case["sinks"], 200, False),
                                          ("decode_balanced", None, None, True)):
        out[name] = kern.decode(case["query"], cache, case["block_table"], case["seq_lens"], sinks=sinks,
                                sliding_window=window, balanced=balanced)
    for name, dtype in (("dequant_bf16", torch.bfloat16), ("dequant_f32", torch.float32)):
        out[name + "_k"], out[name + "_v"] = kern.dequant(cache, case["block_table"], case["seq_lens"], dtype=dtype)
    return out
