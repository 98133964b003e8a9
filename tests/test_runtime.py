"""tqgen_runtime: device detection, selection chains with reasons, fallback on load failure, forced
backends, and the public API on the CPU (reference and the Triton interpreter)."""

import math

import pytest
import torch

import tqgen_runtime as tqr
from tqgen import reference as ref
from tqgen.testing import DECODE_TOL, Case, prefill_batch_case, rel_err
from tqgen_runtime.select import SelectionError, target_from_capability

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="CPU runtime tests; the GPU ones are in test_runtime_gpu.py")

CHAINS = {
    "sm80": ["cuda", "triton", "reference"], "sm86": ["cuda", "triton", "reference"],
    "sm89": ["cuda", "triton", "reference"], "sm90": ["cuda", "triton", "reference"],
    "gfx90a": ["hip", "triton", "reference"], "gfx942": ["hip", "triton", "reference"],
    "gfx950": ["triton:gfx950_mfma", "hip", "triton", "reference"],
}


@pytest.mark.parametrize("target", list(CHAINS))
def test_plan_for_every_fake_device(target):
    p = tqr.plan("4bit_nc", layout="soa", num_kv_heads=8, num_q_heads=64, device=target)
    names = [c.name for c, _ in p.candidates["decode"]]
    assert names == CHAINS[target]
    reasons = dict((c.name, r) for c, r in p.candidates["decode"])
    cpp = "hip" if target.startswith("gfx") else "cuda"
    assert reasons[cpp] == [] and reasons["triton"] == [] and reasons["reference"] == []
    assert p.chosen("decode").name == ("triton:gfx950_mfma" if target == "gfx950" else cpp)
    assert p.chosen("store").name == cpp  # the special is decode-only
    # a GQA group beyond the C++ kernels' 16-row tile goes to Triton, with the reason kept
    p32 = tqr.plan("4bit_nc", layout="soa", num_kv_heads=2, num_q_heads=64, device=target)
    r32 = dict((c.name, r) for c, r in p32.candidates["decode"])
    assert any("gqa=32" in r and "at most 16" in r for r in r32[cpp]), r32[cpp]
    assert p32.chosen("decode").name == "triton"  # gqa 32 is outside the gfx950 special too
    if target == "gfx950":
        assert reasons["triton:gfx950_mfma"] == []
        store = dict((c.name, r) for c, r in p.candidates["store"])
        assert "implements decode only" in store["triton:gfx950_mfma"][0]


def test_gfx950_special_reasons_are_specific():
    p = tqr.plan("4bit_nc", layout="soa", num_kv_heads=8, num_q_heads=32, device="gfx950", sinks=True)
    r = dict((c.name, rs) for c, rs in p.candidates["decode"])["triton:gfx950_mfma"]
    assert any("gqa=4" in x for x in r) and any("sinks" in x for x in r)
    p = tqr.plan("3bit_nc", layout="aos", num_kv_heads=8, num_q_heads=64, device="gfx950")
    r = dict((c.name, rs) for c, rs in p.candidates["decode"])["triton:gfx950_mfma"]
    assert any("layout='aos'" in x for x in r) and any("3bit_nc" in x for x in r)


def test_fp8_on_gfx90a_falls_to_reference_with_reason():
    p = tqr.plan("k8v4", num_kv_heads=8, num_q_heads=32, device="gfx90a")
    r = dict((c.name, rs) for c, rs in p.candidates["decode"])
    assert any("gfx90a has no fp8" in x for x in r["triton"]) and p.chosen("decode").name == "reference"


