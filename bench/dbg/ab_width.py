"""Equal-length decode through the runtime's workspace (debug, session 25; run by bench/dbg/ab_trees.sh in two trees):
the C++ decode of each PRESET:LAYOUT at B=128 L=8K and B=32 L=32K (D=128, Hq 32, Hk 8), its default entry point
(balanced from 2 sequences) and a workspace made as the runtime's Workspace makes it (with num_kv_heads where this
tree's CudaKernels.workspace takes it: the balanced grid of its own width), CUDA-graph replay rotating over 2 block
tables (the same blocks, sequences permuted), best of 3. Asks what the wider grid (558cd04) costs on equal lengths.
    python bench/dbg/ab_width.py k8v4:soa,4bit_nc:soa,4bit_nc:aos,3bit_nc:soa
(run from a tree's root: imports bench/cuda_h200.py from ./bench)"""
import dataclasses
import inspect
import sys
import time

import torch

sys.path.insert(0, "bench")
import tqgen.cuda_launch as cl  # noqa: E402
from cuda_h200 import paged  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import make_variant  # noqa: E402

dev = torch.device("cuda")
HQ, HK, D = 32, 8, 128


def graph_us(kern, q, c, tables, sl, ws, out):
    # tqgen.tuning._graph_us's loop with the caller's workspace: a copy, since the older tree it is compared with
    # has no way to pass one (its _graph_us makes its own, without room for the wider grid)
    calls = [lambda bt=bt: kern.decode(q, c, bt, sl, workspace=ws, out=out, check=False) for bt in tables]
    st = torch.cuda.Stream(dev)
    st.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(st):
        for f in calls:
            f()
    torch.cuda.current_stream(dev).wait_stream(st)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for f in calls:
            f()
    g.replay()
    torch.cuda.synchronize(dev)
    t0 = time.perf_counter()
    g.replay()
    torch.cuda.synchronize(dev)
    n = max(1, int(0.004 / max(time.perf_counter() - t0, 1e-6)))
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    res = []
    for _ in range(3):
        ev[0].record()
        for _ in range(n):
            g.replay()
        ev[1].record()
        torch.cuda.synchronize(dev)
        res.append(ev[0].elapsed_time(ev[1]) * 1e3 / n / len(tables))
    return min(res)


wide = "num_kv_heads" in inspect.signature(cl.CudaKernels.workspace).parameters
for item in sys.argv[1].split(","):
    preset, layout = item.split(":")
    spec = dataclasses.replace(preset_spec_for_target(preset, Target.SM90, layout=layout), head_dim=D)
    kern = cl.load_variant(make_variant(spec, Target.SM90))
    for B, L in ((128, 8192), (32, 32768)):
        c, bt, _ = paged(kern.spec, B, L, HK, dev, kern)  # the cache is 20x+ L2: every call reads HBM
        tables = [bt, bt[torch.randperm(B, device=dev)]]
        sl = torch.full((B,), L, dtype=torch.int32, device=dev)
        q = torch.randn(B, HQ, D, device=dev, dtype=torch.bfloat16)
        s = kern.num_splits_for(B, HK, tables[0].shape[1] * kern.spec.block_size, dev)
        ws = kern.workspace(B, HQ, s, dev, **({"num_kv_heads": HK} if wide else {}))
        out = torch.empty_like(q)
        t = graph_us(kern, q, c, tables, sl, ws, out)
        print(f"{item} B={B} L={L} splits={s} acc_cols={ws['acc'].shape[2]} us={t:.1f}", flush=True)
        del c, tables
        torch.cuda.empty_cache()
