"""Store launch options on the current GPU (debug, not a result): for each preset x layout x N
(64K, 256K tokens; Hk 8, D 128, bf16), each option combo's median time (CUDA events), % of the
copy ceiling counted in bytes read + written (tqgen.bench.store_bytes), and whether its cache bytes
equal the default combo's. Usage: store_sweep.py COMBO,COMBO,... [PRESET,PRESET] (LAYOUT=aos|soa|both);
a combo is `default` or CudaOptions fields `name=value+name=value` (e.g. `row_warps=8`)."""
import dataclasses
import os
import sys

import torch

sys.path.insert(0, "bench")
from cuda_h200 import bench, copy_ceiling  # noqa: E402
from tqgen import reference as ref  # noqa: E402
from tqgen.bench import store_bytes  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.cuda_launch import load_variant  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import cuda_options, make_variant  # noqa: E402

dev = torch.device("cuda")
ceil = copy_ceiling()
HK, D = 8, 128
layouts = ("aos", "soa") if os.environ.get("LAYOUT", "both") == "both" else (os.environ["LAYOUT"],)
rows = []
for preset in (sys.argv[2].split(",") if len(sys.argv) > 2 else ("4bit_nc", "3bit_nc")):
    for layout in layouts:
        spec = preset_spec_for_target(preset, Target.SM90, layout=layout)
        o = cuda_options(spec, Target.SM90)
        combos = {"default": o}
        for c in sys.argv[1].split(","):
            if c != "default":
                kw = dict(x.split("=") for x in c.split("+"))
                combos[c] = dataclasses.replace(o, **{k: (v == "True") if v in ("True", "False") else int(v)
                                                      for k, v in kw.items()})
        kerns = {k: load_variant(make_variant(spec, "sm90", options=v)) for k, v in combos.items()}
        for n in (65536, 262144):
            bs = spec.block_size
            nblk = n // bs
            perm = torch.randperm(nblk, device=dev)
            t = torch.arange(n, device=dev)
            slots = (perm[t // bs] * bs + t % bs).to(torch.int32)
            k = torch.randn(n, HK, D, dtype=torch.bfloat16, device=dev) * 2
            v = torch.randn(n, HK, D, dtype=torch.bfloat16, device=dev)
            rd, wr = store_bytes(spec, n, HK)
            caches = {}
            for name, kern in kerns.items():
                cache = ref.allocate(spec, nblk, HK, dev)
                kern.store(k, v, cache, slots)
                caches[name] = cache
                us = bench(lambda: kern.store(k, v, cache, slots, check=False))
                same = bool(torch.equal(cache, caches["default"]))
                rows.append(f"| {preset} | {layout} | {n} | {name} | {us:.1f} | {100 * (rd + wr) / (us * 1e-6) / ceil:.1f} | {same} |")
                print(rows[-1], file=sys.stderr, flush=True)
print(f"\ncopy ceiling {ceil / 1e9:.0f} GB/s\n\n| preset | layout | N | options | us | % ceiling | bytes = default |\n|---|---|---|---|---|---|---|")
print("\n".join(rows))