@pytest.mark.parametrize("target", ["sm90", "sm80", "gfx942"])
def test_head_dim_96_takes_the_cpp_decode_per_kernel(target):
    """head_dim 96 (Phi-3-mini; session 50): with the orthogonal rotation the C++ variant has every kernel and serves
    them all (session 51: the store and dequant rotate by m16n8k16 products; session 52 timed them 2.7-3.4x / 3.8-5.1x
    faster than Triton's on an H100), 3bit_nc too (its value eighths of 4.5 bytes: byte loads on AMD, the line loads' shifted words on NVIDIA); fp8 keys unrotated
    take the C++ decode, and on NVIDIA Triton's store and dequant (measured faster at 96: select._ordered); rotated
    by the orthogonal Πᵀ, the C++ store and dequant."""
    cpp = "hip" if target.startswith("gfx") else "cuda"
    kw = dict(layout="soa", head_dim=96, num_kv_heads=32, num_q_heads=32, device=target)
    p = tqr.plan("4bit_nc", rotation="orthogonal", **kw)
    assert [p.chosen(k).name for k in ("store", "decode", "dequant")] == [cpp, cpp, cpp]
    forced = tqr.plan("4bit_nc", rotation="orthogonal", backend=cpp, **kw)
    assert [forced.chosen(k).name for k in ("store", "decode", "dequant")] == [cpp, cpp, cpp]
    p3 = tqr.plan("3bit_nc", rotation="orthogonal", **kw)
    assert [p3.chosen(k).name for k in ("store", "decode", "dequant")] == [cpp, cpp, cpp]
    codec = {"gfx942": {"key_codec": "fp8_e4m3fnuz"}, "sm80": {"key_codec": "fp8_e4b15"}}.get(target, {})
    p8 = tqr.plan("k8v4", **codec, **kw)
    fp8 = "triton" if cpp == "cuda" else "hip"
    assert [p8.chosen(k).name for k in ("store", "decode", "dequant")] == [fp8, cpp, fp8]
    r8 = tqr.plan("k8v4", rotation="orthogonal", rotation_seed=3, **codec, **kw)  # rotated by Πᵀ: C++ throughout
    assert [r8.chosen(k).name for k in ("store", "decode", "dequant")] == [cpp, cpp, cpp]


@pytest.mark.parametrize("target", ["sm90", "sm80", "gfx942"])
def test_head_dim_80_takes_the_cpp_kernels(target):
    """head_dim 80 (Phi-2): the C++ variant has every kernel (session 54: the decode; session 55: the store and rows
    dequant, rows of 5 lanes of 16 elements) and serves them all, unrotated fp8 keys included (timed faster than
    Triton's on an H100 in session 56: select._ordered); at 96 (lanes of 32) Triton's store and dequant of unrotated
    fp8 keys come first on NVIDIA, measured faster there."""
    cpp = "hip" if target.startswith("gfx") else "cuda"
    kw = dict(layout="aos", head_dim=80, num_kv_heads=32, num_q_heads=32, device=target)
    for preset in ("4bit_nc", "k3v4_nc", "3bit_nc"):
        p = tqr.plan(preset, rotation="orthogonal", **kw)
        assert [p.chosen(k).name for k in ("store", "decode", "dequant")] == [cpp, cpp, cpp]
        assert [c.name for c, _ in p.candidates["store"]][:2] == [cpp, "triton"]
        assert p.candidates["store"][1][1] == []  # Triton's store eligible too: the fallback
    forced = tqr.plan("4bit_nc", rotation="orthogonal", backend=cpp, **kw)
    assert [forced.chosen(k).name for k in ("store", "decode", "dequant")] == [cpp, cpp, cpp]
    assert all(len(forced.candidates[k]) == 1 for k in ("store", "decode", "dequant"))  # no fallback candidate added
    codec = {"gfx942": {"key_codec": "fp8_e4m3fnuz"}, "sm80": {"key_codec": "fp8_e4b15"}}.get(target, {})
    for layout in ("aos", "soa"):
        p8 = tqr.plan("k8v4", **codec, **dict(kw, layout=layout))
        assert [p8.chosen(k).name for k in ("store", "decode", "dequant")] == [cpp, cpp, cpp]
    p96 = tqr.plan("k8v4", **codec, **dict(kw, head_dim=96, layout="soa"))  # (96: Triton's fp8 rows first on NVIDIA)
    rows96 = cpp if cpp == "hip" else "triton"
    assert [p96.chosen(k).name for k in ("store", "decode", "dequant")] == [rows96, cpp, rows96]
    d96 = tqr.plan("4bit_nc", rotation="orthogonal", **dict(kw, head_dim=96))  # (96: timed, the C++ rows first)
    assert [d96.chosen(k).name for k in ("store", "decode", "dequant")] == [cpp, cpp, cpp]


def test_capability_mapping():
    assert target_from_capability(8, 0)[0].value == "sm80"
    t, note = target_from_capability(8, 7)
    assert t.value == "sm86" and "sm87" in note
    assert target_from_capability(9, 0) == (target_from_capability(9, 0)[0], "")
    assert target_from_capability(10, 0)[0].value == "sm90"
    with pytest.raises(SelectionError, match="older than sm80"):
        target_from_capability(7, 5)


