"""Why `tqgen tune`'s split counts disagree with `tqgen bench` (debug, session 41). On an H100 the tuner picked
4 splits for SoA 3bit_nc at B=32 L=32K (347 us, 8 splits 420) where the bench's CUDA-graph timing read 445 us at 4
and 414 at 8. Each method on the same variant and shape, for a few split counts (columns in this order):
  tune     tqgen.tuning._graph_us over the tuner's cache (tuning._fill: 4096 stored blocks copied over the rest,
           one page set, pages in a random order): back-to-back replays of one call, median of 3 rounds (its workspace
           the runtime's since tuning.tune_workspace; before, without room for the balanced grid: the classic grid)
  distinct _graph_us over a cache whose every block was stored from its own random K/V (bench/cuda_h200.paged)
  single   one call a rep (graph replay), L2 flushed by a 256 MB memset before each rep, CUDA events, median of 15; a
           workspace without num_kv_heads (no room for the balanced decode's wider grid: the classic grid)
  wide     single with the runtime's workspace (num_kv_heads given: room for the wider grid,
           cuda_launch.balanced_grid_width), the decode's default path (balanced from 2 sequences)
  classic  wide with balanced=False
  wave     (WAVE=1 in the environment) wide with room for a grid of one wave at most (width capped at
           floor(resident blocks / (units x B)), at least the classic width): whether the wider grid's cost is its
           passing one wave (it is not, bench/results/h100-2026-12-05-tune-gap.md)
    python bench/dbg/tune_gap.py PRESET:LAYOUT,... [BxL,...] [SPLITS]"""
import math
import os
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_h200 import paged  # noqa: E402
from tqgen import reference as ref  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.cuda_launch import decode_grid, load_variant  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import make_variant  # noqa: E402
from tqgen.tuning import _fill, _graph_us  # noqa: E402

dev = torch.device("cuda")
HQ, HK, D = 32, 8, 128
items = [x.split(":") for x in sys.argv[1].split(",")]
shapes = [tuple(int(v) for v in s.split("x")) for s in (sys.argv[2] if len(sys.argv) > 2 else "32x32768,128x8192").split(",")]
counts = [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "2,4,8,12").split(",")]
flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)


def single_us(kern, q, cache, bt, sl, splits, reps=15, hk=None, cols=None, **kw):
    ws = kern.workspace(q.shape[0], q.shape[1], splits, dev, num_kv_heads=hk)
    if cols is not None:  # room for `cols` splits a (sequence, query head) only: the balanced grid's width is capped by it
        ws["acc"], ws["lse"] = ws["acc"][:, :, :cols].contiguous(), ws["lse"][:, :, :cols].contiguous()
    out = torch.empty_like(q)
    f = lambda: kern.decode(q, cache, bt, sl, num_splits=splits, workspace=ws, out=out, check=False, **kw)  # noqa: E731
    st = torch.cuda.Stream(dev)
    st.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(st):
        f()
    torch.cuda.current_stream(dev).wait_stream(st)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        f()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    res = []
    for _ in range(reps):
        flush.zero_()
        ev[0].record()
        g.replay()
        ev[1].record()
        ev[1].synchronize()
        res.append(ev[0].elapsed_time(ev[1]) * 1e3)
    return statistics.median(res)


print(torch.cuda.get_device_name(dev))
print("| variant | B x L | splits | tune | distinct | single | wide | classic |\n|---|---|---|---|---|---|---|---|")
for preset, layout in items:
    spec = preset_spec_for_target(preset, Target.SM90, layout=layout)
    kern = load_variant(make_variant(spec, Target.SM90), dev)
    for b, L in shapes:
        per_seq = math.ceil(L / spec.block_size)
        q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
        sl = torch.full((b,), L, dtype=torch.int32, device=dev)
        tc = ref.allocate(spec, b * per_seq, HK, dev)
        _fill(kern, tc, HK, D, dev)
        tbt = torch.randperm(b * per_seq, device=dev).to(torch.int32).view(b, per_seq)
        dc, dbt, _ = paged(spec, b, L, HK, dev, kern)
        for sp in counts:
            _graph_us(kern, q, tc, [tbt], sl, sp, dev)  # warm-up
            t = _graph_us(kern, q, tc, [tbt], sl, sp, dev)
            d = _graph_us(kern, q, dc, [dbt], sl, sp, dev)
            s = single_us(kern, q, dc, dbt, sl, sp)
            w = single_us(kern, q, dc, dbt, sl, sp, hk=HK)
            c = single_us(kern, q, dc, dbt, sl, sp, hk=HK, balanced=False)
            if os.environ.get("WAVE") == "1":
                o = kern.variant.options
                grid = decode_grid(o, sp, HK, HQ // HK, b)
                cols = max(grid[0], (132 * o.decode_min_blocks) // (grid[1] * b)) * o.split_step()
                c = f"{c:.1f} | {single_us(kern, q, dc, dbt, sl, sp, hk=HK, cols=cols):.1f} ({cols // o.split_step()} a unit)"
            else:
                c = f"{c:.1f}"
            print(f"| {preset} {layout} | {b}x{L} | {sp} | {t:.1f} | {d:.1f} | {s:.1f} | {w:.1f} | {c} |", flush=True)
        del tc, dc
        torch.cuda.empty_cache()
