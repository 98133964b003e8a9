"""SoA decode options (after 3-bit value line loads): block shape x pair-table copies x stages,
B=32 L=32K and B=128 L=8K at D=128 (Hq 32, Hk 8), or with D=64 in the environment B=32 L=32K at the
SmolLM2 shape (Hq 9, Hk 3, D 64); LAYOUT=aos for AoS; SPLITS=0,4 times every combo at these split
counts (0: the heuristic's choice for that combo; default 0); GRAPH=1 times by CUDA-graph replay
(as tqgen tune and tqgen bench --cuda-graph; the eager and graph timings disagreed on lazy_max for k8v4 AoS
and k3v4_nc SoA in sessions 11 and 12); L2FLOOR=1 folds the block table into blocks a quarter of L2 holds, as
`tqgen bench --l2-floor` does (the % column is then the floor's: the kernel's own time, reads from L2); BUILD_ONLY=1 compiles the combos into the kernel cache and times nothing. A combo not in the table below is read as
w<warps>b<blocks>[c<copies>][u<unroll>][d (dynamic shared memory)][s<stages>], e.g. w2b6c16, and any combo
may be followed by +field=value CudaOptions changes, e.g. default+lazy_max=1, w2b4s4+lazy_max=0; `again` times the
defaults once more after the others (the first combo of a shape has read slow).
Usage: sweep3.py COMBO,COMBO,... [PRESET,PRESET]
(debug, not a result)."""
import dataclasses
import re
import sys

import torch

sys.path.insert(0, "bench")
from cuda_h200 import copy_ceiling, paged, split_rows, target_shapes  # noqa: E402
from tqgen import reference as ref  # noqa: E402
from tqgen.bench import l2_floor_table  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.cuda_launch import load_variant  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.layout import derive_layout  # noqa: E402
from tqgen.lower_cuda import cuda_options, make_variant  # noqa: E402
from tqgen.testing import rel_err  # noqa: E402

dev = torch.device("cuda")
ceil = copy_ceiling()


def _try(fn, *a):
    try:
        return fn(*a)
    except Exception as e:  # noqa: BLE001
        return e