def test_cpu_without_interpreter_uses_reference(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    kv = tqr.load("4bit_nc", num_kv_heads=2, num_q_heads=8, device="cpu")
    assert kv.variants == {"store": "reference", "decode": "reference", "dequant": "reference"}
    with pytest.raises(SelectionError, match="TRITON_INTERPRET=1") as e:
        tqr.load("4bit_nc", num_kv_heads=2, num_q_heads=8, device="cpu", backend="triton")
    assert e.value.rejected


def test_cpu_interpreter_picks_triton():
    kv = tqr.load("3bit_nc", layout="soa", num_kv_heads=2, num_q_heads=8, device="cpu")
    assert all(v.startswith("triton-cpu-generic-soa-k3nc-v3") for v in kv.variants.values()), kv.variants
    assert kv.rejected == []


def test_load_failure_falls_back_with_reason(monkeypatch, caplog):
    import tqgen.triton_launch as tl_mod

    def broken(*a, **k):
        raise RuntimeError("simulated compile failure")

    monkeypatch.setattr(tl_mod, "load_triton", broken)
    with caplog.at_level("INFO", logger="tqgen_runtime"):
        kv = tqr.load("4bit_nc", num_kv_heads=2, num_q_heads=8, device="cpu")
    assert kv.variants["decode"] == "reference"
    reasons = dict(kv.rejected)
    assert "simulated compile failure" in reasons["decode:triton"][0] and "load failed" in reasons["decode:triton"][0]
    assert any("passed over" in r.message and "reference" in r.message for r in caplog.records)


def test_forcing_an_ineligible_backend_raises_with_every_reason():
    with pytest.raises(SelectionError) as e:
        tqr.load("k8v4", num_kv_heads=2, num_q_heads=8, device="cpu", backend="cuda")
    assert "forced backend" in str(e.value) and "need an NVIDIA GPU; this device is cpu" in str(e.value)
    with pytest.raises(SelectionError, match="unknown"):
        tqr.load("4bit_nc", num_kv_heads=2, num_q_heads=8, device="cpu", backend="vulkan")
    with pytest.raises(SelectionError, match="multiple of num_kv_heads"):
        tqr.load("4bit_nc", num_kv_heads=3, num_q_heads=8, device="cpu")


@pytest.mark.parametrize("backend", ["triton", "reference"])
@pytest.mark.parametrize("preset,layout", [("4bit_nc", "soa"), ("k8v4", "aos"), ("3bit_nc", "aos")])
def test_public_api_matches_reference(backend, preset, layout):
    kv = tqr.load(preset, layout=layout, num_kv_heads=2, num_q_heads=8, device="cpu", backend=backend)
    case = Case(kv.spec, [45, 0, 17], 2, 4, seed=4).build("cpu")
    cache = kv.allocate(case["num_blocks"])
    kv.store(case["key"], case["value"], cache, case["slot_mapping"])
    want = ref.allocate(kv.spec, case["num_blocks"], 2)
    ref.store(kv.spec, case["key"], case["value"], want, case["slot_mapping"])
    if backend == "reference":
        assert torch.equal(cache, want)
    out = kv.decode(case["query"], cache, case["block_table"], case["seq_lens"], sinks=case["sinks"], sliding_window=9)
    exp = ref.decode(kv.spec, case["query"], cache, case["block_table"], case["seq_lens"], sinks=case["sinks"],
                     sliding_window=9)
    assert out.dtype == torch.bfloat16 and rel_err(out, exp) <= DECODE_TOL[torch.bfloat16]
    k, v = kv.dequant(cache, case["block_table"], case["seq_lens"], dtype=torch.float32)
    ek, ev = ref.dequant(kv.spec, cache, case["block_table"], case["seq_lens"])
    assert rel_err(k, ek) < 1e-5 and rel_err(v, ev) < 1e-6
    args = (case["query"], cache, case["block_table"], case["seq_lens"])
    if backend == "triton":
        # the Triton decode has length-balanced splits too, the default from 2 sequences; the classic ones on request
        assert kv.balanced_decode is True
        assert torch.equal(kv.decode(*args, balanced=True), kv.decode(*args))
        exp = ref.decode(kv.spec, *args)
        for bal in (False, True):
            assert rel_err(kv.decode(*args, balanced=bal), exp) <= DECODE_TOL[torch.bfloat16]
    else:
        # the reference has no splits: balanced=True is a clear error (not a silent run of something else)
        assert kv.balanced_decode is False
        with pytest.raises(ValueError, match="balanced=True needs a decode with length-balanced splits"):
            kv.decode(*args, balanced=True)
        assert torch.equal(kv.decode(*args, balanced=False), kv.decode(*args))


def test_layout_equivalence_through_the_public_api():
    outs = []
    for layout in ("aos", "soa"):
        kv = tqr.load("k3v4_nc", layout=layout, num_kv_heads=2, num_q_heads=16, device="cpu", fold_norm=True)
        case = Case(kv.spec, [40, 23], 2, 8, seed=8).build("cpu")
        cache = kv.allocate(case["num_blocks"])
        kv.store(case["key"], case["value"], cache, case["slot_mapping"])
        outs.append(kv.decode(case["query"], cache, case["block_table"], case["seq_lens"]))
    assert rel_err(outs[0], outs[1]) <= DECODE_TOL[torch.bfloat16] / 8


def test_workspace_decode_equals_plain_decode():
    kv = tqr.load("4bit_nc", layout="soa", num_kv_heads=2, num_q_heads=8, device="cpu")
    case = Case(kv.spec, [70, 5], 2, 4, seed=2).build("cpu")
    cache = kv.allocate(case["num_blocks"])
    kv.store(case["key"], case["value"], cache, case["slot_mapping"])
    ws = kv.workspace(max_batch=4)
    a = kv.decode(case["query"], cache, case["block_table"], case["seq_lens"], workspace=ws, check=False)
    b = kv.decode(case["query"], cache, case["block_table"], case["seq_lens"])
    assert ws.num_splits >= 1 and rel_err(a, b) <= DECODE_TOL[torch.bfloat16] / 8
    with pytest.raises(ValueError, match="max_batch"):
        kv.decode(case["query"].repeat(3, 1, 1), cache, case["block_table"].repeat(3, 1), case["seq_lens"].repeat(3),
                  workspace=ws)


def _chunked_prefill(kv, q, k, v, chunk, decode_max_tokens, sinks=None, window=None):
    """One sequence of n tokens in chunks of `chunk`, blocks 0.. in order."""
    n = q.shape[0]
    nblk = math.ceil(n / kv.spec.block_size)
    cache = kv.allocate(nblk)
    bt = torch.arange(nblk, dtype=torch.int32)[None]
    outs = []
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        outs.append(kv.prefill(q[s:e], k[s:e], v[s:e], cache, torch.arange(s, e, dtype=torch.int32), bt,
                               torch.tensor([e], dtype=torch.int32), torch.tensor([0, e - s], dtype=torch.int32),
                               sinks=sinks, sliding_window=window, decode_max_tokens=decode_max_tokens))
    return torch.cat(outs), cache


@pytest.mark.parametrize("sinks,window", [(False, None), (True, 24)])
def test_prefill_paths_agree(sinks, window):
    """Continuation chunks through the decode kernel (per-token lengths) and through dequant + SDPA
    read the same quantised cache: equal within the decode tolerance. The first chunk attends raw K/V,
    so chunked vs one-shot differ only by quantisation noise on the later chunks."""
    kv = tqr.load("4bit_nc", layout="soa", num_kv_heads=2, num_q_heads=8, device="cpu")
    g = torch.Generator().manual_seed(0)
    n = 70
    q = torch.randn(n, 8, 128, generator=g).to(torch.bfloat16)
    k = torch.randn(n, 2, 128, generator=g).to(torch.bfloat16)
    v = torch.randn(n, 2, 128, generator=g).to(torch.bfloat16)
    s = torch.randn(8, generator=g) if sinks else None
    by_decode, cache = _chunked_prefill(kv, q, k, v, 16, decode_max_tokens=10**9, sinks=s, window=window)
    by_sdpa, cache2 = _chunked_prefill(kv, q, k, v, 16, decode_max_tokens=0, sinks=s, window=window)
    assert torch.equal(cache, cache2)
    assert rel_err(by_decode, by_sdpa) <= DECODE_TOL[torch.bfloat16]
    one_shot, _ = _chunked_prefill(kv, q, k, v, n, decode_max_tokens=0, sinks=s, window=window)
    assert torch.equal(one_shot[:16], by_sdpa[:16])  # the first chunk is raw attention either way
    # later tokens see 4-bit keys/values: relative error of the order of sqrt(NMSE) ~ 0.1
    assert rel_err(by_sdpa, one_shot) < 0.25
    # and the decode path equals the reference oracle on the stored cache
    bt = torch.zeros(n - 16, cache.shape[0], dtype=torch.int32) + torch.arange(cache.shape[0], dtype=torch.int32)
    exp = ref.decode(kv.spec, q[16:], cache, bt, torch.arange(17, n + 1, dtype=torch.int32), sinks=s,
                     sliding_window=window)
    assert rel_err(by_decode[16:], exp) <= DECODE_TOL[torch.bfloat16]


def test_prefill_varlen_batch():
    kv = tqr.load("k8v4", layout="soa", num_kv_heads=2, num_q_heads=4, device="cpu")
    g = torch.Generator().manual_seed(1)
    lens_new, ctx = [5, 0, 40], [30, 0, 0]
    cache = kv.allocate(9)
    bt = torch.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8]], dtype=torch.int32)
    # history of sequence 0 first
    hk = torch.randn(30, 2, 128, generator=g).to(torch.bfloat16)
    kv.store(hk, hk, cache, torch.arange(30, dtype=torch.int32))
    t = sum(lens_new)
    q = torch.randn(t, 4, 128, generator=g).to(torch.bfloat16)
    k = torch.randn(t, 2, 128, generator=g).to(torch.bfloat16)
    slots = torch.cat([torch.arange(30, 35), torch.arange(96, 136)]).int()
    out = kv.prefill(q, k, k, cache, slots, bt, torch.tensor([35, 0, 40], dtype=torch.int32),
                     torch.tensor([0, 5, 5, 45], dtype=torch.int32))
    assert out.shape == q.shape and torch.isfinite(out).all()
    exp = ref.decode(kv.spec, q[:5], cache, bt[:1].expand(5, -1).contiguous(), torch.arange(31, 36, dtype=torch.int32))
    assert rel_err(out[:5], exp) <= DECODE_TOL[torch.bfloat16]
    with pytest.raises(ValueError, match="query_start_loc"):
        kv.prefill(q, k, k, cache, slots, bt, torch.tensor([35, 0, 40], dtype=torch.int32),
                   torch.tensor([0, 5, 45], dtype=torch.int32))


