"""Triton decode options on the GPU: num_warps x block_n (tokens a tile) x split counts, B=32 L=32K and
B=128 L=8K at D=128 (Hq 32, Hk 8), or the SmolLM2 shape with D=64 in the environment; every row with its
rel err vs the reference (debug, not a result).
Usage: LAYOUT=soa SPLITS=0,16 python bench/dbg/triton_opts.py 4x32,2x32,2x16,1x16:decode_prefetch=2 k8v4,4bit_nc
(NWxBN[:option=int...]: the decode's warps x block_n and other TritonOptions; SPLITS 0: the launcher's heuristic)."""
import dataclasses
import os
import sys

import torch

sys.path.insert(0, "bench")
from cuda_h200 import copy_ceiling, paged, split_rows, target_shapes  # noqa: E402
from tqgen import reference as ref  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.layout import derive_layout  # noqa: E402
from tqgen.lower_triton import make_variant, triton_options  # noqa: E402
from tqgen.testing import rel_err  # noqa: E402
from tqgen.triton_launch import load_variant  # noqa: E402

dev = torch.device("cuda")
ceil = copy_ceiling()
D = int(os.environ.get("D", "128"))
HQ, HK, SHAPES = target_shapes(D)
rows = []
for preset in sys.argv[2].split(","):
    spec = dataclasses.replace(preset_spec_for_target(preset, Target.SM90, layout=os.environ.get("LAYOUT", "soa")),
                               head_dim=D)
    base = triton_options(spec, Target.SM90)
    kerns = {}
    for combo in sys.argv[1].split(","):
        shape, *extra = combo.split(":")  # NWxBN[:option=int ...], e.g. 1x16:decode_prefetch=2
        nw, bn = (int(x) for x in shape.split("x"))
        o = dataclasses.replace(base, decode_num_warps=0 if nw == base.num_warps else nw, block_n=bn,
                                **{k: int(x) for k, x in (e.split("=") for e in extra)})
        name = combo + (" (default)" if o == base else "")
        kerns[name] = load_variant(make_variant(spec, Target.SM90, options=o))
    for b, L in SHAPES:
        q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
        cache, bt, sl = paged(spec, b, L, HK, dev, next(iter(kerns.values())))
        nbytes = b * L * HK * derive_layout(spec).slot_bytes
        exp = ref.decode(spec, q[:2], cache, bt[:2], sl[:2])
        for name, kern in kerns.items():
            try:
                err = rel_err(kern.decode(q[:2], cache, bt[:2], sl[:2]), exp)
            except Exception as e:  # noqa: BLE001  (a config that fails to compile is a finding)
                rows.append(f"| {preset} D{D} | {b}x{L} | {name} | - | failed: {str(e).splitlines()[0][:80]} | - | - |")
                continue
            rows += split_rows(f"{preset} D{D} | {b}x{L} | {name}", kern, q, cache, bt, sl, HK, nbytes, ceil, err)
print("\n| preset | shape | num_warps x block_n | splits | us | % ceiling | rel err |\n|---|---|---|---|---|---|---|")
print("\n".join(rows))
