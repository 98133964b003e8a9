"""Where the balanced decode's wider grid loses time on equal lengths (debug, session 42): each kernel of one decode
call (the decode's stage 1 and its merge) timed by the torch profiler, the runtime's default path (balanced, the wider
grid), the balanced kernel on the classic grid's width (balanced=True with a workspace of the split count's columns
only: "narrow") and balanced=False (the classic kernel and grid), same variant, shape, split count and cache, L2
flushed before each call.
    python bench/dbg/wide_parts.py PRESET:LAYOUT,... [BxL,...] [SPLITS,...]"""
import collections
import math
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_h200 import paged  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.cuda_launch import load_variant  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import make_variant  # noqa: E402

dev = torch.device("cuda")
HQ, HK, D, REPS = 32, 8, 128, 7
items = [x.split(":") for x in sys.argv[1].split(",")]
shapes = [tuple(int(v) for v in s.split("x")) for s in (sys.argv[2] if len(sys.argv) > 2 else "32x32768").split(",")]
counts = [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "4").split(",")]
flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)


def kernel_us(f) -> dict[str, float]:
    """Median over REPS calls of each kernel's device time, by kernel name (the flush's memset left out)."""
    f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(REPS):
            flush.zero_()
            f()
        torch.cuda.synchronize()
    by = collections.defaultdict(list)
    for e in p.events():
        if e.device_type.name == "CUDA" and "tq_" in e.name:
            by[e.name].append(e.device_time if hasattr(e, "device_time") else e.cuda_time)
    return {k: sorted(v)[len(v) // 2] for k, v in by.items()}


print(torch.cuda.get_device_name(dev))
print("| variant | B x L | splits | path | kernel | us |\n|---|---|---|---|---|---|")
for preset, layout in items:
    spec = preset_spec_for_target(preset, Target.SM90, layout=layout)
    kern = load_variant(make_variant(spec, Target.SM90), dev)
    for b, L in shapes:
        q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
        sl = torch.full((b,), L, dtype=torch.int32, device=dev)
        dc, dbt, _ = paged(spec, b, L, HK, dev, kern)
        for sp in counts:
            ws = kern.workspace(b, HQ, sp, dev, num_kv_heads=HK)
            narrow = dict(ws, acc=ws["acc"][:, :, :sp].contiguous(), lse=ws["lse"][:, :, :sp].contiguous())
            out = torch.empty_like(q)
            for path, bal, w in (("wide", None, ws), ("narrow", True, narrow), ("classic", False, ws)):
                f = lambda: kern.decode(q, dc, dbt, sl, num_splits=sp, workspace=w, out=out, check=False,  # noqa: E731
                                        balanced=bal)
                for name, us in sorted(kernel_us(f).items()):
                    print(f"| {preset} {layout} | {b}x{L} | {sp} | {path} | {name} | {us:.1f} |", flush=True)
        del dc
        torch.cuda.empty_cache()
