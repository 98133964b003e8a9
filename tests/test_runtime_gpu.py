"""tqgen_runtime on the GPU: every preset × layout through the public API vs the reference, chunked
prefill paths, and CUDA-graph capture of store + decode replayed with new data and new lengths.
Run on the H200: ``python -m pytest -q -m gpu tests/test_runtime_gpu.py``."""

import pytest
import torch

import tqgen_runtime as tqr
from tqgen import reference as ref
from tqgen.testing import DECODE_TOL, Case, compare_store, prefill_batch_case, rel_err

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("layout", ["aos", "soa"])
@pytest.mark.parametrize("preset", ["k8v4", "4bit_nc", "k3v4_nc", "3bit_nc"])
def test_runtime_matches_reference(preset, layout):
    kv = tqr.load(preset, layout=layout, num_kv_heads=8, num_q_heads=32, device="cuda")
    for k, v in kv.variants.items():  # AoS fp8-key stores prefer Triton (measured faster), the rest cuda
        triton = k == "store" and preset == "k8v4" and layout == "aos"
        assert v.startswith("triton-sm90-generic" if triton else "cuda-sm90-generic"), v
    assert kv.rejected == [] and kv.balanced_decode  # the C++ decode: length-balanced splits by default from B=2
    _store_and_decode(kv)


def _store_and_decode(kv):
    case = Case(kv.spec, [4099, 0, 700, 1], 8, 4, seed=1).build("cuda")
    cache = kv.allocate(case["num_blocks"])
    kv.store(case["key"], case["value"], cache, case["slot_mapping"])
    out = kv.decode(case["query"], cache, case["block_table"], case["seq_lens"], sinks=case["sinks"])
    exp = ref.decode(kv.spec, case["query"], cache, case["block_table"], case["seq_lens"], sinks=case["sinks"])
    assert rel_err(out, exp) <= DECODE_TOL[torch.bfloat16]


@pytest.mark.parametrize("overrides", [dict(layout="aos", value_bits=8), dict(layout="soa", key_bits=2, value_bits=2)],
                         ids=["aos-k4-v8", "soa-k2-v2"])
def test_runtime_serves_non_preset_widths_with_cuda(overrides):
    """Widths no preset has take the C++ kernels too (AoS 4-bit keys with 8-bit values failed to build until session
    46 and fell back to Triton, a rejection kept in kv.rejected)."""
    kv = tqr.load("4bit_nc", num_kv_heads=8, num_q_heads=32, device="cuda", **overrides)
    assert kv.spec.preset_name is None
    assert all(v.startswith("cuda-sm90-generic") for v in kv.variants.values()), kv.variants
    assert kv.rejected == []
    _store_and_decode(kv)


@pytest.mark.parametrize("preset,layout", [("4bit_nc", "soa"), ("3bit_nc", "aos"), ("k8v4", "soa"), ("k8v4", "aos")])
def test_runtime_serves_head_dim_256_with_cuda(preset, layout):
    """head_dim 256 (Gemma's; Hq 16, Hk 8) takes the C++ decode and store since session 47 (Triton before)."""
    kv = tqr.load(preset, layout=layout, head_dim=256, num_kv_heads=8, num_q_heads=16, device="cuda")
    store = "triton" if (preset, layout) == ("k8v4", "aos") else "cuda"  # select._ordered: fp8 keys into AoS slots
    assert kv.variants["decode"].startswith("cuda-sm90-generic") and kv.variants["store"].startswith(store), kv.variants
    assert kv.rejected == []
    _store_and_decode(kv)


# (preset, layout, head_dim, rotation, the backends of store / decode / dequant)
PADDED = [("4bit_nc", "soa", 96, "orthogonal", ("cuda", "cuda", "cuda")),
          ("3bit_nc", "soa", 96, "orthogonal", ("cuda", "cuda", "cuda")),
          ("k3v4_nc", "aos", 96, "orthogonal", ("cuda", "cuda", "cuda")),
          ("3bit_nc", "aos", 80, "orthogonal", ("cuda", "cuda", "cuda")),
          ("4bit_nc", "aos", 80, "orthogonal", ("cuda", "cuda", "cuda")),
          ("k8v4", "soa", 80, None, ("cuda", "cuda", "cuda")),
          ("k8v4", "aos", 96, None, ("triton", "cuda", "triton")),
          ("k8v4", "soa", 96, None, ("triton", "cuda", "triton"))]