rows = []
import os  # noqa: E402
D = int(os.environ.get("D", "128"))
HQ, HK, SHAPES = target_shapes(D)
for preset in (sys.argv[2].split(",") if len(sys.argv) > 2 else ("3bit_nc", "k3v4_nc")):
    spec = dataclasses.replace(preset_spec_for_target(preset, Target.SM90, layout=os.environ.get("LAYOUT", "soa")),
                               head_dim=D)
    o = cuda_options(spec, Target.SM90)
    combos = {"default": o,
              "c8": dataclasses.replace(o, pair_copies=8),
              "w4b4c1": dataclasses.replace(o, decode_warps=4, decode_min_blocks=4),
              "w4b4c4": dataclasses.replace(o, decode_warps=4, decode_min_blocks=4, pair_copies=4),
              "w4b4c16": dataclasses.replace(o, decode_warps=4, decode_min_blocks=4, pair_copies=16),
              "w4b3c1": dataclasses.replace(o, decode_warps=4, decode_min_blocks=3),
              "w2b8c8": dataclasses.replace(o, decode_warps=2, decode_min_blocks=8, pair_copies=8),
              "w4b2": dataclasses.replace(o, decode_warps=4, decode_min_blocks=2),
              "w2b3": dataclasses.replace(o, decode_warps=2, decode_min_blocks=3),
              "st2": dataclasses.replace(o, stages=2),
              "w2b4c16": dataclasses.replace(o, decode_warps=2, decode_min_blocks=4, pair_copies=16),
              "w2b7c1": dataclasses.replace(o, decode_warps=2, decode_min_blocks=7, pair_copies=1),
              "st4": dataclasses.replace(o, stages=4),
              "pc0": dataclasses.replace(o, pair_copies=0),
              "qreg": dataclasses.replace(o, q_in_smem=False),
              "c32": dataclasses.replace(o, pair_copies=32),
              "w2b4c32": dataclasses.replace(o, decode_warps=2, decode_min_blocks=4, pair_copies=32),
              "w4b4": dataclasses.replace(o, decode_warps=4, decode_min_blocks=4),
              "b5": dataclasses.replace(o, decode_min_blocks=5),
              "b6": dataclasses.replace(o, decode_min_blocks=6),
              "b7": dataclasses.replace(o, decode_min_blocks=7),
              "b8": dataclasses.replace(o, decode_min_blocks=8),
              **{f"w{w}b{n}": dataclasses.replace(o, decode_warps=w, decode_min_blocks=n)
                 for w, n in ((2, 10), (2, 12), (2, 16), (4, 5), (4, 6), (4, 8))},
              "c32u3": dataclasses.replace(o, pair_copies=32, tile_unroll=3),
              "c32u1": dataclasses.replace(o, pair_copies=32, tile_unroll=1),
              "w2b8u3c32": dataclasses.replace(o, decode_warps=2, decode_min_blocks=8, tile_unroll=3, pair_copies=32),
              "w2b8u3c1": dataclasses.replace(o, decode_warps=2, decode_min_blocks=8, tile_unroll=3, pair_copies=1),
              "w8b2c32d": dataclasses.replace(o, decode_warps=8, decode_min_blocks=2, pair_copies=32, dyn_smem=True),
              "w4b3c32d": dataclasses.replace(o, decode_warps=4, decode_min_blocks=3, pair_copies=32, dyn_smem=True),
              "w4b4c32d": dataclasses.replace(o, decode_warps=4, decode_min_blocks=4, pair_copies=32, dyn_smem=True),
              "w4b3d": dataclasses.replace(o, decode_warps=4, decode_min_blocks=3, dyn_smem=True),
              "w8b2d": dataclasses.replace(o, decode_warps=8, decode_min_blocks=2, dyn_smem=True),
              "w4b4c32ds2": dataclasses.replace(o, decode_warps=4, decode_min_blocks=4, pair_copies=32, dyn_smem=True, stages=2, tile_unroll=1),
              "u1": dataclasses.replace(o, tile_unroll=1),
              "u3": dataclasses.replace(o, tile_unroll=3),
              **{f"w{w}b{n}u{u}": dataclasses.replace(o, decode_warps=w, decode_min_blocks=n, tile_unroll=u)
                 for w, n in ((2, 6), (2, 7), (2, 8), (4, 3), (4, 4)) for u in (1, 3)},
              "qreg_w2b8": dataclasses.replace(o, q_in_smem=False, decode_warps=2, decode_min_blocks=8)}
    for k in sys.argv[1].split(","):  # any other name spelled w<warps>b<blocks>[c<copies>][u<unroll>][d][s<stages>]
        m = re.fullmatch(r"w(\d+)b(\d+)(?:c(\d+))?(?:u(\d+))?(d)?(?:s(\d+))?", k)
        if k not in combos and m:
            w, n, c, u, d, st = m.groups()
            combos[k] = dataclasses.replace(o, decode_warps=int(w), decode_min_blocks=int(n), dyn_smem=bool(d),
                                            **({"pair_copies": int(c)} if c else {}),
                                            **({"tile_unroll": int(u)} if u else {}),
                                            **({"stages": int(st)} if st else {}))
    for k in sys.argv[1].split(","):  # BASE+field=value+...: CudaOptions changes on a combo above
        base, *changes = k.split("+")
        if changes and base in combos:
            combos[k] = combos[base].with_changes(changes)
    combos = {k: v for k, v in combos.items() if k in sys.argv[1].split(",")}
    combos = {k: v for k, v in combos.items() if k == "default" or v != o}  # skip no-op combos
    if "default" in combos and "again" in sys.argv[1].split(","):  # the defaults timed last once more (order effects)
        combos["again"] = o
    kerns = {}
    variants = {k: _try(make_variant, spec, "sm90", "generic", v) for k, v in combos.items()}
    for k, v in list(variants.items()):  # options that cannot lower (e.g. pair_prmt's holes): reported, skipped
        if isinstance(v, Exception):
            rows.append(f"| {preset} D{D} | - | {k} | - | cannot lower: {str(v).splitlines()[0][:80]} | - | - |")
            del variants[k]
    from concurrent.futures import ThreadPoolExecutor  # noqa: E402
    from tqgen.cuda_launch import build_binary, device_arch  # noqa: E402
    with ThreadPoolExecutor(8) as ex:  # nvcc runs in subprocesses: the combos compile in parallel
        list(ex.map(lambda v: _try(build_binary, v, device_arch(dev)), variants.values()))
    if os.environ.get("BUILD_ONLY") == "1":  # compile into the kernel cache only (sweeps built in parallel first)
        continue
    for k, v in variants.items():
        r = _try(load_variant, v)
        if isinstance(r, Exception):  # a combo can fail to build (e.g. static shared memory over 48 KB): reported
            rows.append(f"| {preset} D{D} | - | {k} | - | build failed: {str(r).splitlines()[0][:80]} | - | - |")
            print(rows[-1], file=sys.stderr, flush=True)
        else:
            kerns[k] = r
    for b, L in SHAPES:
        q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
        cache, bt, sl = paged(spec, b, L, HK, dev, kerns["default"])
        if os.environ.get("L2FLOOR") == "1":  # tqgen bench --l2-floor's fold: every read an L2 hit (the SMs' time)
            bt = l2_floor_table(spec, bt, HK, torch.cuda.get_device_properties(dev).L2_cache_size)[0]
        nbytes = b * L * HK * derive_layout(spec).slot_bytes
        exp = ref.decode(spec, q[:2], cache, bt[:2], sl[:2])
        for name, kern in kerns.items():
            err = rel_err(kern.decode(q[:2], cache, bt[:2], sl[:2]), exp)
            rows += split_rows(f"{preset} D{D} | {b}x{L} | {name}", kern, q, cache, bt, sl, HK, nbytes, ceil, err)
print("\n| preset | shape | options | splits | us | % ceiling | rel err |\n|---|---|---|---|---|---|---|")
print("\n".join(rows))
