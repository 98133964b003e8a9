"""The wide merge (session 29: MERGE_WIDE warps a row for a balanced decode's rows, which may hold more than 32
splits) against the warp-a-row merge it replaces there (debug). For each PRESET:LAYOUT, B and mix (one-long: one
sequence of L and B - 1 of L / 32; equal: B of L), by CUDA-graph replay:
  - the whole balanced call as the launcher now runs it (wide) and with the rows merge forced, ABAB rounds;
  - the merge alone on the plan the decode wrote: rows, wide (MERGE_WIDE), wide with 8 warps a row (a rendering
    compiled on the CPU machine: `compile`), groups; with the largest difference of each output from the rows one.
    python bench/dbg/wide_merge.py compile DIR              # CPU machine: the 8-warp rendering's cubins into DIR
    python bench/dbg/wide_merge.py time DIR 4bit_nc:aos,... # GPU
(D=128: Hq 32, Hk 8, SHAPES=BxL,... default 32x32768,128x8192; D=64 items as PRESET:LAYOUT:64, Hq 9, Hk 3.)
The wide merge was dropped: this needs its patch applied first (git apply bench/results/h200-2026-12-04-wide-merge.patch;
results and reading: bench/results/h200-2026-12-04-wide-merge.md)."""
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import tqgen.lower_cuda as lc  # noqa: E402
from cubins import compile_cubins, cubin_path, item_spec  # noqa: E402
from tqgen.ir import Target  # noqa: E402

WIDE8 = 8


def wide8_source(head_dim: int) -> str:
    old = lc.MERGE_WIDE
    lc.MERGE_WIDE = WIDE8
    try:
        return lc.render_cuda(lc.make_variant(item_spec("4bit_nc:soa", head_dim), Target.SM90))
    finally:
        lc.MERGE_WIDE = old


if sys.argv[1] == "compile":
    dest = Path(sys.argv[2])
    dest.mkdir(parents=True, exist_ok=True)
    compile_cubins([("4bit_nc:soa", f"wide8-{d}", wide8_source(d)) for d in (128, 64)],
                   lambda item, tag: cubin_path(dest, item, int(tag.split("-")[1]), "wide8"),
                   kernel="tq_decode_merge_wide_bf16")
    sys.exit(0)

import torch  # noqa: E402

import tqgen.cuda_launch as cl  # noqa: E402
from cuda_h200 import paged  # noqa: E402
from graphs import graph_us as _graph_us  # noqa: E402

dev = torch.device("cuda")
DIR = Path(sys.argv[2])
ORIG_KIND = cl.merge_kind
SHAPES = [tuple(int(x) for x in s.split("x")) for s in os.environ.get("SHAPES", "32x32768,128x8192").split(",")]


def graph_us(fn, reps: int = 20) -> float:
    return _graph_us(fn, dev, reps)


wide8 = {}
for d in (128, 64):
    v = lc.make_variant(item_spec("4bit_nc:soa", d), Target.SM90)
    wide8[d] = cl.kernels_from_image(v, cubin_path(DIR, "4bit_nc:soa", d, "wide8").read_bytes(), dev)

print("| variant | B x L | mix | most splits a row | call us, wide | call us, rows forced | merge rows us | wide us "
      "| wide8 us | groups us | max diff wide / wide8 / groups vs rows |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for item in sys.argv[3].split(","):
    parts = item.split(":")
    d = int(parts[2]) if len(parts) > 2 else 128
    hq, hk = (32, 8) if d == 128 else (9, 3)
    spec = item_spec(":".join(parts[:2]), d)
    kern = cl.load_variant(lc.make_variant(spec, Target.SM90))
    for b, L in SHAPES if d == 128 else ((32, 32768),):
        c, bt, _ = paged(kern.spec, b, L, hk, dev, kern)
        q = torch.randn(b, hq, d, device=dev, dtype=torch.bfloat16)
        for mix, lens in (("one-long", [L] + [L // 32] * (b - 1)), ("equal", [L] * b)):
            sl = torch.tensor(lens, dtype=torch.int32, device=dev)
            splits = kern.num_splits_for(b, hk, L, dev)
            ws = kern.workspace(b, hq, splits, dev, num_kv_heads=hk)
            outs = {k: torch.empty_like(q) for k in ("call", "rows", "wide", "wide8", "groups")}

            arms = ("wide", "rows", "wide8") if item.startswith("4bit_nc:soa") else ("wide", "rows")

            def call(k, o=outs["call"]):
                cl.merge_kind = ORIG_KIND if k != "rows" else (lambda r, s, most=0: ORIG_KIND(r, s))
                cl.MERGE_WIDE = WIDE8 if k == "wide8" else lc.MERGE_WIDE
                try:
                    (wide8[d] if k == "wide8" else kern).decode(q, c, bt, sl, num_splits=splits, workspace=ws, out=o,
                                                                check=False)
                finally:
                    cl.merge_kind, cl.MERGE_WIDE = ORIG_KIND, lc.MERGE_WIDE
            t = {k: [] for k in arms}
            for rnd in range(4):  # ABBA
                for k in (arms if rnd % 2 == 0 else arms[::-1]):
                    t[k].append(graph_us(lambda k=k: call(k)))
            call("wide")
            most = int(ws["plan"][:b, 1].max()) if mix != "equal" else splits
            m = {}
            for k, kk in (("rows", kern), ("wide", kern), ("wide8", wide8[d]), ("groups", kern)):
                def mg(k=k, kk=kk):
                    if k == "wide8":
                        cl.MERGE_WIDE = WIDE8
                    try:
                        kk.merge(ws, None, outs[k], hq, splits, torch.cuda.current_stream(dev).cuda_stream,
                                 "wide" if k == "wide8" else k, plan=ws["plan"],
                                 seq_lens=sl, window=0)
                    finally:
                        cl.MERGE_WIDE = lc.MERGE_WIDE
                m[k] = graph_us(mg)
                mg()
            torch.cuda.synchronize()
            diff = " / ".join(f"{(outs[k].float() - outs['rows'].float()).abs().max().item():.1e}"
                              for k in ("wide", "wide8", "groups"))
            w8 = f" ({statistics.median(t['wide8']):.1f} wide8)" if "wide8" in t else ""
            print(f"| {item} | {b}x{L} | {mix} | {most} | {statistics.median(t['wide']):.1f}{w8} | "
                  f"{statistics.median(t['rows']):.1f} | {m['rows']:.1f} | {m['wide']:.1f} | {m['wide8']:.1f} | "
                  f"{m['groups']:.1f} | {diff} |", flush=True)
        del c, bt
        torch.cuda.empty_cache()