@pytest.mark.parametrize("preset,layout,head_dim,rotation,backends", PADDED)
def test_runtime_serves_padded_head_dims(preset, layout, head_dim, rotation, backends):
    """A head_dim no power of two: Phi-3's 96 takes the C++ decode since session 50 (3 elements a lane; with the
    orthogonal rotation the launcher rotates the query; the C++ store and dequant rotate by m16n8k16 products: session
    51, timed faster than Triton's in session 52) and the Triton store and dequant for fp8 keys (measured faster:
    select._ordered);
    Phi-2's 80 the C++ decode since session 54, the C++ store and dequant since session 55 (rows of 5 lanes of 16;
    timed faster than Triton's in session 56, fp8 keys included; before session 48: the reference)."""
    kw = {"rotation": rotation} if rotation else {}
    kv = tqr.load(preset, layout=layout, head_dim=head_dim, num_kv_heads=8, num_q_heads=32, device="cuda", **kw)
    got = tuple(kv.variants[k].split("-")[0] for k in ("store", "decode", "dequant"))
    assert got == backends, kv.variants
    _store_and_decode(kv)


@pytest.mark.parametrize("preset", ["k8v4", "4bit_nc", "3bit_nc"])
def test_prefill_continuation_paths_agree(preset):
    """64 new tokens after a 4099-token history: decode-kernel path and dequant + SDPA path."""
    kv = tqr.load(preset, layout="soa", num_kv_heads=8, num_q_heads=32, device="cuda")
    ctx, n = 4099, 64
    nblk = (ctx + n + 15) // 16
    bt = torch.arange(nblk, dtype=torch.int32, device="cuda")[None]
    g = torch.Generator(device="cuda").manual_seed(3)
    hist = torch.randn(ctx, 8, 128, device="cuda", generator=g).to(torch.bfloat16)
    q = torch.randn(n, 32, 128, device="cuda", generator=g).to(torch.bfloat16)
    k = torch.randn(n, 8, 128, device="cuda", generator=g).to(torch.bfloat16)
    outs = []
    for limit in (10**9, 0):
        cache = kv.allocate(nblk)
        kv.store(hist, hist, cache, torch.arange(ctx, dtype=torch.int32, device="cuda"))
        outs.append(kv.prefill(q, k, k, cache, torch.arange(ctx, ctx + n, dtype=torch.int32, device="cuda"), bt,
                               torch.tensor([ctx + n], dtype=torch.int32, device="cuda"),
                               torch.tensor([0, n], dtype=torch.int32, device="cuda"), decode_max_tokens=limit))
    exp = ref.decode(kv.spec, q, cache, bt.expand(n, -1).contiguous(),
                     torch.arange(ctx + 1, ctx + n + 1, dtype=torch.int32, device="cuda"))
    assert rel_err(outs[0], exp) <= DECODE_TOL[torch.bfloat16]
    assert rel_err(outs[0], outs[1]) <= DECODE_TOL[torch.bfloat16]


@pytest.mark.parametrize("backend", ["cuda", "triton"])
@pytest.mark.parametrize("preset,layout", [("4bit_nc", "soa"), ("k3v4_nc", "aos")])
def test_prefill_batch_on_gpu(preset, layout, backend):
    """A varlen batch of every prefill path on the GPU (a first chunk and the longer chunks through torch's flash /
    memory-efficient SDPA with the bottom-right causal bias, the short chunks through one decode call, a run of
    equal chunks in one SDPA call) equals the sequences prefilled one call each within one bf16 ulp of max |out|
    (at most 2^-7 of it, 8 significant bits: one rounding of a differently batched kernel, whose fp32 sums may be
    ordered differently), the short chunks equal the reference decode within
    DECODE_TOL, and every longer chunk equals an fp32 SDPA with the explicit causal mask over the reference's
    dequantised cache within DECODE_TOL (the kernel's bf16 K/V and output roundings)."""
    kv = tqr.load(preset, layout=layout, num_kv_heads=8, num_q_heads=32, device="cuda", backend=backend)
    ctxs, news = [300, 1000, 0, 1000, 1000, 7, 0], [3, 40, 50, 40, 40, 1, 0]
    c = prefill_batch_case(kv.spec, kv.store, 8, 32, ctxs, news, blocks=80, device="cuda", seed=11)  # 1280 tokens each
    cache, bt, q, k, v = c["cache"], c["block_table"], c["query"], c["key"], c["value"]
    slots, lens, qsl = c["slot_mapping"], c["seq_lens"], c["query_start_loc"].tolist()
    single = cache.clone()
    # the batch with host copies of seq_lens / query_start_loc (no device read), the single calls with device tensors
    out = kv.prefill(q, k, v, cache, slots, bt, lens.cpu(), torch.tensor(qsl, dtype=torch.int32))
    assert not torch.equal(cache, single)  # the batch stored its new tokens
    for i, n in enumerate(news):
        a, e = qsl[i], qsl[i + 1]
        if not n:
            continue
        one = kv.prefill(q[a:e], k[a:e], v[a:e], single, slots[a:e], bt[i:i + 1], lens[i:i + 1],
                         torch.tensor([0, n], dtype=torch.int32, device="cuda"))
        assert float((out[a:e].float() - one.float()).abs().max()) <= 2.0 ** -7 * float(one.abs().max()), i
        c = ctxs[i]
        if c and n <= tqr.api.PREFILL_DECODE_MAX_TOKENS:
            exp = ref.decode(kv.spec, q[a:e], cache, bt[i:i + 1].expand(n, -1).contiguous(),
                             torch.arange(c + 1, c + n + 1, dtype=torch.int32, device="cuda"))
            assert rel_err(out[a:e], exp) <= DECODE_TOL[torch.bfloat16], i
        elif c:  # the flash / memory-efficient SDPA against the explicit mask over the reference's dequantised K/V
            kr, vr = ref.dequant(kv.spec, cache, bt[i:i + 1], lens[i:i + 1])
            pos = torch.arange(c, c + n, device="cuda")[:, None]
            mask = torch.arange(c + n, device="cuda")[None, :] <= pos
            exp = torch.nn.functional.scaled_dot_product_attention(
                q[a:e].float().transpose(0, 1)[None], kr.repeat_interleave(4, 1), vr.repeat_interleave(4, 1),
                attn_mask=mask[None, None])[0].transpose(0, 1)
            assert rel_err(out[a:e], exp) <= DECODE_TOL[torch.bfloat16], i
    assert torch.equal(cache, single)  # one call at a time stored the same slots


