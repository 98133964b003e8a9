"""The balanced decode's per-SM ticket (tq_bal_ticket) A/B (debug, session 45): one decode call (stage 1 and its
merge), CUDA events, the L2 flushed before each call, median of REPS, three paths in one run on the same cache and
workspace: the runtime's default (balanced, the wider grid, with the workspace's ticket), the same without the ticket
(the blocks take the grid's order: the first dealt ones work, the rest exit) and the classic kernel and grid
(balanced=False). Shapes: BxL (equal lengths) or 'one-long' (one 32K sequence and 31 of 1K); SPLITS: counts or 't'
(the device's table / heuristic).
    python bench/dbg/ticket_ab.py PRESET:LAYOUT[:HEAD_DIM],... [SHAPE,...] [SPLITS,...]
Needs the kernels of commit 6acd7f5a (the ticket was measured and reverted: bench/results/h100-2026-12-06-balanced-ticket.md);
on later trees the workspace has no ticket and the first two paths are the same."""
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_h200 import paged  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.cuda_launch import load_variant  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import make_variant  # noqa: E402

dev = torch.device("cuda")
REPS = 15
items = [x.split(":") for x in sys.argv[1].split(",")]
shapes = (sys.argv[2] if len(sys.argv) > 2 else "32x32768,128x8192,one-long").split(",")
counts = (sys.argv[3] if len(sys.argv) > 3 else "t").split(",")
flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)


def time_us(f) -> float:
    f()
    ts = []
    for _ in range(REPS):
        flush.zero_()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        ev[0].record(); f(); ev[1].record(); ev[1].synchronize()  # noqa: E702
        ts.append(ev[0].elapsed_time(ev[1]) * 1e3)
    return statistics.median(ts)


print(torch.cuda.get_device_name(dev), torch.cuda.get_device_properties(dev).multi_processor_count, "SMs")
print("| variant | shape | splits | ticket us | no ticket us | classic us | ticket / no ticket | ticket / classic |\n"
      "|---|---|---|---|---|---|---|---|")
for it in items:
    preset, layout, d = it[0], it[1], int(it[2]) if len(it) > 2 else 128
    hq, hk = (9, 3) if d == 64 else (32, 8)
    spec = preset_spec_for_target(preset, Target.SM90, layout=layout, head_dim=d)
    kern = load_variant(make_variant(spec, Target.SM90), dev)
    for shape in shapes:
        if shape == "one-long":
            lens = [32768] + [1024] * 31
        else:
            b, L = (int(v) for v in shape.split("x"))
            lens = [L] * b
        b, L = len(lens), max(lens)
        q = torch.randn(b, hq, d, device=dev, dtype=torch.bfloat16)
        sl = torch.tensor(lens, dtype=torch.int32, device=dev)
        dc, dbt, _ = paged(spec, b, L, hk, dev, kern)
        for c in counts:
            sp = kern.num_splits_for(b, hk, L, dev) if c == "t" else int(c)
            ws = kern.workspace(b, hq, sp, dev, num_kv_heads=hk)
            bare = {k: v for k, v in ws.items() if k != "ticket"}
            out = torch.empty_like(q)
            us = []
            for w, bal in ((ws, None), (bare, None), (ws, False)):
                us.append(time_us(lambda: kern.decode(q, dc, dbt, sl, num_splits=sp, workspace=w, out=out,  # noqa: B023
                                                      check=False, balanced=bal)))
            assert "ticket" not in ws or not ws["ticket"].any(), "the ticket's counters were not reset"
            print(f"| {preset} {layout} D{d} | {shape} | {sp} | {us[0]:.1f} | {us[1]:.1f} | {us[2]:.1f} | "
                  f"{us[0] / us[1]:.3f} | {us[0] / us[2]:.3f} |", flush=True)
        del dc
        torch.cuda.empty_cache()
