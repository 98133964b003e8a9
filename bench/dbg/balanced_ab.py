"""Same-run A/B of the classic and the balanced decode on equal lengths (the cost of balancing where there is nothing
to deal): each variant x shape timed classic, balanced, classic, balanced by CUDA-graph replay after a dropped warm-up
timing (tqgen.tuning._graph_us), the launcher's own split count. D=64 in the environment: Hq 9, Hk 3.
Usage: balanced_ab.py PRESET:LAYOUT,... [BxL,...]   (debug)"""
import dataclasses
import os
import sys

import torch

sys.path.insert(0, "bench")
from cuda_h200 import paged  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.cuda_launch import load_variant  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import make_variant  # noqa: E402
from tqgen.tuning import _graph_us  # noqa: E402

dev = torch.device("cuda")
D = int(os.environ.get("D", "128"))
HQ, HK = (32, 8) if D == 128 else (9, 3)
shapes = [tuple(int(x) for x in s.split("x")) for s in (sys.argv[2] if len(sys.argv) > 2 else "32x32768,128x8192").split(",")]
print("| variant | B x L | splits | classic us (2 runs) | balanced us (2 runs) | classic / balanced (best of 2) |")
print("|---|---|---|---|---|---|")
for item in sys.argv[1].split(","):
    preset, layout = item.split(":")
    spec = dataclasses.replace(preset_spec_for_target(preset, Target.SM90, layout=layout), head_dim=D)
    kern = load_variant(make_variant(spec, Target.SM90))
    for b, L in shapes:
        c1, bt1, sl = paged(spec, b, L, HK, dev, kern)  # larger than L2 at these shapes
        q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
        splits = kern.num_splits_for(b, HK, bt1.shape[1] * spec.block_size, dev)
        _graph_us(kern, q, c1, [bt1], sl, splits, dev, balanced=False)  # warm-up, dropped
        t = {False: [], True: []}
        for bal in (False, True, False, True):
            t[bal].append(_graph_us(kern, q, c1, [bt1], sl, splits, dev, balanced=bal))
        print(f"| {preset} {layout} D{D} | {b}x{L} | {splits} | {t[False][0]:.1f}, {t[False][1]:.1f} | "
              f"{t[True][0]:.1f}, {t[True][1]:.1f} | {min(t[False]) / min(t[True]):.3f} |", flush=True)
        del c1
        torch.cuda.empty_cache()