def _varlen_prefill_case(spec, hk, hq, ctxs, news, seed):
    """tqgen.testing.prefill_batch_case on the CPU, 4 pages a sequence, the history stored by the reference."""
    c = prefill_batch_case(spec, lambda *x: ref.store(spec, *x), hk, hq, ctxs, news, blocks=4, seed=seed)
    return tuple(c[n] for n in ("cache", "block_table", "query", "key", "value", "slot_mapping", "seq_lens",
                                "query_start_loc"))


@pytest.mark.parametrize("backend", ["reference", "triton"])
def test_prefill_batch_equals_one_sequence_at_a_time(sdpa_calls, backend, monkeypatch):
    """A varlen batch mixing every path (a first chunk, short chunks through one decode call, longer ones through
    the grouped dequant + SDPA; equal history and chunk length share an SDPA call, gathered where a first chunk lies
    between two such sequences) equals the same sequences prefilled one call each, and the short chunks
    equal the reference decode. Tolerance: one bf16 ulp of the output's largest magnitude (at most 2^-7 of max |out|:
    8 significant bits), the rounding of one differently batched SDPA / decode call; the reference decode within
    DECODE_TOL."""
    kv = tqr.load("4bit_nc", layout="soa", num_kv_heads=2, num_q_heads=4, head_dim=64, device="cpu",
                  backend=backend)
    ctxs, news = [30, 20, 0, 20, 20, 20, 9, 0], [3, 12, 7, 12, 12, 12, 2, 0]
    cache, bt, q, k, v, slots, lens, qsl = _varlen_prefill_case(kv.spec, 2, 4, ctxs, news, seed=4)
    single = cache.clone()
    # two sequences' K/V (32 tokens, 2 heads, D 64, K and V in bf16) a dequant call at most: the four longer chunks
    # take two calls, [1, 3] (a first chunk between them: one SDPA call, its queries gathered) and [4, 5] (views)
    monkeypatch.setattr(tqr.api, "PREFILL_DEQUANT_BYTES", 2 * 32 * 2 * 2 * 64 * 2)
    calls = sdpa_calls
    out = kv.prefill(q, k, v, cache, slots, bt, lens, qsl)
    assert calls == [(1, 7), (2, 12), (2, 12)]  # the first chunk, then the equal chunks of each dequant call
    want = torch.zeros_like(out)
    for i, (c, n) in enumerate(zip(ctxs, news)):
        a, e = int(qsl[i]), int(qsl[i + 1])
        if n:
            want[a:e] = kv.prefill(q[a:e], k[a:e], v[a:e], single, slots[a:e], bt[i:i + 1], lens[i:i + 1],
                                   torch.tensor([0, n], dtype=torch.int32))
    assert torch.equal(cache, single)
    ulp = 2.0 ** -7 * float(want.abs().max())
    assert float((out.float() - want.float()).abs().max()) <= ulp
    for i in (0, 5):  # the short chunks: the reference decode, one row a new token
        a, e, c = int(qsl[i]), int(qsl[i + 1]), ctxs[i]
        exp = ref.decode(kv.spec, q[a:e], cache, bt[i:i + 1].expand(e - a, -1).contiguous(),
                         torch.arange(c + 1, c + e - a + 1, dtype=torch.int32))
        assert rel_err(out[a:e], exp) <= DECODE_TOL[torch.bfloat16]