def test_padded_prefill_groups_on_gpu(sdpa_calls, monkeypatch):
    """New prompts of different lengths attend their raw K/V in one padded flash SDPA call (is_causal: a padded key
    sits after every real query of its sequence), longer chunks of different histories their dequantised cache in one
    bottom-right causal call over the group's span of positions, and each equals its sequence prefilled alone within
    one bf16 ulp of max |out| (2^-7 of it: one rounding of a differently batched kernel); a prompt past the padding
    bound gets its own call."""
    monkeypatch.setattr(tqr.api, "PREFILL_PAD_SCORES", 1 << 25)  # the grouping rule at a bound these spans exercise
    kv = tqr.load("4bit_nc", layout="soa", num_kv_heads=8, num_q_heads=32, device="cuda")
    # prompts: (3000² - 300²) / 2 x 32 heads > 2^25: apart; chunks after 2000 / 2100 / 1900 tokens: one
    # call over positions 1900..2511 (the padding's scores 2.0e7 x 32 heads <= 2^25)
    ctxs, news = [0, 0, 0, 0, 0, 0, 2000, 2100, 1900], [300, 257, 1, 290, 3000, 64, 512, 400, 512]
    c = prefill_batch_case(kv.spec, kv.store, 8, 32, ctxs, news, blocks=200, device="cuda", seed=12)
    cache, bt, q, k, v = c["cache"], c["block_table"], c["query"], c["key"], c["value"]
    slots, lens, qsl = c["slot_mapping"], c["seq_lens"], c["query_start_loc"].tolist()
    single = cache.clone()
    calls = sdpa_calls
    out = kv.prefill(q, k, v, cache, slots, bt, lens.cpu(), torch.tensor(qsl, dtype=torch.int32))
    assert sorted(calls) == [(1, 3000), (3, 2512 - 1900), (5, 300)], calls
    for i, n in enumerate(news):
        a, e = qsl[i], qsl[i + 1]
        one = kv.prefill(q[a:e], k[a:e], v[a:e], single, slots[a:e], bt[i:i + 1], lens[i:i + 1],
                         torch.tensor([0, n], dtype=torch.int32, device="cuda"))
        assert float((out[a:e].float() - one.float()).abs().max()) <= 2.0 ** -7 * float(one.abs().max()), i
    assert torch.equal(cache, single)


