"""4-bit key lookup: shared-memory pair table (copies x chunks) vs byte permutes, decode B=32 L=32K and
B=128 L=8K, SoA (debug, not a result).    python bench/dbg/pairs.py [preset]"""
import dataclasses
import sys

import torch

sys.path.insert(0, "bench")
from cuda_h200 import bench, copy_ceiling, paged  # noqa: E402
from tqgen import reference as ref  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.cuda_launch import load_variant  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.layout import derive_layout  # noqa: E402
from tqgen.lower_cuda import cuda_options, make_variant  # noqa: E402
from tqgen.testing import rel_err  # noqa: E402

dev = torch.device("cuda")
ceil = copy_ceiling()
presets = sys.argv[1].split(",") if len(sys.argv) > 1 else ["4bit_nc"]
combos = [(0, 0), (8, 8), (4, 8), (1, 8), (8, 4)]
rows = []
for preset, (b, L) in [(p, s) for p in presets for s in ((32, 32768), (128, 8192))]:
    spec = preset_spec_for_target(preset, Target.SM90, layout="soa")
    o = cuda_options(spec, Target.SM90)
    kerns = {c: load_variant(make_variant(spec, "sm90", options=dataclasses.replace(o, pair_copies=c[0], pair_chunks=c[1])))
             for c in combos}
    hq, hk = 32, 8
    q = torch.randn(b, hq, 128, device=dev, dtype=torch.bfloat16)
    cache, bt, sl = paged(spec, b, L, hk, dev, kerns[(0, 0)])
    nbytes = b * L * hk * derive_layout(spec).slot_bytes
    exp = ref.decode(spec, q[:2], cache, bt[:2], sl[:2])
    for c, kern in kerns.items():
        err = rel_err(kern.decode(q[:2], cache, bt[:2], sl[:2]), exp)
        ws = kern.workspace(b, hq, 8, dev)
        out = torch.empty_like(q)
        t = bench(lambda: kern.decode(q, cache, bt, sl, num_splits=8, workspace=ws, out=out, check=False))
        rows.append(f"| {preset} | {b}x{L} | {c[0]} | {c[1]} | {t:.0f} | {100 * nbytes / (t * 1e-6) / ceil:.1f} | {err:.1e} |")
        print(rows[-1], flush=True)
    del cache
print(f"\nsoa, ceiling {ceil / 1e12:.2f} TB/s\n| preset | shape | copies | chunks | us | % ceiling | rel err |\n|---|---|---|---|---|---|---|")
print("\n".join(rows))