def test_prefill_rejects_bad_arguments():
    """The checks run once for the batch (their values read back with the lengths) and refuse before anything is
    stored: the cache is unchanged after every refusal."""
    kv = tqr.load("4bit_nc", layout="soa", num_kv_heads=2, num_q_heads=4, head_dim=64, device="cpu")
    cache, bt, q, k, v, slots, lens, qsl = _varlen_prefill_case(kv.spec, 2, 4, [5, 6], [2, 3], seed=5)
    before = cache.clone()
    with pytest.raises(ValueError, match="must rise from 0 to the 5 new tokens"):
        kv.prefill(q, k, v, cache, slots, bt, lens, torch.tensor([0, 3, 4], dtype=torch.int32))
    with pytest.raises(ValueError, match="query: got"):
        kv.prefill(q.float(), k, v, cache, slots, bt, lens, qsl)
    with pytest.raises(ValueError, match=r"slot_mapping: got values in \[\d+, 999\]"):
        kv.prefill(q, k, v, cache, torch.cat([slots[:-1], torch.tensor([999], dtype=torch.int32)]), bt, lens, qsl)
    with pytest.raises(ValueError, match=r"block_table\[1\]: got entries \[77\]"):  # its one block of 9 tokens
        kv.prefill(q, k, v, cache, slots, torch.tensor([[0, 1, 2, 3], [77, 5, 6, 7]], dtype=torch.int32), lens, qsl)
    with pytest.raises(ValueError, match="seq_lens: got max 65"):
        kv.prefill(q, k, v, cache, slots, bt, torch.tensor([7, 65], dtype=torch.int32), qsl)
    assert torch.equal(cache, before)


