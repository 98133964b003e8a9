"""How much a wider balanced grid would give (debug, session 24): the balanced decode deals at most B x (blocks a
unit) blocks, and the grid's width is the tuned equal-length split count, so at B=128 a batch waiting on one long
sequence gets few blocks for it (or none to deal: one block a unit turns balancing off). Here the balanced decode runs
at several split counts (multiples of the tuned one) on a B=128 one-long batch and on equal lengths, next to the
classic grid at the tuned count (CUDA graphs, best of 2). Usage: python bench/dbg/bal_width.py PRESET:LAYOUT,...
(B, L, MIX=one-long|ramp in the environment; D=128, Hq 32, Hk 8). Prepared in session 24 for the balanced grid's
own width; its device runs were refused (no machine), so it has not run yet."""
import dataclasses
import os
import sys

import torch

sys.path.insert(0, "bench")
import tqgen.cuda_launch as cl  # noqa: E402
from cuda_h200 import paged  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import make_variant  # noqa: E402
from tqgen.tuning import _graph_us  # noqa: E402

dev, B, L = torch.device("cuda"), int(os.environ.get("B", "128")), int(os.environ.get("L", "32768"))
MIX = os.environ.get("MIX", "one-long")
HQ, HK, D = 32, 8, 128
lens = {"one-long": [L] + [L // 32] * (B - 1), "ramp": [L * (i + 1) // B for i in range(B)]}[MIX]
print(f"| variant | B | mix | tuned splits | classic us (tuned) | balanced us at x1 / x2 / x3 / x4 the tuned splits | equal lengths classic / balanced x1 / x2 / x3 / x4 |")
print("|---|---|---|---|---|---|---|")
for item in sys.argv[1].split(","):
    preset, layout = item.split(":")
    spec = dataclasses.replace(preset_spec_for_target(preset, Target.SM90, layout=layout), head_dim=D)
    kern = cl.load_variant(make_variant(spec, Target.SM90))
    c, bt, _ = paged(kern.spec, B, L, HK, dev, kern)
    q = torch.randn(B, HQ, D, device=dev, dtype=torch.bfloat16)
    s0 = kern.num_splits_for(B, HK, bt.shape[1] * kern.spec.block_size, dev)
    row = []
    for lengths in (lens, [L] * B):
        sl = torch.tensor(lengths, dtype=torch.int32, device=dev)
        _graph_us(kern, q, c, [bt], sl, s0, dev, balanced=False)  # warm-up
        cls = min(_graph_us(kern, q, c, [bt], sl, s0, dev, balanced=False) for _ in range(2))
        bal = [min(_graph_us(kern, q, c, [bt], sl, s0 * m, dev, balanced=True) for _ in range(2)) for m in (1, 2, 3, 4)]
        row.append((cls, bal))
    (c1, b1), (c2, b2) = row
    print(f"| {item} | {B} | {MIX} | {s0} | {c1:.1f} | " + " / ".join(f"{x:.1f}" for x in b1) + f" | {c2:.1f} / "
          + " / ".join(f"{x:.1f}" for x in b2) + " |", flush=True)
    del c
    torch.cuda.empty_cache()
