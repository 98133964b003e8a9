"""Fixed vs per-byte cost of the decode (debug, not a result): time at B=32 and L = 16K, 32K, 64K for the
head_dim-64 SmolLM2 shape (Hq 9, Hk 3) and head_dim 128 (Hq 32, Hk 8), each at its own split count
(num_splits_for: the tuned table where it has the shape); a least-squares line time = fixed + bytes /
rate gives the per-call fixed cost (us) and the marginal rate (% of the copy ceiling).
Usage: python bench/dbg/slope.py [PRESET,PRESET] (SoA; LAYOUT=aos for AoS)"""
import os
import sys

import torch

sys.path.insert(0, "bench")
from cuda_h200 import bench, copy_ceiling, paged  # noqa: E402
from tqgen import LayoutSpec  # noqa: E402
from tqgen.cuda_launch import load_variant  # noqa: E402
from tqgen.layout import derive_layout  # noqa: E402
from tqgen.lower_cuda import make_variant  # noqa: E402

dev = torch.device("cuda")
ceil = copy_ceiling()
rows = []
for preset in (sys.argv[1].split(",") if len(sys.argv) > 1 else ("k8v4", "4bit_nc", "3bit_nc")):
    for d, hq, hk in ((128, 32, 8), (64, 9, 3)):
        spec = LayoutSpec.from_preset(preset, layout=os.environ.get("LAYOUT", "soa"), head_dim=d)
        kern = load_variant(make_variant(spec, "sm90"))
        pts = []
        for L in (16384, 32768, 65536):
            b = 32
            q = torch.randn(b, hq, d, device=dev, dtype=torch.bfloat16)
            cache, bt, sl = paged(spec, b, L, hk, dev, kern)
            sp = kern.num_splits_for(b, hk, L, dev)
            ws = kern.workspace(b, hq, sp, dev)
            t = bench(lambda: kern.decode(q, cache, bt, sl, num_splits=sp, workspace=ws, check=False))
            nbytes = b * L * hk * derive_layout(spec).slot_bytes
            pts.append((nbytes, t, L, sp))
        n = len(pts)
        mx, my = sum(p[0] for p in pts) / n, sum(p[1] for p in pts) / n
        k = sum((p[0] - mx) * (p[1] - my) for p in pts) / sum((p[0] - mx) ** 2 for p in pts)  # us per byte
        fixed = my - k * mx
        rate = 100 / (k * 1e-6) / ceil
        rows.append(f"| {preset} | D{d} Hq{hq} Hk{hk} | " + " / ".join(f"{p[1]:.1f} ({p[3]})" for p in pts)
                    + f" | {fixed:.1f} | {rate:.1f} | " + " / ".join(f"{100 * p[0] / (p[1] * 1e-6) / ceil:.1f}" for p in pts) + " |")
        print(rows[-1], file=sys.stderr, flush=True)
print("\n| preset | shape (B=32) | us at L=16K / 32K / 64K (splits) | fixed us | marginal % ceiling | % ceiling at each L |"
      "\n|---|---|---|---|---|---|")
print("\n".join(rows))
