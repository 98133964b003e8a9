"""Small-batch decode calls by split count on the current kernels (debug, session 28): is a quarter of the tiles
(tuning.split_cap: at least 4 tiles a split) still the right cap now that the few-row merge is cheaper? Each
PRESET:LAYOUT's runtime kernels (generated/), CUDA-graph replay over page sets L2 cannot hold (tqgen.tuning._graph_us),
the launcher's own count marked *.
    python bench/dbg/b1_splits.py 4bit_nc:soa,... [BxL,...] [SPLITS,...]"""
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_h200 import paged  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.cuda_launch import load_cuda  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.layout import derive_layout  # noqa: E402
from tqgen.tuning import _graph_us  # noqa: E402

dev = torch.device("cuda")
HQ, HK, D = 32, 8, 128
items = sys.argv[1].split(",")
shapes = [tuple(int(x) for x in s.split("x")) for s in (sys.argv[2] if len(sys.argv) > 2 else "1x1024,1x2048,1x4096,1x8192").split(",")]
counts = [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "16,32,64,128,256").split(",")]
print("| variant | B x L | " + " | ".join(f"{c} splits us" for c in counts) + " |")
print("|---|---|" + "---|" * len(counts))
for item in items:
    preset, layout = item.split(":")
    spec = preset_spec_for_target(preset, Target.SM90, layout=layout)
    kern = load_cuda(spec, "sm90")
    for b, L in shapes:
        sets = max(1, min(64, math.ceil((256 << 20) / (b * L * HK * derive_layout(spec).slot_bytes))))
        c, bt, _ = paged(spec, b * sets, L, HK, dev, kern)
        tables = [bt[i * b:(i + 1) * b] for i in range(sets)]
        sl = torch.full((b,), L, dtype=torch.int32, device=dev)
        q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
        own = kern.num_splits_for(b, HK, L, dev)
        _graph_us(kern, q, c, tables, sl, own, dev)  # warm-up
        cells = []
        for n in counts:
            if n % kern.variant.options.split_step() or n > math.ceil(L / 16):
                cells.append("-")
                continue
            t = min(_graph_us(kern, q, c, tables, sl, n, dev, balanced=False) for _ in range(2))
            cells.append(f"{t:.1f}{'*' if n == own else ''}")
        print(f"| {item} | {b}x{L} | " + " | ".join(cells) + f" | (own {own})", flush=True)
        del c, tables
        torch.cuda.empty_cache()