def test_nvidia_store_of_fp8_keys_into_aos_prefers_triton():
    """Measured on the H200 (bench/results/h200-2026-12-01-store-v4.md): the Triton store of fp8 keys
    into AoS pages beats the CUDA one (55-57 % vs 49-51 %); SoA and Lloyd-Max stores go to cuda."""
    p = tqr.plan("k8v4", layout="aos", num_kv_heads=8, num_q_heads=32, device="sm90")
    assert [c.name for c, _ in p.candidates["store"]] == ["triton", "cuda", "reference"]
    assert [c.name for c, _ in p.candidates["decode"]] == ["cuda", "triton", "reference"]
    p = tqr.plan("k8v4", layout="soa", num_kv_heads=8, num_q_heads=32, device="sm90")
    assert [c.name for c, _ in p.candidates["store"]] == ["cuda", "triton", "reference"]
    p = tqr.plan("4bit_nc", layout="aos", num_kv_heads=8, num_q_heads=32, device="sm90")
    assert p.chosen("store").name == "cuda"


@pytest.mark.parametrize("sinks,window", [(False, None), (False, 20), (True, None), (True, 20)])
def test_attention_by_query_blocks_equals_one_block(monkeypatch, sinks, window):
    """The runtime's masked / sinks attention (sliding windows, sinks, the CPU) goes a block of queries at a time when
    one block's float32 scores would pass ATTN_BLOCK_BYTES, each block against the keys it can see (a window: only
    the last `window` keys before its queries). Same math, summed over the same nonzero terms: equal to one block
    within float32 rounding (rtol 1e-5 of the outputs' size; measured ~1e-7)."""
    from tqgen_runtime import api

    g = torch.Generator().manual_seed(7)
    q = torch.randn(2, 37, 4, 16, generator=g)  # [B, n, Hq, D] at positions 63..99
    k, v = torch.randn(2, 2, 100, 16, generator=g), torch.randn(2, 2, 100, 16, generator=g)
    s = torch.randn(4, generator=g) if sinks else None
    whole = api._attention_batch(q, k, v, 63, 0.25, s, window)
    calls = []
    block = api._attention_block

    def spy(qq, kk, *a):
        calls.append((qq.shape[1], kk.shape[2]))
        return block(qq, kk, *a)
    monkeypatch.setattr(api, "_attention_block", spy)
    monkeypatch.setattr(api, "ATTN_BLOCK_BYTES", 4 * 2 * 4 * 100 * 5)  # 5 query rows of full-length scores a block
    parts = api._attention_batch(q, k, v, 63, 0.25, s, window)
    assert len(calls) > 1 and sum(n for n, _ in calls) == 37
    if window:  # each block sees its window only: rows + window - 1 keys at most
        assert all(L <= n + window - 1 for n, L in calls), calls
    assert torch.allclose(parts, whole, rtol=0, atol=1e-5 * float(whole.abs().max())), (parts - whole).abs().max()


