"""Eager cost of the decode's argument checks (debug): wall time per call, back to back, with check=True and
check=False, per backend and shape (k8v4 SoA, D=128, Hq 32, Hk 8). The checks read the device once a call
(reference.check_tables), which waits for the work queued before it.
Usage: python bench/dbg/check_cost.py [preset] [layout]"""
import sys
import time

import torch

sys.path.insert(0, "bench")
from cuda_h200 import paged  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.cuda_launch import load_variant  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import make_variant  # noqa: E402
from tqgen.triton_launch import load_triton  # noqa: E402

preset, layout = (sys.argv[1:] + ["k8v4", "soa"])[:2]
spec = preset_spec_for_target(preset, Target.SM90, layout=layout)
dev = torch.device("cuda")
kerns = {"cuda": load_variant(make_variant(spec, "sm90")), "triton": load_triton(spec, "sm90")}
print(f"| backend | B | L | check=True us/call | check=False us/call | ratio |\n|---|---|---|---|---|---|")
for b, L in ((1, 4096), (32, 32768), (128, 8192)):
    cache, bt, sl = paged(spec, b, L, 8, dev, kerns["cuda"])
    q = torch.randn(b, 32, 128, device=dev, dtype=torch.bfloat16)
    for name, kern in kerns.items():
        t = {}
        for check in (True, False, True, False):
            n = 200 if b == 1 else 30
            for _ in range(5):
                kern.decode(q, cache, bt, sl, check=check)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                kern.decode(q, cache, bt, sl, check=check)
            torch.cuda.synchronize()
            t[check] = min(t.get(check, 1e9), (time.perf_counter() - t0) / n * 1e6)
        print(f"| {name} | {b} | {L} | {t[True]:.1f} | {t[False]:.1f} | {t[True] / t[False]:.2f} |")
    del cache
