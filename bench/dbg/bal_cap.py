"""The balanced decode's cap on long blocks: 3/4 of a wave (the rule of session 21, chosen before the shared buffer was
aligned) against a full wave, and the classic grid, on batches of mixed lengths (same-run, CUDA-graph replay). The cap
is a kernel argument: a wrapper of cuda_launch.balanced_cap scales it (x4/3: the kernel's 3/4 of it is a full wave).
Usage: python bench/dbg/bal_cap.py PRESET:LAYOUT,...   (debug; B=32, L=32K, D=128, Hq 32, Hk 8; D=64 in the
environment: Hq 9, Hk 3)"""
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

dev, B, L = torch.device("cuda"), 32, 32768
D = int(os.environ.get("D", "128"))
HQ, HK = (32, 8) if D == 128 else (9, 3)
base_cap = cl.balanced_cap
scale = {"f": 1.0}
cl.balanced_cap = lambda *a: int(base_cap(*a) * scale["f"])
mixes = {"one-long": [L] + [L // 32] * (B - 1), "ramp": [L * (i + 1) // B for i in range(B)],
         "half": [L // 2] * (B // 2) + [100] * (B // 2), "tail": [min(L, int(4096 * (-torch.log(torch.tensor(1 - (i + 0.5) / B))).item())) for i in range(B)]}
print("| variant | mix | classic us | balanced 3/4 wave us | balanced full wave us | classic / 3/4 | classic / full |")
print("|---|---|---|---|---|---|---|")
for item in sys.argv[1].split(","):
    preset, layout = item.split(":")
    spec = dataclasses.replace(preset_spec_for_target(preset, Target.SM90, layout=layout), head_dim=D)
    kern = cl.load_variant(make_variant(spec, Target.SM90))
    c, bt, _ = paged(kern.spec, B, L, HK, dev, kern)
    q = torch.randn(B, HQ, D, device=dev, dtype=torch.bfloat16)
    splits = kern.num_splits_for(B, HK, bt.shape[1] * kern.spec.block_size, dev)
    for name, lens in mixes.items():
        sl = torch.tensor(lens, dtype=torch.int32, device=dev)
        _graph_us(kern, q, c, [bt], sl, splits, dev, balanced=False)  # warm-up, dropped
        t = {}
        for rep in range(2):
            for key, bal, f in (("c", False, 1.0), ("q", True, 1.0), ("w", True, 4 / 3)):
                scale["f"] = f
                t.setdefault(key, []).append(_graph_us(kern, q, c, [bt], sl, splits, dev, balanced=bal))
        c_, q_, w_ = min(t["c"]), min(t["q"]), min(t["w"])
        print(f"| {item} D{D} | {name} | {c_:.1f} | {q_:.1f} | {w_:.1f} | {c_ / q_:.2f} | {c_ / w_:.2f} |", flush=True)
    del c
    torch.cuda.empty_cache()