@pytest.mark.parametrize("sinks,window", [(False, None), (True, 6)])
def test_prefill_first_chunks_run_together(sdpa_calls, monkeypatch, sinks, window):
    """First chunks (no history) attend their raw K/V together: chunks of similar lengths right-padded to the longest
    in one SDPA call (a padded key sits after every real query of its sequence: causal attention never sees it), a
    run of equal chunks next to each other as views. Each chunk equals that sequence prefilled alone to one bf16 ulp
    of max |out| (2^-7 of it: a differently batched SDPA call's rounding), with sinks and a window too (the masked
    path). An empty sequence and a one-token chunk ride along."""
    kv = tqr.load("k8v4", layout="soa", num_kv_heads=2, num_q_heads=4, head_dim=64, device="cpu", backend="reference")
    news = [9, 9, 9, 5, 0, 9, 1, 9]
    cache, bt, q, k, v, slots, lens, qsl = _varlen_prefill_case(kv.spec, 2, 4, [0] * 8, news, seed=6)
    s = torch.randn(4, generator=torch.Generator().manual_seed(2)) if sinks else None
    calls = sdpa_calls

    def alone(i, n):
        a = int(qsl[i])
        return kv.prefill(q[a:a + n], k[a:a + n], v[a:a + n], cache.clone(), slots[a:a + n], bt[i:i + 1],
                          lens[i:i + 1], torch.tensor([0, n], dtype=torch.int32), sinks=s, sliding_window=window)

    want = [alone(i, n) if n else None for i, n in enumerate(news)]
    for pad_scores, expect in [(tqr.api.PREFILL_PAD_SCORES, [(7, 9)]),  # (9² - 1²) / 2 x 4 heads = 160 scores
                               (40, [(5, 9), (1, 5), (1, 1)]),  # 9 and 5 pad 112 scores, 5 and 1 48: apart
                               (0, [(5, 9), (1, 5), (1, 1)])]:  # equal lengths only (the CPU's default)
        monkeypatch.setattr(tqr.api, "PREFILL_PAD_SCORES_CPU", pad_scores)  # the GPU's rule, on CPU tensors
        calls.clear()
        out = kv.prefill(q, k, v, cache.clone(), slots, bt, lens, qsl, sinks=s, sliding_window=window)
        assert sorted(calls) == sorted(expect)  # runs of equal chunks (views) go first
        for i, n in enumerate(news):
            if n:
                a = int(qsl[i])
                assert float((out[a:a + n].float() - want[i].float()).abs().max()) <= \
                    2.0 ** -7 * float(want[i].abs().max()), (pad_scores, i)


def test_pad_groups(monkeypatch):
    """The grouping rule: by end, largest first, a chunk joins while the scores its padding adds (the group padded
    with it, less the group without it and the chunk's own; a query at position p sees p + 1 keys) x heads are at most
    the bound and the padded rows fit PREFILL_PAD_BYTES; query order inside a group."""
    from tqgen_runtime.api import _pad_groups
    monkeypatch.setattr(tqr.api, "PREFILL_PAD_BYTES", 1 << 30)
    first = lambda lens, hq, tb, pad=900: _pad_groups([(0, n) for n in lens], hq, tb, pad)  # noqa: E731
    # first chunks: (nmax (nmax + 1) - n (n + 1)) / 2 a head; 44 and 40: 170 <= 900, 44 and 5: 975 > 900
    assert first([5, 40, 44, 40], 1, 1) == [[1, 2, 3], [0]]
    assert first([5, 40, 44, 40], 8, 1) == [[2], [1, 3], [0]]  # x 8 heads: 1360 > 900
    assert first([3, 3, 3], 64, 1) == [[0, 1, 2]]
    assert first([], 4, 1) == []
    assert first([3, 4, 3], 64, 1, 0) == [[1], [0, 2]]  # equal lengths only
    # chunks with history: (200, 712) then (100, 612) pads both to 100..711: 2 x 248778 - 233728 - 182528 = 81300
    spans = [(100, 612), (200, 712), (100, 612)]
    assert _pad_groups(spans, 1, 1, 81300) == [[0, 1, 2]] and _pad_groups(spans, 1, 1, 81299) == [[1], [0, 2]]
    assert _pad_groups([(20, 32), (0, 7), (20, 32)], 4, 1, 0) == [[0, 2], [1]]  # equal spans: no padding
    monkeypatch.setattr(tqr.api, "PREFILL_PAD_BYTES", 2 * 44 * 10)  # two 44-token padded chunks of 10-byte tokens
    assert first([5, 40, 44, 40], 1, 10) == [[1, 2], [0, 3]]  # the second 40 opens a group, 5 joins it
    assert first([44, 44, 44, 40], 1, 10) == [[0, 1], [2, 3]]  # equal lengths too: a gather must stay bounded


