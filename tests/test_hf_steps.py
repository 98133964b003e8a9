"""TurboQuantCache's per-forward plan (CPU, a tiny random-init Llama; no GGUF needed): the quantised layers share one
runtime and one page table, each layer makes one store call a forward and one decode call a generation step, longer
continuation chunks one prefill call, and a left-padded batch still attends each row exactly as that row alone."""

import pytest
import torch

transformers = pytest.importorskip("transformers")


def _model():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
                      bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return LlamaForCausalLM(cfg).eval().to(torch.float64)


def _arg(model, cache) -> dict:
    # transformers >= 5.2x names it `cache` (`past_key_values` still works there, with a warning)
    import inspect
    return {"cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values": cache}


def _counting(cache, calls: list):
    """Wrap the shared runtime's store / decode / prefill to record (op, layer-agnostic) calls."""
    kv = cache.layers[0].kv
    for op in ("store", "decode", "prefill"):
        f = getattr(kv, op)

        def wrapped(*a, _f=f, _op=op, **k):
            calls.append(_op)
            return _f(*a, **k)
        setattr(kv, op, wrapped)


def test_one_plan_a_forward_one_call_a_layer(monkeypatch):
    import tqgen_runtime
    from tqgen_runtime.hf import TurboQuantCache

    # each first chunk in its own attention call, as batch 1 computes it: the float64 comparison below needs the same
    # bf16 rounding of the raw-K/V attention; padded calls: test_first_chunks_of_different_lengths_in_one_call
    monkeypatch.setattr(tqgen_runtime.api, "PREFILL_PAD_SCORES_CPU", 0)
    monkeypatch.setattr(tqgen_runtime.api, "PREFILL_PAD_SCORES", 0)
    model = _model()
    ids = torch.randint(3, 64, (2, 19), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :5] = 0  # row 1: 14 real tokens, left-padded
    ids[1, :5] = 0
    cache = TurboQuantCache(model, preset="4bit_nc", layout="soa", skip_layers=[], backend="reference")
    calls: list = []
    with torch.no_grad():
        # positions as generate gives them (a padded row's first real token at 0); a plain forward would count pads
        out = model(ids, attention_mask=mask, position_ids=(mask.cumsum(1) - 1).clamp(min=0), use_cache=True,
                    **_arg(model, cache))
        kvs = {id(layer.kv) for layer in cache.layers}
        assert len(kvs) == 1  # one runtime for the three layers
        assert cache.layers[0].lengths == [19, 14]
        _counting(cache, calls)
        logits = [out.logits[:, -1]]
        steps = [torch.randint(3, 64, (2, 3), generator=torch.Generator().manual_seed(2))]  # a 3-token chunk
        steps += [torch.randint(3, 64, (2, 1), generator=torch.Generator().manual_seed(s)) for s in (3, 4)]
        for s in steps:
            mask = torch.cat([mask, torch.ones_like(s)], dim=1)
            pos = (mask.cumsum(1) - 1)[:, -s.shape[1]:]
            logits.append(model(s, attention_mask=mask, position_ids=pos, use_cache=True,
                                **_arg(model, cache)).logits[:, -1])
    # 3 layers a forward: the 3-token chunk is one store + one prefill a layer (the prefill's one decode call for its
    # short chunks inside it), each 1-token step one store + one decode a layer
    assert calls == ["store", "prefill", "decode"] * 3 + ["store", "decode"] * 6, calls
    assert cache.pages.lengths == [24, 19] and cache.layers[2].length == 24
    assert cache.pages.blocks_used == 2 + 2  # 16-token pages: row 0 holds 24 tokens, row 1 19

    # each row alone (batch 1, its real tokens only) computes the same logits: in float64 the model's batched matmuls
    # differ from batch 1 by ~1e-16, far below one bf16 step of the stored K/V (2^-8 relative), so no code flips and
    # the logits agree to float64 noise (measured: at most 1.1e-16; 1e-9 bound); a row attending another row's
    # pages, a missed or doubled store, or a wrong length would move them by ~1e-2
    for r, first in ((0, 0), (1, 5)):
        alone = TurboQuantCache(model, preset="4bit_nc", layout="soa", skip_layers=[], backend="reference")
        with torch.no_grad():
            got = [model(ids[r:r + 1, first:], use_cache=True, **_arg(model, alone)).logits[:, -1]]
            got += [model(s[r:r + 1], use_cache=True, **_arg(model, alone)).logits[:, -1] for s in steps]
        for a, b in zip(got, logits):
            assert (a[0] - b[r]).abs().max() < 1e-9, r


