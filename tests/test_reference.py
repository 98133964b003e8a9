"""The torch reference oracle (tqgen/reference.py): decode semantics, layout equivalence, bad input.

Small sizes throughout (CPU). The attention check uses its own float64 softmax with explicit loops
over batch and query head, over the reference's own dequantised K/V, so it tests decode's softmax,
GQA grouping, sinks, sliding window and block-table gathering, not the quantiser.
"""

import math

import numpy as np
import pytest
import torch

from tqgen import LayoutSpec, derive_layout
from tqgen import reference as ref

PRESET_NAMES = ["k8v4", "4bit_nc", "k3v4_nc", "3bit_nc"]
FP16_MAX = 65504.0


def make_sequences(spec, lens, hk, *, seed, dtype=torch.bfloat16, spare_blocks=3, key_scale=1.0):
    """Random K/V for sequences of the given lengths, stored through a shuffled block table.

    Every block of the cache is handed out in a random order (a random permutation), so neighbouring
    positions of a sequence live in unrelated blocks."""
    g = torch.Generator().manual_seed(seed)
    bs = spec.block_size
    nblk = [-(-n // bs) for n in lens]
    num_blocks = sum(nblk) + spare_blocks
    perm = torch.randperm(num_blocks, generator=g)
    table = torch.full((len(lens), max(1, max(nblk))), -1, dtype=torch.int32)
    slots, used = [], 0
    for i, (n, nb) in enumerate(zip(lens, nblk)):
        table[i, :nb] = perm[used:used + nb].to(torch.int32)
        used += nb
        pos = torch.arange(n)
        slots.append(table[i, pos // bs].to(torch.int64) * bs + pos % bs)
    slot_mapping = torch.cat(slots).to(torch.int32)
    n = slot_mapping.numel()
    key = (torch.randn(n, hk, spec.head_dim, generator=g) * key_scale).to(dtype)
    value = torch.randn(n, hk, spec.head_dim, generator=g).to(dtype)
    cache = ref.allocate(spec, num_blocks, hk)
    ref.store(spec, key, value, cache, slot_mapping)
    return dict(cache=cache, block_table=table, seq_lens=torch.tensor(lens, dtype=torch.int32), key=key,
                value=value, slot_mapping=slot_mapping, num_blocks=num_blocks)


def float64_attention(q, K, V, seq_lens, scale, sinks, window):
    """Independent decode attention: explicit loops over batch and query head, float64 softmax.

    q [B, Hq, D]; K, V [B, Hk, L, D]; query head h reads KV head h // (Hq / Hk)."""
    b_count, hq, d = q.shape
    hk = K.shape[1]
    group = hq // hk
    out = torch.zeros(b_count, hq, d, dtype=torch.float64)
    for b in range(b_count):
        n = int(seq_lens[b])
        first = max(0, n - window) if window is not None else 0  # the last `window` positions
        for h in range(hq):
            kv = h // group
            qv = q[b, h].double()
            logits = [float(qv @ K[b, kv, j].double()) * scale for j in range(first, n)]
            sink = float(sinks[h]) if sinks is not None else None
            if not logits:
                continue  # nothing to attend to (the sink alone carries no value): zeros
            m = max(logits + ([sink] if sink is not None else []))
            weights = [math.exp(x - m) for x in logits]
            den = sum(weights) + (math.exp(sink - m) if sink is not None else 0.0)
            acc = torch.zeros(d, dtype=torch.float64)
            for w, j in zip(weights, range(first, n)):
                acc += (w / den) * V[b, kv, j].double()
            out[b, h] = acc
    return out


# --------------------------------------------------------------------------------- decode
DECODE_CASES = [
    # (preset, layout, gqa, sinks, window)
    ("4bit_nc", "soa", 1, False, None),
    ("4bit_nc", "soa", 4, True, None),
    ("4bit_nc", "soa", 8, False, 6),
    ("k3v4_nc", "aos", 4, True, 5),
    ("k3v4_nc", "aos", 8, True, None),
    ("k8v4", "aos", 1, True, 7),
    ("k8v4", "soa", 8, False, None),
    ("3bit_nc", "aos", 4, False, 40),  # window longer than every sequence: no effect
    ("3bit_nc", "soa", 1, True, 1),  # window 1: only the last position
]


@pytest.mark.parametrize("preset,layout,gqa,sinks,window", DECODE_CASES,
                         ids=[f"{p}-{lay}-gqa{g}-{'sinks' if s else 'nosinks'}-w{w}" for p, lay, g, s, w in DECODE_CASES])
def test_decode_equals_float64_attention_over_dequantised_cache(preset, layout, gqa, sinks, window):
    spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=64)
    hk = 2
    lens = [21, 0, 35, 16]  # a seq_len-0 sequence, a partial block, an exact block
    c = make_sequences(spec, lens, hk, seed=gqa * 10 + len(preset))
    g = torch.Generator().manual_seed(5)
    hq = hk * gqa
    q = torch.randn(len(lens), hq, spec.head_dim, generator=g).to(torch.bfloat16)
    s = (torch.randn(hq, generator=g) * 2) if sinks else None
    scale = 0.3  # not 1/sqrt(D): the scale argument must be used
    out = ref.decode(spec, q, c["cache"], c["block_table"], c["seq_lens"], scale=scale, sinks=s,
                     sliding_window=window)
    K, V = ref.dequant(spec, c["cache"], c["block_table"], c["seq_lens"])
    want = float64_attention(q, K, V, c["seq_lens"], scale, s, window)
    assert out.shape == (len(lens), hq, spec.head_dim) and out.dtype == torch.float32
    assert not torch.isnan(out).any() and torch.isfinite(out).all()
    assert torch.equal(out[1], torch.zeros_like(out[1]))  # seq_len 0: zeros, never NaN
    # both are float64 softmaxes over the same float32 K/V; the reference rounds its output to float32
    # (2^-24 relative), so 1e-5 relative to max|out| leaves a wide margin and catches any semantic slip
    err = float((out.double() - want).abs().max() / want.abs().max())
    assert err < 1e-5, f"rel err {err:.2e}"


def test_decode_default_scale_and_sink_effect():
    spec = LayoutSpec.from_preset("4bit_nc", layout="soa", head_dim=64)
    c = make_sequences(spec, [30, 9], 1, seed=3)
    q = torch.randn(2, 4, 64, generator=torch.Generator().manual_seed(1)).to(torch.float16)
    K, V = ref.dequant(spec, c["cache"], c["block_table"], c["seq_lens"])
    out = ref.decode(spec, q, c["cache"], c["block_table"], c["seq_lens"])
    want = float64_attention(q, K, V, c["seq_lens"], 1 / math.sqrt(64), None, None)
    assert float((out.double() - want).abs().max() / want.abs().max()) < 1e-5
    # a huge sink takes (almost) all the probability mass: the output shrinks toward zero
    big = ref.decode(spec, q, c["cache"], c["block_table"], c["seq_lens"], sinks=torch.full((4,), 50.0))
    assert float(big.abs().max()) < 1e-6 * float(out.abs().max())


def test_decode_of_only_empty_sequences_is_zero():
    spec = LayoutSpec.from_preset("k3v4_nc", head_dim=64)
    cache = ref.allocate(spec, 2, 2)
    q = torch.randn(3, 4, 64).to(torch.bfloat16)
    table = torch.zeros(3, 1, dtype=torch.int32)
    lens = torch.zeros(3, dtype=torch.int32)
    out = ref.decode(spec, q, cache, table, lens, sinks=torch.zeros(4))
    assert torch.equal(out, torch.zeros(3, 4, 64))
    K, V = ref.dequant(spec, cache, table, lens)
    assert K.shape == (3, 2, 0, 64) and V.shape == (3, 2, 0, 64)


def test_dequant_layout_and_values_follow_the_block_table():
    """dequant returns [B, Hk, max_len, D], zeros past each seq_len, values at the right positions."""
    spec = LayoutSpec.from_preset("4bit_nc", layout="soa", head_dim=64)
    c = make_sequences(spec, [5, 40], 2, seed=11)
    K, V = ref.dequant(spec, c["cache"], c["block_table"], c["seq_lens"])
    assert K.shape == V.shape == (2, 2, 40, 64)
    assert torch.equal(K[0, :, 5:], torch.zeros_like(K[0, :, 5:])) and torch.equal(V[0, :, 5:], torch.zeros_like(V[0, :, 5:]))
    # sequence 1 token 17 is stored row 5 + 17 of the key tensor; its dequantised value is close to it
    v_true = c["value"][5 + 17].float()  # [Hk, D]
    step = (v_true.max(-1).values - v_true.min(-1).values) / 15  # 4-bit: error ≤ step/2 (+ fp16 metadata)
    assert ((V[1, :, 17] - v_true).abs() <= step[:, None] * 0.51 + 1e-3).all()


# -------------------------------------------------------------------------- AoS vs SoA, fold
AOS_SOA_CASES = [(p, fold) for p in PRESET_NAMES for fold in (False, True) if not (fold and p == "k8v4")]  # fp8: no norm


@pytest.mark.parametrize("preset,fold", AOS_SOA_CASES, ids=[f"{p}-{'fold' if f else 'nofold'}" for p, f in AOS_SOA_CASES])
def test_aos_and_soa_dequantise_bit_identically(preset, fold):
    results = []
    for layout in ("aos", "soa"):
        spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=64, fold_norm=fold)
        c = make_sequences(spec, [37, 0, 16], 3, seed=42)  # same seed: same inputs, same block table
        results.append((c["cache"], *ref.dequant(spec, c["cache"], c["block_table"], c["seq_lens"])))
    (ca, ka, va), (cs, ks, vs) = results
    assert ca.shape == cs.shape and not torch.equal(ca, cs)  # the bytes really are arranged differently
    assert torch.equal(ka, ks) and torch.equal(va, vs)  # bit-identical dequantised K and V


@pytest.mark.parametrize("layout", ["aos", "soa"])
@pytest.mark.parametrize("preset", ["4bit_nc", "k3v4_nc", "3bit_nc"])
def test_fold_on_and_off_agree_within_fp16_rounding_of_the_norm(preset, layout):
    """Folded: fp16(n/‖c‖)·c; unfolded: fp16(n)·(c/‖c‖). The same codes (folding does not change them);
    the scalars differ by two fp16 roundings, each ≤ 2^-11 relative, so per vector
    ‖k_fold - k_unfold‖ / ‖k_unfold‖ ≤ 2^-10·(1 + 2^-10) (+ a few float32 ulps, 2^-21 here).
    In the original domain both are multiplied by Π in float32, which adds ≤ 2·D·2^-24·‖|Π|‖ ≈ 1e-4
    in the worst case (D=64); the rotated-domain check is the tight one."""
    keys = torch.randn(64, 2, 64, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    rotated, original = [], []
    for fold in (False, True):
        spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=64, fold_norm=fold)
        fields = ref.encode_keys(spec, keys.reshape(-1, 64))
        rotated.append(ref.decode_keys(spec, fields, rotated=True))
        c = make_sequences(spec, [50, 14], 2, seed=8)
        original.append(ref.dequant(spec, c["cache"], c["block_table"], c["seq_lens"])[0])
    tight = 2**-10 * (1 + 2**-10) + 2**-21
    rel = ((rotated[0] - rotated[1]).norm(dim=-1) / rotated[0].norm(dim=-1)).max()
    assert float(rel) <= tight, float(rel)
    mask = original[0].norm(dim=-1) > 0  # positions past a seq_len are zero in both
    rel = ((original[0] - original[1]).norm(dim=-1)[mask] / original[0].norm(dim=-1)[mask]).max()
    assert float(rel) <= tight + 2 * 64 * 2**-24 * math.sqrt(64), float(rel)
    assert float(rel) > 0  # the two really are different roundings (the test is not comparing a cache to itself)


# ------------------------------------------------------------------------- store behaviour
@pytest.mark.parametrize("layout", ["aos", "soa"])
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_store_is_deterministic(preset, layout):
    spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=64)
    a = make_sequences(spec, [23, 9], 2, seed=5)
    b = make_sequences(spec, [23, 9], 2, seed=5)
    assert torch.equal(a["cache"], b["cache"]) and bool(a["cache"].any())
    again = a["cache"].clone()
    ref.store(spec, a["key"], a["value"], again, a["slot_mapping"])  # storing the same input again
    assert torch.equal(again, a["cache"])


def _slot_byte_mask(spec, cache, slots):
    """Bool mask over the flat cache: every byte that belongs to the given slots (all heads, all fields)."""
    page = derive_layout(spec).page(cache.shape[2])
    mask = torch.zeros(cache.numel(), dtype=torch.bool)
    for s in slots:
        blk, t = divmod(int(s), spec.block_size)
        for h in range(cache.shape[2]):
            for fa in page.fields:
                start = blk * page.block_bytes + fa.byte(t, h)
                mask[start:start + fa.nbytes] = True
    return mask


@pytest.mark.parametrize("layout", ["aos", "soa"])
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_slot_minus_one_skips(preset, layout):
    spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=64)
    g = torch.Generator().manual_seed(2)
    key = torch.randn(5, 2, 64, generator=g).to(torch.float16)
    value = torch.randn(5, 2, 64, generator=g).to(torch.float16)
    cache = ref.allocate(spec, 2, 2)
    ref.store(spec, key, value, cache, torch.full((5,), -1, dtype=torch.int32))
    assert not cache.any()  # every token skipped: bytes stay zero
    sm = torch.tensor([3, -1, 17, -1, 30], dtype=torch.int32)
    ref.store(spec, key, value, cache, sm)
    only_kept = ref.allocate(spec, 2, 2)
    keep = sm >= 0
    ref.store(spec, key[keep], value[keep], only_kept, sm[keep])
    assert torch.equal(cache, only_kept)  # the skipped tokens wrote nothing
    written = _slot_byte_mask(spec, cache, [3, 17, 30])
    assert not cache.view(-1)[~written].any()  # no byte outside the kept slots was touched


