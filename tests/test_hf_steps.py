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


def test_one_plan_a_forward_one_call_a_layer():
    from tqgen_runtime.hf import TurboQuantCache

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
