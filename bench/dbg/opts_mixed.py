"""A decode's options on mixed and equal lengths (debug, session 25): the balanced decode and the classic grid
(CUDA graphs, best of 2) of one variant rendered with several option sets, at several split counts, on a one-long batch (one sequence of L
and B - 1 of L / 32) and on equal lengths, every cell in the same run. Made to ask whether SoA k3v4_nc's B=128
one-long 87 -> 103 us came with pair_add (8 blocks an SM instead of 6) or with its re-tuned split count (3 -> 2).

    python bench/dbg/opts_mixed.py k3v4_nc:soa 'default;pair_add=0' 2,3,4
(B, L, D in the environment: 128, 32768, 128; Hq 32, Hk 8.)"""
import dataclasses
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import tqgen.cuda_launch as cl  # noqa: E402
from cuda_h200 import paged  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import cuda_options, make_variant  # noqa: E402
from tqgen.tuning import _graph_us  # noqa: E402

dev = torch.device("cuda")
B, L, D = int(os.environ.get("B", "128")), int(os.environ.get("L", "32768")), int(os.environ.get("D", "128"))
# (the balanced grid's width here is the split count's blocks a unit: the workspace _graph_us makes has no room for more)
HQ, HK = (32, 8) if D == 128 else (9, 3)
item, optsets, splits = sys.argv[1], sys.argv[2].split(";"), [int(x) for x in sys.argv[3].split(",")]
preset, layout = item.split(":")
spec = dataclasses.replace(preset_spec_for_target(preset, Target.SM90, layout=layout), head_dim=D)
mixes = {"one-long": [L] + [L // 32] * (B - 1), "equal": [L] * B}
print(f"| {item} D{D} B={B} L={L} | options | splits | " + " | ".join(f"{m} balanced / classic us" for m in mixes) + " |")
print("|---|---|---|" + "---|" * len(mixes))
for o in optsets:
    opts = cuda_options(spec, Target.SM90).with_changes([] if o == "default" else o.split("+"))
    kern = cl.load_variant(make_variant(spec, Target.SM90, options=opts))
    c, bt, _ = paged(kern.spec, B, L, HK, dev, kern)
    q = torch.randn(B, HQ, D, device=dev, dtype=torch.bfloat16)
    for s in splits:
        row = []
        for lengths in mixes.values():
            sl = torch.tensor(lengths, dtype=torch.int32, device=dev)
            _graph_us(kern, q, c, [bt], sl, s, dev, balanced=True)  # warm-up
            row.append(tuple(min(_graph_us(kern, q, c, [bt], sl, s, dev, balanced=bal) for _ in range(2))
                             for bal in (True, False)))
        print(f"| | {o} | {s} | " + " | ".join(f"{x:.1f} / {y:.1f}" for x, y in row) + " |", flush=True)
    del c
    torch.cuda.empty_cache()