# ------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_huge_bf16_values_saturate_to_the_fp16_range(preset):
    """|v| = 1e5 (representable in bf16, not in fp16). The reference clamps values to ±65504 (the fp16
    metadata range, documented in tqgen/reference.py) before quantising, so dequantised values are
    finite and within one quantisation step of the clamped value: rounding gives ≤ step/2, the fp16
    scale adds ≤ levels·step·2^-11 (< step/8 for 4 bits), the fp16 zero is exact at ±65504."""
    spec = LayoutSpec.from_preset(preset, head_dim=64)
    levels = 2**spec.value_bits - 1
    g = torch.Generator().manual_seed(4)
    v = torch.randn(4, 1, 64, generator=g) * 100
    v[0, 0, :4] = torch.tensor([1e5, -1e5, 7e4, -3e4])
    v[1, 0, :] = 1e5  # constant, above the fp16 range
    v[2, 0, :] = -1e5
    v[3, 0, ::2] = 1e5
    v = v.to(torch.bfloat16)
    k = v.clone()  # huge keys too: the fp16 norm (or fp8 element) saturates instead of overflowing
    cache = ref.allocate(spec, 1, 1)
    ref.store(spec, k, v, cache, torch.arange(4, dtype=torch.int32))
    K, V = ref.dequant(spec, cache, torch.zeros(1, 1, dtype=torch.int32), torch.tensor([4], dtype=torch.int32))
    assert torch.isfinite(K).all() and torch.isfinite(V).all()
    want = v.float().clamp(-FP16_MAX, FP16_MAX)[:, 0]
    step = (want.max(-1).values - want.min(-1).values) / levels
    got = V[0, 0]
    err = (got - want).abs()
    assert (err <= step[:, None]).all(), f"max err/step {float((err / step[:, None].clamp_min(1e-30)).max()):.3f}"
    assert torch.equal(got[1], torch.full((64,), FP16_MAX)) and torch.equal(got[2], torch.full((64,), -FP16_MAX))