def test_first_chunks_of_different_lengths_in_one_call(sdpa_calls, monkeypatch):
    """A prompt batch's rows of different real lengths (left padding) attend their raw K/V in one call a layer (right-
    padded to the longest, tqgen_runtime.api.attend_first_chunks) where each row took its own call: the logits equal
    the one-call-a-row forward's within one bf16 step of their size (2^-8 of max |logit|: the padded call rounds the
    bf16 attention output differently, by up to one bf16 ulp; measured 6e-4 of 0.4 here), and the first layer stores
    the same pages (later layers' K/V follow the attention outputs before them)."""
    import tqgen_runtime
    from tqgen_runtime.hf import TurboQuantCache

    model = _model()
    ids = torch.randint(3, 64, (3, 19), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :5] = 0  # real lengths 19, 14, 12
    mask[2, :7] = 0
    calls, outs, pools = sdpa_calls, [], []
    for pad in (0, tqgen_runtime.api.PREFILL_PAD_SCORES):  # one call a row (the CPU's default), the GPU's rule
        monkeypatch.setattr(tqgen_runtime.api, "PREFILL_PAD_SCORES_CPU", pad)
        cache = TurboQuantCache(model, preset="4bit_nc", layout="soa", skip_layers=[], backend="reference")
        calls.clear()
        with torch.no_grad():
            outs.append(model(ids * mask, attention_mask=mask, position_ids=(mask.cumsum(1) - 1).clamp(min=0),
                              use_cache=True, **_arg(model, cache)).logits[:, -1])
        pools.append([layer.pool(cache.pages.blocks_used).clone() for layer in cache.layers])
        assert calls == ([(1, 19), (1, 14), (1, 12)] if pad == 0 else [(3, 19)]) * 3, calls  # 3 layers
    assert torch.equal(pools[0][0], pools[1][0])  # the first layer's K/V come from the embeddings alone
    assert (outs[1] - outs[0]).abs().max() <= 2.0 ** -8 * outs[0].abs().max()