@pytest.mark.parametrize("sinks,window", [(False, None), (True, None), (False, 5), (True, 5)])
def test_padded_groups_equal_one_call_a_chunk(sinks, window):
    """_attend_groups on random chunks (seeded; histories 0-40, 1-25 new tokens, some equal and next to each other),
    all in padded groups vs one call a chunk, in float32: the same sums over the same keys, so equal within float32
    rounding of the softmax and the P·V sums (1e-5 of max |out|; measured 3-5e-8); rows of out no chunk owns
    stay untouched."""
    from tqgen_runtime.api import _attend_groups, _pad_groups

    g = torch.Generator().manual_seed(11)
    hq, hk, d = 4, 2, 16
    spans = [(0, 7), (12, 25), (12, 25), (30, 31), (0, 25), (40, 43), (3, 19), (12, 25)]
    chunks, a = [], 0
    for c, e in spans:
        chunks.append((a, e - c, c, a + 2))  # out rows shifted by 2: rows 0-1 belong to no chunk
        a += e - c
    q = torch.randn(a, hq, d, generator=g)
    top = max(e for _, e in spans)
    kk, vv = torch.randn(len(spans), hk, top, d, generator=g), torch.randn(len(spans), hk, top, d, generator=g)
    sk = torch.randn(hq, generator=g) if sinks else None

    def run(groups):
        out = torch.full((a + 2, hq, d), 7.0)
        _attend_groups(q, chunks, groups, out, 0.25, sk, window,
                       lambda gi, lo, hi, src: (kk[groups[gi]][:, :, :hi], vv[groups[gi]][:, :, :hi]))
        return out
    together = _pad_groups(spans, hq, 1, 1 << 40)
    assert together == [list(range(len(spans)))]
    one, each = run(together), run([[i] for i in range(len(spans))])
    assert (one[:2] == 7.0).all() and (each[:2] == 7.0).all()
    assert torch.allclose(one, each, rtol=0, atol=1e-5 * float(each.abs().max())), (one - each).abs().max()


@pytest.mark.parametrize("sinks,window", [(False, None), (True, 8)])
def test_prefill_chunks_of_different_histories_run_together(sdpa_calls, monkeypatch, sinks, window):
    """Longer continuation chunks of different histories and lengths (one dequant call) attend in one SDPA call, their
    queries gathered into the group's span of positions (bottom-right causal: a real row sees its own sequence's keys
    up to its position); each equals its sequence prefilled alone to one bf16 ulp of max |out| (a differently batched
    SDPA call's rounding), with sinks and a window too; with the CPU's bound (equal spans only) one call each."""
    kv = tqr.load("4bit_nc", layout="soa", num_kv_heads=2, num_q_heads=4, head_dim=64, device="cpu",
                  backend="reference")
    ctxs, news = [20, 24, 18, 30], [12, 10, 14, 9]
    cache, bt, q, k, v, slots, lens, qsl = _varlen_prefill_case(kv.spec, 2, 4, ctxs, news, seed=8)
    s = torch.randn(4, generator=torch.Generator().manual_seed(3)) if sinks else None
    want = []
    for i, n in enumerate(news):
        a = int(qsl[i])
        want.append(kv.prefill(q[a:a + n], k[a:a + n], v[a:a + n], cache.clone(), slots[a:a + n], bt[i:i + 1],
                               lens[i:i + 1], torch.tensor([0, n], dtype=torch.int32), sinks=s, sliding_window=window))
    calls = sdpa_calls
    for pad, expect in [(1 << 25, [(4, 39 - 18)]), (0, [(1, 9), (1, 10), (1, 12), (1, 14)])]:
        monkeypatch.setattr(tqr.api, "PREFILL_PAD_SCORES_CPU", pad)
        calls.clear()
        out = kv.prefill(q, k, v, cache.clone(), slots, bt, lens, qsl, sinks=s, sliding_window=window)
        assert sorted(calls) == expect  # positions 18..38 for the 4 chunks together
        for i, n in enumerate(news):
            a = int(qsl[i])
            assert float((out[a:a + n].float() - want[i].float()).abs().max()) <= \
                2.0 ** -7 * float(want[i].abs().max()), (pad, i)