@pytest.mark.parametrize("layout", ["aos", "soa"])
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_nan_in_one_token_touches_only_its_own_slots(preset, layout):
    spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=64)
    g = torch.Generator().manual_seed(9)
    key = torch.randn(6, 2, 64, generator=g).to(torch.bfloat16)
    value = torch.randn(6, 2, 64, generator=g).to(torch.bfloat16)
    sm = torch.tensor([0, 5, 16, 17, 31, 2], dtype=torch.int32)
    clean = ref.allocate(spec, 2, 2)
    ref.store(spec, key, value, clean, sm)
    for bad_key, bad_value in ((True, False), (False, True)):
        k2, v2 = key.clone(), value.clone()
        if bad_key:
            k2[3, :, 7] = float("nan")  # token 3 (slot 17), both heads
        if bad_value:
            v2[3, 1, 0] = float("nan")  # token 3, head 1
        dirty = ref.allocate(spec, 2, 2)
        ref.store(spec, k2, v2, dirty, sm)
        own = _slot_byte_mask(spec, dirty, [17])
        assert torch.equal(dirty.view(-1)[~own], clean.view(-1)[~own])  # every other slot unchanged
        assert not torch.equal(dirty.view(-1)[own], clean.view(-1)[own])  # the NaN did reach its own slot


