"""Host time of one eager Triton decode call at B=1 (debug): wall time per call with and without the argument
checks, and a cProfile of the call's Python (where the launch overhead goes).
Usage: python bench/dbg/triton_host.py [preset] [layout]"""
import cProfile
import pstats
import sys
import time

import torch

sys.path.insert(0, "bench")
from cuda_h200 import paged  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.triton_launch import load_triton  # noqa: E402

preset, layout = (sys.argv[1:] + ["k8v4", "soa"])[:2]
spec = preset_spec_for_target(preset, Target.SM90, layout=layout)
kern = load_triton(spec, "sm90")
dev = torch.device("cuda")
q = torch.randn(1, 32, 128, device=dev, dtype=torch.bfloat16)
cache, bt, sl = paged(spec, 1, 4096, 8, dev, kern)
for check in (True, False):
    for _ in range(20):
        kern.decode(q, cache, bt, sl, check=check)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(200):
        kern.decode(q, cache, bt, sl, check=check)
    host = (time.perf_counter() - t) / 200
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t) / 200
    print(f"check={check}: host {host * 1e6:.1f} us a call (launch loop), wall {wall * 1e6:.1f} us")
pr = cProfile.Profile()
pr.enable()
for _ in range(200):
    kern.decode(q, cache, bt, sl, check=False)
pr.disable()
torch.cuda.synchronize()
pstats.Stats(pr).sort_stats("cumulative").print_stats(25)
