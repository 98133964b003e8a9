"""What the split-KV merge costs (debug, not a result): for each preset, the decode's two kernels (split,
merge) timed by the CUDA profiler inside CUDA-graph replays, next to the replay time per call (the gap
between them included), at B=32 L=32K and B=128 L=8K (D=128, Hq 32, Hk 8) with the tuned split count.
Usage: LAYOUT=soa|aos [SHAPES=BxL,...] merge_cost.py PRESET,PRESET; MERGE=1 merge_cost.py - (the merge kernels alone)"""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from tqgen import reference as ref
from tqgen import tuning
from tqgen.build import preset_spec_for_target
from tqgen.cuda_launch import load_cuda
from tqgen.ir import Target

dev = torch.device("cuda")
rows = []
for preset in (sys.argv[1].split(",") if len(sys.argv) > 1 and sys.argv[1] != "-" else []):
    spec = preset_spec_for_target(preset, Target.SM90, layout=os.environ.get("LAYOUT", "soa"))
    kern = load_cuda(spec, "sm90")
    shapes = os.environ.get("SHAPES", "32x32768,128x8192,1x4096").split(",")
    for b, L in [tuple(int(x) for x in s.split("x")) for s in shapes]:
        per = L // 16
        cache = ref.allocate(spec, b * per, 8, dev)
        tuning._fill(kern, cache, 8, 128, dev)
        bt = torch.randperm(b * per, device=dev).to(torch.int32).view(b, per)
        q = torch.randn(b, 32, 128, device=dev, dtype=torch.bfloat16)
        sl = torch.full((b,), L, dtype=torch.int32, device=dev)
        sp = kern.num_splits_for(b, 8, L, dev)
        t = tuning._graph_us(kern, q, cache, [bt], sl, sp, dev)
        ws = kern.workspace(b, 32, sp, dev)
        out = torch.empty_like(q)
        for _ in range(3):
            kern.decode(q, cache, bt, sl, num_splits=sp, workspace=ws, out=out, check=False)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                kern.decode(q, cache, bt, sl, num_splits=sp, workspace=ws, out=out, check=False)
            torch.cuda.synchronize()
        dur = {}
        for e in prof.events():
            if e.device_type.name == "CUDA":
                k = "split" if "split" in e.name else "merge" if "merge" in e.name else None
                if k:
                    dur.setdefault(k, []).append(e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total)
        s = sorted(dur.get("split", [0]))[len(dur.get("split", [0])) // 2]
        m = sorted(dur.get("merge", [0]))[len(dur.get("merge", [0])) // 2]
        rows.append(f"| {preset} {spec.layout} | {b}x{L} | {sp} | {t:.1f} | {s:.1f} | {m:.1f} | {t - s - m:.1f} |")
        print(rows[-1], file=sys.stderr, flush=True)
        del cache
        torch.cuda.empty_cache()
if rows:
    print("\n| preset | shape | splits | graph us / call | split kernel us | merge kernel us | rest (gaps) us |\n|---|---|---|---|---|---|---|")
    print("\n".join(rows))

# ---- the two merge kernels side by side (MERGE=1 in the environment): time per launch by CUDA-graph
# replay of 20 launches, and their outputs' largest difference, per (rows, splits)
if os.environ.get("MERGE"):
    kern = load_cuda(preset_spec_for_target("4bit_nc", Target.SM90, layout="soa"), "sm90")
    st = torch.cuda.current_stream().cuda_stream
    print("\n| rows (B x Hq 32) | splits | groups us | rows us | max abs diff |\n|---|---|---|---|---|")
    for b in (1, 4, 8, 16, 32, 64, 128):
        for sp in (2, 4, 8, 16, 32, 64):
            ws = {"acc": torch.randn(b, 32, sp, 128, device=dev), "lse": torch.randn(b, 32, sp, device=dev) * 4}
            outs, ts = {}, {}
            for kind in ("groups", "rows"):
                out = torch.empty(b, 32, 128, device=dev, dtype=torch.bfloat16)
                s2 = torch.cuda.Stream()
                with torch.cuda.stream(s2):
                    kern.merge(ws, None, out, 32, sp, s2.cuda_stream, kind)
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    cs = torch.cuda.current_stream().cuda_stream
                    for _ in range(20):
                        kern.merge(ws, None, out, 32, sp, cs, kind)
                g.replay()
                torch.cuda.synchronize()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                for _ in range(10):
                    g.replay()
                e1.record()
                e1.synchronize()
                ts[kind] = e0.elapsed_time(e1) * 1e3 / 200
                outs[kind] = out.float()
            diff = (outs["groups"] - outs["rows"]).abs().max().item()
            print(f"| {b * 32} | {sp} | {ts['groups']:.2f} | {ts['rows']:.2f} | {diff:.1e} |", flush=True)