def _store_args(spec, **override):
    g = torch.Generator().manual_seed(0)
    args = dict(key=torch.randn(2, 2, 128, generator=g).half(), value=torch.randn(2, 2, 128, generator=g).half(),
                cache=ref.allocate(spec, 2, 2), slot_mapping=torch.tensor([0, 1], dtype=torch.int32))
    args.update(override)
    return args


BAD_STORE = {
    # id: (override, substrings the message must contain)
    "float32-key": (dict(key=torch.randn(2, 2, 128)), ["key", "torch.float32", "float16 or bfloat16"]),
    "float32-value": (dict(value=torch.randn(2, 2, 128)), ["value", "torch.float32", "float16 or bfloat16"]),
    "mixed-dtypes": (dict(value=torch.randn(2, 2, 128).bfloat16()), ["value dtype", "bfloat16", "float16"]),
    "int16-slots": (dict(slot_mapping=torch.tensor([0, 1], dtype=torch.int16)), ["slot_mapping", "int16", "int32"]),
    "float-slots": (dict(slot_mapping=torch.tensor([0.0, 1.0])), ["slot_mapping", "float32", "int32"]),
    "slots-wrong-length": (dict(slot_mapping=torch.tensor([0, 1, 2], dtype=torch.int32)), ["slot_mapping", "[3]", "[2]"]),
    "2d-key": (dict(key=torch.randn(2, 256).half()), ["key", "[2, 256]", "[N, 2, 128]"]),
    "kv-heads-mismatch": (dict(key=torch.randn(2, 3, 128).half(), value=torch.randn(2, 3, 128).half()),
                          ["key shape", "[2, 3, 128]", "[N, 2, 128]", "num_kv_heads"]),
    "tokens-mismatch": (dict(value=torch.randn(3, 2, 128).half()), ["value shape", "[3, 2, 128]", "[2, 2, 128]"]),
    "head-dim-mismatch": (dict(key=torch.randn(2, 2, 64).half(), value=torch.randn(2, 2, 64).half()),
                          ["key shape", "[2, 2, 64]", "128", "head_dim"]),
    "slot-past-the-end": (dict(slot_mapping=torch.tensor([0, 32], dtype=torch.int32)),
                          ["slot_mapping", "[0, 32]", "0..31", "-1 (skip)"]),
    "slot-below-minus-one": (dict(slot_mapping=torch.tensor([-2, 1], dtype=torch.int32)),
                             ["slot_mapping", "[-2, 1]", "-1 (skip)"]),
    "cache-wrong-slot": (dict(cache=torch.zeros(2, 16, 2, 100, dtype=torch.uint8)), ["cache shape", "100", "134"]),
    "cache-wrong-dtype": (dict(cache=torch.zeros(2, 16, 2, 134, dtype=torch.int8)), ["cache", "torch.int8", "uint8"]),
}


