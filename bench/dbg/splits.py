"""Decode time vs split count (debug, not a result): for each preset, the default kernel at
B=32 L=32K and B=128 L=8K (D=128, Hq 32, Hk 8) or, with D=64 in the environment, B=32 L=32K at the
SmolLM2 shape (Hq 9, Hk 3); LAYOUT=aos|soa. Prints the kernel's real occupancy (driver
cuOccupancyMaxActiveBlocksPerMultiprocessor) next to the launch bound the split heuristic assumes.
Usage: splits.py PRESET,PRESET SPLITS,SPLITS,...   (0 = the heuristic's choice)"""
import ctypes
import os
import sys

import torch

sys.path.insert(0, "bench")
from cuda_h200 import bench, copy_ceiling, paged, target_shapes  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.cuda_launch import load_cuda  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.layout import derive_layout  # noqa: E402
import dataclasses  # noqa: E402

dev = torch.device("cuda")
ceil = copy_ceiling()
D = int(os.environ.get("D", "128"))
HQ, HK, SHAPES = target_shapes(D)
lib = ctypes.CDLL("libcuda.so.1")
rows = []
for preset in sys.argv[1].split(","):
    spec = dataclasses.replace(preset_spec_for_target(preset, Target.SM90, layout=os.environ.get("LAYOUT", "soa")),
                               head_dim=D)
    kern = load_cuda(spec, "sm90")
    o = kern.variant.options
    nb = ctypes.c_int()
    fn = kern._fn("decode_split", torch.bfloat16)
    lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(nb), fn, 32 * o.decode_warps,
                                                ctypes.c_size_t(kern.decode_smem))
    occ = f"{nb.value} blocks x {o.decode_warps} warps (bound {o.decode_min_blocks})"
    for b, L in SHAPES:
        q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
        cache, bt, sl = paged(spec, b, L, HK, dev, kern)
        nbytes = b * L * HK * derive_layout(spec).slot_bytes
        auto = kern.num_splits_for(b, HK, L, dev)
        for sp in [int(x) for x in sys.argv[2].split(",")]:
            sp = sp or auto
            ws = kern.workspace(b, HQ, sp, dev)
            out = torch.empty_like(q)
            t = bench(lambda: kern.decode(q, cache, bt, sl, num_splits=sp, workspace=ws, out=out, check=False))
            rows.append(f"| {preset} {spec.layout} D{D} | {b}x{L} | {occ} | {sp}{' (auto)' if sp == auto else ''} | "
                        f"{t:.1f} | {100 * nbytes / (t * 1e-6) / ceil:.1f} |")
            print(rows[-1], file=sys.stderr, flush=True)
        del cache
print("\n| preset | shape | occupancy | splits | us | % ceiling |\n|---|---|---|---|---|---|")
print("\n".join(rows))
