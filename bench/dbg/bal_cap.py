"""The balanced decode's cap on long blocks: 3/4 of a wave (the rule of session 21, chosen before the shared buffer was
aligned) against a full wave, and the classic grid, on batches of mixed lengths (same-run, CUDA-graph replay). The cap
is a kernel argument: cuda_launch.balanced_cap is replaced by 3/4 of a wave, then by a wave (session 22 ran this with
the kernel taking 3/4 of the cap and the wrapper scaling it by 4/3; since session 23 the kernel takes the cap as is
and balanced_cap picks the share: a wave at 2 warps a block, 3/4 at 4).
Usage: python bench/dbg/bal_cap.py PRESET:LAYOUT,...   (debug; B=32, L=32K, D=128, Hq 32, Hk 8; mixes: equal lengths (the
balanced kernel on its uniform path vs the classic one) and four mixed; in the environment
D=64: Hq 9, Hk 3; B=..., L=... the batch and the longest length)"""
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

dev, B, L = torch.device("cuda"), int(os.environ.get("B", "32")), int(os.environ.get("L", "32768"))
D = int(os.environ.get("D", "128"))
HQ, HK = (32, 8) if D == 128 else (9, 3)
scale = {"f": 1.0}
cl.balanced_cap = lambda o, sms, gy: max(1, int(sms * o.decode_min_blocks // max(1, gy) * scale["f"]))
mixes = {"equal": [L] * B, "one-long": [L] + [L // 32] * (B - 1), "ramp": [L * (i + 1) // B for i in range(B)],
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
            for key, bal, f in (("c", False, 1.0), ("q", True, 0.75), ("w", True, 1.0)):
                scale["f"] = f
                t.setdefault(key, []).append(_graph_us(kern, q, c, [bt], sl, splits, dev, balanced=bal))
        c_, q_, w_ = min(t["c"]), min(t["q"]), min(t["w"])
        print(f"| {item} D{D} B{B} | {name} | {c_:.1f} | {q_:.1f} | {w_:.1f} | {c_ / q_:.2f} | {c_ / w_:.2f} |", flush=True)
    del c
    torch.cuda.empty_cache()