def test_cuda_graph_store_and_decode_replay():
    kv = tqr.load("4bit_nc", layout="soa", num_kv_heads=8, num_q_heads=32, device="cuda")
    b, max_blocks = 16, 64
    case = Case(kv.spec, [1000] * b, 8, 4, seed=5).build("cuda")
    cache = kv.allocate(case["num_blocks"] + b)
    kv.store(case["key"], case["value"], cache, case["slot_mapping"])
    bt = torch.zeros(b, max_blocks, dtype=torch.int32, device="cuda")
    bt[:, : case["block_table"].shape[1]] = case["block_table"]
    bt[:, case["block_table"].shape[1]] = torch.arange(case["num_blocks"], case["num_blocks"] + b, device="cuda")
    # static inputs: one new token per sequence, then decode
    q = torch.zeros(b, 32, 128, dtype=torch.bfloat16, device="cuda")
    k_new = torch.zeros(b, 8, 128, dtype=torch.bfloat16, device="cuda")
    slots = torch.zeros(b, dtype=torch.int32, device="cuda")
    lens = torch.zeros(b, dtype=torch.int32, device="cuda")
    ws = kv.workspace(max_batch=b, max_seq_len=max_blocks * 16)

    def step():
        kv.store(k_new, k_new, cache, slots, check=False)
        return kv.decode(q, cache, bt, lens, workspace=ws, check=False)

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step()  # warm-up: compiles outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()
    for t in range(3):  # replay with new data and new lengths
        g = torch.Generator(device="cuda").manual_seed(10 + t)
        q.copy_(torch.randn(b, 32, 128, device="cuda", generator=g))
        k_new.copy_(torch.randn(b, 8, 128, device="cuda", generator=g))
        pos = 1000 + t
        slots.copy_((bt[:, pos // 16].long() * 16 + pos % 16).int())
        lens.fill_(pos + 1)
        lens[0] = 17 + t  # a different length for one sequence
        graph.replay()
        torch.cuda.synchronize()
        exp = ref.decode(kv.spec, q, cache, bt, lens)
        assert rel_err(out, exp) <= DECODE_TOL[torch.bfloat16], t


@pytest.mark.parametrize("preset,layout,head_dim", [("4bit_nc", "soa", 128), ("k3v4_nc", "aos", 128),
                                                    ("4bit_nc", "soa", 64)])
def test_cuda_builds_with_nvrtc_without_nvcc(monkeypatch, tmp_path, preset, layout, head_dim):
    """No nvcc (not on PATH, TQGEN_CUDA_COMPILER=nvrtc) and an empty kernel cache: the runtime still serves the C++
    variants, compiled by NVRTC (tqgen.nvrtc, the libnvrtc a CUDA build of torch installs), and they store and decode
    within DECODE_TOL of the reference (head_dim 64 SoA 4bit_nc: the build NVRTC spills 112 bytes in, CPU side
    tests/test_nvrtc.py)."""
    from tqgen import cuda_launch, nvrtc
    from tqgen.compile_cpp import ToolchainMissing
    try:
        lib = nvrtc.find_nvrtc()
    except ToolchainMissing as e:
        pytest.skip(f"no NVRTC on this machine: {e}")
    monkeypatch.setenv("TQGEN_CUDA_COMPILER", "nvrtc")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("TQGEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cuda_launch, "_LOADED", {})
    hq, hk = (32, 8) if head_dim == 128 else (9, 3)
    kv = tqr.load(preset, layout=layout, num_kv_heads=hk, num_q_heads=hq, head_dim=head_dim, device="cuda",
                  backend="cuda")
    assert all(v.startswith("cuda-sm90-generic") for v in kv.variants.values()), (kv.variants, kv.rejected)
    assert list(tmp_path.rglob("*.cubin")), f"nothing built in the empty cache by {lib}"
    case = Case(kv.spec, [4099, 0, 700, 1], hk, hq // hk, seed=2).build("cuda")
    cache = kv.allocate(case["num_blocks"])
    kv.store(case["key"], case["value"], cache, case["slot_mapping"])
    want = ref.allocate(kv.spec, case["num_blocks"], hk, "cuda")
    ref.store(kv.spec, case["key"], case["value"], want, case["slot_mapping"])
    diff = compare_store(kv.spec, cache, want, case["key"], case["slot_mapping"])  # the C++ store tests' rule
    assert diff.ok, diff.summary()
    out = kv.decode(case["query"], cache, case["block_table"], case["seq_lens"], sinks=case["sinks"])
    exp = ref.decode(kv.spec, case["query"], cache, case["block_table"], case["seq_lens"], sinks=case["sinks"])
    assert rel_err(out, exp) <= DECODE_TOL[torch.bfloat16]


def test_cuda_falls_back_to_triton_when_it_cannot_build(monkeypatch, tmp_path):
    """No nvcc (TQGEN_NVCC naming a missing file: never replaced by NVRTC) and nothing cached: the cuda candidate fails
    to load and Triton serves, with the reason kept."""
    from tqgen import cuda_launch
    monkeypatch.setenv("TQGEN_NVCC", str(tmp_path / "no-nvcc"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("TQGEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cuda_launch, "_LOADED", {})
    kv = tqr.load("k3v4_nc", layout="aos", num_kv_heads=8, num_q_heads=32, device="cuda")
    assert all(v.startswith("triton-sm90-generic") for v in kv.variants.values()), kv.variants
    reasons = dict(kv.rejected)
    assert "load failed" in reasons["decode:cuda"][0] and "nvcc" in reasons["decode:cuda"][0], reasons