@pytest.mark.parametrize("name", list(BAD_STORE))
def test_bad_store_input_raises_a_clear_value_error(name):
    spec = LayoutSpec.from_preset("4bit_nc")
    override, needles = BAD_STORE[name]
    args = _store_args(spec, **override)
    before = args["cache"].clone()
    with pytest.raises(ValueError) as e:
        ref.store(spec, **args)
    msg = str(e.value)
    assert "got" in msg and "expected" in msg, msg  # what was given and what is expected
    for needle in needles:
        assert needle in msg, f"{needle!r} not in {msg!r}"
    assert torch.equal(args["cache"], before)  # nothing written on error


def test_bad_decode_input_raises_a_clear_value_error():
    spec = LayoutSpec.from_preset("4bit_nc", head_dim=64)
    c = make_sequences(spec, [10], 2, seed=1)
    q = torch.randn(1, 4, 64).half()
    with pytest.raises(ValueError, match=r"query.*\[1, 4, 32\].*\[1, Hq, 64\]"):
        ref.decode(spec, torch.randn(1, 4, 32).half(), c["cache"], c["block_table"], c["seq_lens"])
    with pytest.raises(ValueError, match="num_q_heads.*multiple of num_kv_heads=2"):
        ref.decode(spec, torch.randn(1, 3, 64).half(), c["cache"], c["block_table"], c["seq_lens"])
    with pytest.raises(ValueError, match="seq_lens"):
        ref.decode(spec, q, c["cache"], c["block_table"], torch.tensor([10, 3], dtype=torch.int32))
    with pytest.raises(ValueError, match="max_blocks·block_size = 16"):
        ref.decode(spec, q, c["cache"], c["block_table"], torch.tensor([17], dtype=torch.int32))
    with pytest.raises(ValueError, match="block_table"):
        ref.decode(spec, q, c["cache"], torch.tensor([[99]], dtype=torch.int32), c["seq_lens"])
    with pytest.raises(ValueError, match="sinks"):
        ref.decode(spec, q, c["cache"], c["block_table"], c["seq_lens"], sinks=torch.zeros(3))
    with pytest.raises(ValueError, match="sliding_window"):
        ref.decode(spec, q, c["cache"], c["block_table"], c["seq_lens"], sliding_window=0)


