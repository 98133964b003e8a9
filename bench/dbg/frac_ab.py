"""3-bit values at head_dim 96 (4.5-byte value eighths) through the decode's line loads, A/B in one run (session 53):
the register-prefetch path they took until now (OLD_DIR: the sources the previous commit rendered, one
``<preset>-<layout>.cu`` each; else the option changes given, the same template) against the line-load pipeline (the default options: the tile's records copied whole, each eighth read as two funnel-shifted
words). 3bit_nc SoA / AoS, Phi-3-mini's heads (Hq 32 = Hk 32, D 96, bf16), B=1 L=4K, B=8 L=8K, B=32 L=4K, CUDA-graph
replay at the runtime's split count and its neighbours; the two outputs compared bit for bit (the same values reach
the same arithmetic). Prints a markdown table last.
    PYTHONPATH=.:/tmp/pp OLD_DIR=bench/dbg/old_src python bench/dbg/frac_ab.py [PRESETS]
    PYTHONPATH=.:/tmp/pp python bench/dbg/frac_ab.py 3bit_nc stages=0+tile_unroll=1   # old = these options
    HEAD_DIM=80 PYTHONPATH=.:/tmp/pp python bench/dbg/frac_ab.py 3bit_nc,k3v4_nc stages=0   # session 54"""
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import tqgen.cuda_launch as cl  # noqa: E402
from cuda_h200 import kernels_from_source, paged  # noqa: E402
from tqgen import LayoutSpec  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import cuda_options, make_variant  # noqa: E402
from tqgen.tuning import _graph_us  # noqa: E402

dev = torch.device("cuda")
presets = (sys.argv[1] if len(sys.argv) > 1 else "3bit_nc").split(",")
old_changes = (sys.argv[2] if len(sys.argv) > 2 else "stages=0+tile_unroll=1").split("+")
OLD_DIR = os.environ.get("OLD_DIR")



HQ = HK = 32
D = int(os.environ.get("HEAD_DIM", "96"))  # 80: Phi-2's (3-bit keys' 7.5-byte quarters, 3-bit values' 3.75-byte eighths)
rows = []
for preset in presets:
    for layout in ("soa", "aos"):
        spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=D, rotation="orthogonal")
        v = make_variant(spec, Target.SM90)
        new = cl.load_variant(v)
        if OLD_DIR:
            old = kernels_from_source(v, (Path(OLD_DIR) / f"{preset}-{layout}.cu").read_text(), dev)
        else:
            old = cl.load_variant(make_variant(spec, Target.SM90,
                                               options=cuda_options(spec, Target.SM90).with_changes(old_changes)))
        for b, L in ((1, 4096), (8, 8192), (32, 4096)):
            torch.manual_seed(0)
            c, bt, sl = paged(new.spec, b, L, HK, dev, new)
            q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
            s0 = new.num_splits_for(b, HK, L, dev)
            o_new = new.decode(q, c, bt, sl, num_splits=s0)
            o_old = old.decode(q, c, bt, sl, num_splits=s0)
            same = torch.equal(o_new, o_old)
            best = {}
            for s in sorted({max(1, s0 // 2), s0, 2 * s0}):
                for name, k in (("old", old), ("new", new)):
                    t = min(_graph_us(k, q, c, [bt], sl, s, dev) for _ in range(2))
                    best[name] = min(best.get(name, (1e30, 0)), (t, s))
                    if s == s0:
                        best[name + "@s0"] = (t, s)
            rows.append((preset, layout, b, L, s0, best, same))
            print(rows[-1], flush=True)
            del c
            torch.cuda.empty_cache()
old_name = f"the sources in {OLD_DIR}" if OLD_DIR else f"options {'+'.join(old_changes)}"
print(f"\n{torch.cuda.get_device_name()}; old = {old_name}, new = the defaults (line loads)\n")
print("| preset | layout | B | L | runtime splits | old us (at them) | new us (at them) | new / old | best old (splits) | "
      "best new (splits) | outputs equal |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for preset, layout, b, L, s0, best, same in rows:
    o, n = best["old@s0"][0], best["new@s0"][0]
    print(f"| {preset} | {layout} | {b} | {L} | {s0} | {o:.1f} | {n:.1f} | {n / o:.3f} | {best['old'][0]:.1f} "
          f"({best['old'][1]}) | {best['new'][0]:.1f} ({best['new'][1]}) | {same} |")