def test_reset_clears_the_shared_pages():
    from tqgen_runtime.hf import TurboQuantCache

    model = _model()
    cache = TurboQuantCache(model, preset="k8v4", layout="soa", skip_layers=[], backend="reference")
    ids = torch.randint(3, 64, (1, 20), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        first = model(ids, use_cache=True, **_arg(model, cache)).logits
        model(ids[:, :1], use_cache=True, **_arg(model, cache))
        assert cache.pages.lengths == [21]
        cache.reset()
        assert cache.pages.lengths == [] and cache.pages.blocks_used == 0 and cache.get_seq_length() == 0
        again = model(ids, use_cache=True, **_arg(model, cache)).logits
    assert torch.equal(first, again) and cache.pages.lengths == [20]


def _gpt_oss():
    """A tiny random gpt-oss: sliding-window layers (window 5) around a full one, attention sinks (s_aux) set to
    random logits, eager attention (its default); float32 (its experts' grouped matmul takes no float64)."""
    from transformers import GptOssConfig, GptOssForCausalLM

    torch.manual_seed(0)
    cfg = GptOssConfig(vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=64, num_local_experts=2, num_experts_per_tok=1, sliding_window=5,
                       layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                       max_position_embeddings=131072)  # YaRN's factor 32 over its 4096 original positions
    model = GptOssForCausalLM(cfg).eval()
    for layer in model.model.layers:
        layer.self_attn.sinks.data.normal_()
    return model


def _steps(model, ids, n0: int, cache=None) -> torch.Tensor:
    """Last-position logits of a prompt of n0 tokens, then of each later token fed alone."""
    from transformers import DynamicCache

    cache = cache if cache is not None else DynamicCache(config=model.config)
    with torch.no_grad():
        out = [model(ids[:, :n0], use_cache=True, **_arg(model, cache)).logits[0, -1]]
        out += [model(ids[:, i:i + 1], use_cache=True, **_arg(model, cache)).logits[0, -1] for i in range(n0, ids.shape[1])]
    return torch.stack(out)


class _Oracle:
    """Attention over the dequantised cache in float64, written out (causal mask, sliding window, sinks' extra
    softmax column): each layer stores its chunks through the reference runtime's store into its own pages; the
    first chunk attends its raw K/V, later ones the dequantised history, the query rounded to bf16 as the kernels take
    it (TurboQuantCache's contract)."""

    def __init__(self, preset: str, hq: int, hk: int, d: int):
        import tqgen_runtime

        self.kv = tqgen_runtime.load(preset, layout="soa", head_dim=d, num_kv_heads=hk, num_q_heads=hq,
                                     backend="reference", device="cpu")
        self.layers: dict = {}

    def __call__(self, module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kw):
        bf = torch.bfloat16
        dev = query.device
        query, key, value = query.cpu(), key.cpu(), value.cpu()  # the reference runtime's pages live on the CPU
        t, d = query.shape[2], query.shape[3]
        # the new tokens: the last t of what the model's cache hands over (its sliding layers keep only a window)
        k, v = (x[0, :, -t:].transpose(0, 1).to(bf).contiguous() for x in (key, value))  # [t, Hk, D]
        cache, n = self.layers.get(module.layer_idx, (self.kv.allocate(8), 0))
        self.kv.store(k, v, cache, torch.arange(n, n + t, dtype=torch.int32))
        self.layers[module.layer_idx] = (cache, n + t)
        if n == 0:
            K, V = k.double().transpose(0, 1), v.double().transpose(0, 1)  # [Hk, t, D]
        else:
            K, V = (x[0].double() for x in self.kv.dequant(cache, torch.arange(8, dtype=torch.int32)[None],
                                                           torch.tensor([n + t], dtype=torch.int32), dtype=torch.float32))
        hq, hk, L = query.shape[1], K.shape[0], K.shape[1]
        q = query[0].to(bf).double()  # [Hq, t, D]
        logits = q @ K.repeat_interleave(hq // hk, 0).transpose(1, 2) * scaling  # [Hq, t, L]
        qpos, kpos = torch.arange(n, n + t)[:, None], torch.arange(L)[None]
        ok = (kpos <= qpos) & ((kpos > qpos - kw["sliding_window"]) if kw.get("sliding_window") else True)
        logits = logits.masked_fill(~ok, float("-inf"))
        sinks = kw["s_aux"].detach().cpu().double()[:, None, None].expand(hq, t, 1)
        p = torch.softmax(torch.cat([logits, sinks], -1), -1)[..., :L]
        return (p @ V.repeat_interleave(hq // hk, 0)).transpose(0, 1)[None].to(bf).to(query.dtype).to(dev), None


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_sliding_window_and_sinks_reach_the_kernels(device):
    """gpt-oss passes sliding_window (its sliding layers) and s_aux (sinks) to the attention: the raw (boundary) path
    equals the model's own eager attention, the quantised path equals the oracle above, and the runtime's calls get
    each layer's window and sinks. Ignoring either moves the logits by ~0.2-0.5 (measured: the raw path's check
    fails at 0.46 without the window, 0.19 without the sinks); the bounds below are each path's float32 / bf16
    roundings."""
    from transformers import AttentionInterface

    import tqgen_runtime.hf as hf
    from tqgen_runtime.hf import TurboQuantCache

    backend = "reference" if device == "cpu" else None  # on the GPU: the runtime's choice (the C++ kernels)
    model = _gpt_oss().to(device)
    ids = torch.randint(3, 64, (1, 20), generator=torch.Generator().manual_seed(1)).to(device)
    plain = _steps(model, ids, 12)  # eager, the model's DynamicCache
    # every layer raw: the model's attention to float32 rounding (its sinks' softmax in float32 both ways)
    raw = _steps(model, ids, 12, TurboQuantCache(model, preset="k8v4", layout="soa", skip_layers=[0, 1, 2],
                                                backend=backend))
    assert (raw - plain).abs().max() < 1e-5, (raw - plain).abs().max()
    # quantised: every call gets its layer's window and sinks
    cache = TurboQuantCache(model, preset="k8v4", layout="soa", skip_layers=[], backend=backend)
    seen = []
    for flags in ((False, False), (True, False), (True, True)):  # no layer yet / the full layer / the sliding ones
        kv = cache.runtime(64, 2, ids.device, *flags)
        for op in ("decode", "prefill"):
            f = getattr(kv, op)

            def wrapped(*a, _f=f, **k):
                seen.append((k.get("sliding_window"), None if k.get("sinks") is None else k["sinks"].clone()))
                return _f(*a, **k)
            setattr(kv, op, wrapped)
    got = _steps(model, ids, 12, cache)
    assert [w for w, _ in seen] == [5, None, 5] * 8  # 8 one-token steps x 3 layers, each one decode call
    for i, (_, s) in enumerate(seen):
        assert torch.equal(s, model.model.layers[i % 3].self_attn.sinks.detach().float()), i
    oracle = _Oracle("k8v4", 4, 2, 64)
    AttentionInterface.register("tq_oracle", oracle)
    model.set_attn_implementation("tq_oracle")
    want = _steps(model, ids, 12)
    model.set_attn_implementation("eager")
    # CPU: both round each layer's output to bf16 (the oracle's float64 softmax vs the reference decode's float32:
    # the same bf16 values but at a rounding tie); measured equal, the bound 1e-3 leaves room for a tie broken the
    # other way (2^-9 of one layer's output). GPU: the C++ decode's fp32 arithmetic differs from the reference's, so
    # its bf16 outputs differ by an ulp here and there, the next layer's K/V by as much, and a stored fp8 / 4-bit code
    # can flip: 3e-3..1e-2 (measured on the CPU when the oracle skipped its bf16 rounding); bound 3e-2. Ignoring the
    # window or the sinks moves the logits by 0.2-0.5.
    bound = 1e-3 if device == "cpu" else 3e-2
    assert (got - want).abs().max() < bound, (got - want).abs().max()
    assert (got - plain).abs().max() > 1e-2  # the quantisation is there (k8v4: ~0.2 here)
    assert torch.equal(_steps(model, ids, 12), plain)  # no cache: the model's own eager attention, unchanged
    assert hf._FALLBACK[id(model.config)] == "eager"


def test_softcap_and_dropout_are_refused():
    from tqgen_runtime.hf import TurboQuantCache, tqgen_attention

    model = _model()
    cache = TurboQuantCache(model, preset="k8v4", layout="soa", skip_layers=[], backend="reference")
    attn = model.model.layers[0].self_attn
    q = torch.zeros(1, 4, 1, 16, dtype=torch.float64)
    k = torch.zeros(1, 2, 1, 16, dtype=torch.float64)
    for kw, match in ((dict(softcap=50.0), r"soft-capping \(softcap=50.0, Gemma 2\).*own cache"),
                      (dict(dropout=0.1), r"dropout 0.1 \(training mode\).*model.eval\(\)"),
                      (dict(sliding_window=0), r"sliding_window=0; expected None or a positive int")):
        cache.layers[0].update(k, k)
        with pytest.raises(ValueError, match=match):
            tqgen_attention(attn, q, k, k, None, scaling=0.25, **kw)
