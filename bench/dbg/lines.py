"""Line-load decode vs the previous per-fragment pipeline, B=32 L=32K and B=128 L=8K (debug, not a result).

    python bench/dbg/lines.py     # after `python bench/dbg/ablate.py build` (the old cubins)
"""
import dataclasses
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, "bench")
from cuda_h200 import bench, copy_ceiling, paged  # noqa: E402
from tqgen import reference as ref  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.cuda_launch import CudaKernels, Driver, load_variant  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.layout import derive_layout  # noqa: E402
from tqgen.lower_cuda import KERNEL_NAMES, cuda_options, make_variant  # noqa: E402
from tqgen.testing import rel_err  # noqa: E402

dev = torch.device("cuda")
ceil = copy_ceiling()
print(f"copy ceiling {ceil / 1e12:.2f} TB/s")
drv = Driver.get("cuda")
rows = []
for b, L in ((32, 32768), (128, 8192)):
    hq, hk, d = 32, 8, 128
    q = torch.randn(b, hq, d, device=dev, dtype=torch.bfloat16)
    kk = torch.randn(b, hk, L, d, device=dev, dtype=torch.bfloat16)
    vv = torch.randn_like(kk)
    sdpa = bench(lambda: F.scaled_dot_product_attention(q[:, :, None], kk, vv, enable_gqa=True))
    del kk, vv
    for preset in ("4bit_nc", "k8v4", "k3v4_nc", "3bit_nc"):
        spec = preset_spec_for_target(preset, Target.SM90, layout="soa")
        opts = cuda_options(spec, Target.SM90)
        kerns = {"default": load_variant(make_variant(spec, "sm90"))}
        for stg in (3, 4):
            if opts.stages != stg:
                kerns[f"stages{stg}"] = load_variant(make_variant(spec, "sm90", options=dataclasses.replace(opts, stages=stg)))
        old = Path(f"bench/dbg/abl/{preset}_base.cubin")
        if old.exists():
            mod = drv.load_module(old.read_bytes())
            kerns["old"] = CudaKernels(kerns["default"].variant, drv,
                                       {n: drv.function(mod, n) for pair in KERNEL_NAMES.values() for n in pair})
        cache, bt, sl = paged(spec, b, L, hk, dev, kerns["default"])
        nbytes = b * L * hk * derive_layout(spec).slot_bytes
        sub = slice(0, 2)  # correctness on two sequences (the reference is slow)
        exp = ref.decode(spec, q[sub], cache, bt[sub], sl[sub])
        for name, kern in kerns.items():
            err = rel_err(kern.decode(q[sub], cache, bt[sub], sl[sub]), exp)
            best = None
            for sp in (8, 16):
                ws = kern.workspace(b, hq, sp, dev)
                out = torch.empty_like(q)
                t = bench(lambda: kern.decode(q, cache, bt, sl, num_splits=sp, workspace=ws, out=out, check=False))
                best = min(best or t, t)
            rows.append(f"| {b}x{L} | {preset} | {name} | {best:.0f} | {100 * nbytes / (best * 1e-6) / ceil:.1f} | "
                        f"{sdpa / best:.2f} | {err:.1e} |")
            print(rows[-1], flush=True)
        del cache
print("\n| shape | preset | kernel | us | % ceiling | x SDPA | rel err |\n|---|---|---|---|---|---|---|")
print("\n".join(rows))