def test_table_checks_read_the_device_once(monkeypatch):
    """The seq_lens / block-table value checks of every decode and dequant call read back to the host once, however
    many sequences (each read is a device sync on a GPU: they were two per sequence), and still name the first bad
    sequence; a negative or too long seq_len is named too."""
    spec = LayoutSpec.from_preset("4bit_nc", head_dim=64)
    b, nblk = 64, 4
    cache = ref.allocate(spec, b * nblk, 2, "cpu")
    bt = torch.arange(b * nblk, dtype=torch.int32).view(b, nblk)
    lens = torch.full((b,), 3 * spec.block_size, dtype=torch.int32)
    reads = []
    for name in ("tolist", "item", "__int__", "__bool__", "__index__", "cpu", "numpy"):
        orig = getattr(torch.Tensor, name)
        monkeypatch.setattr(torch.Tensor, name, lambda self, *a, _o=orig, _n=name: reads.append(_n) or _o(self, *a))
    ref.check_tables(spec, cache, bt, lens)
    assert reads == ["cpu", "tolist"], reads  # one read back: a copy to the host, then a list of it
    bad = bt.clone()
    bad[37, 2] = b * nblk  # past the cache, inside sequence 37's three blocks
    bad[50, 3] = -1  # outside every sequence's blocks: ignored
    with pytest.raises(ValueError, match=r"block_table\[37\]: got entries \[148, 149, 256\]"):
        ref.check_tables(spec, cache, bad, lens)
    for i, n, what in ((5, -1, "min -1"), (9, nblk * spec.block_size + 1, f"max {nblk * spec.block_size + 1}")):
        wrong = lens.clone()
        wrong[i] = n
        with pytest.raises(ValueError, match=f"seq_lens: got {what}"):
            ref.check_tables(spec, cache, bt, wrong)


def test_e4b15_matches_tritons_gpu_conversion():
    """Every finite bf16 value through Triton's fp32→float8e4b15 cast on the H200
    (bench/probe_e4b15.py): saturation at 1.75 and ties rounded away from zero."""
    from pathlib import Path

    from tqgen.ir import KeyCodec
    data = np.load(Path(__file__).parent / "data" / "e4b15_triton_h200.npz")
    x = torch.from_numpy(data["bf16_bits"].view(np.int16)).view(torch.bfloat16).float()
    want = torch.from_numpy(data["codes"])
    assert torch.equal(ref._fp8_encode(x, KeyCodec.FP8_E4B15), want)


def test_rotated_fp8_keys_store_the_rotated_key():
    """rotation='hadamard' on fp8 keys: the bytes are fp8(k·Πᵀ), dequant returns (fp8 value)·Π, within
    e4m3's half-ulp (2^-4 relative per rotated element, so ‖Δk‖ ≤ 2^-4‖k‖ — Π is orthonormal)."""
    from tqgen.reference import _fp8_encode, rotation
    spec = LayoutSpec.from_preset("k8v4", layout="soa", rotation="hadamard")
    g = torch.Generator().manual_seed(0)
    k = torch.randn(5, 2, 128, generator=g) * 3
    k[:, :, 7] += 40.0  # an outlier channel: spread over all 128 rotated elements
    k = k.to(torch.bfloat16)
    v = torch.randn(5, 2, 128, generator=g).to(torch.bfloat16)
    cache = ref.allocate(spec, 1, 2)
    ref.store(spec, k, v, cache, torch.arange(5))
    f = ref._read_fields(derive_layout(spec), cache, torch.zeros(10, dtype=torch.long),
                         torch.arange(5).repeat_interleave(2), torch.arange(2).repeat(5))
    k = k.float()
    want = _fp8_encode(k.reshape(10, 128) @ rotation(spec).T, spec.key_codec)
    assert torch.equal(f["k_data"], want)
    kd, _ = ref.dequant(spec, cache, torch.zeros(1, 1, dtype=torch.int32), torch.tensor([5], dtype=torch.int32))
    got = kd[0].transpose(0, 1)  # [5, 2, 128]
    err = (got - k).norm(dim=-1) / k.norm(dim=-1)
    assert float(err.max()) <= 2.0**-4
