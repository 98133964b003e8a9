"""The Triton store's launch shape (debug): every preset x layout (sm90 Triton, head_dim 128, 8 KV heads), N = 64K and
256K tokens, timed by ``cuda_h200.bench`` (events behind the GPU hold) at (store_num_warps, store_block_m = the
store's rows a program) = (4, 16) the first default, (2, 8), (1, 16), (1, 8), (1, 4) (their SASS a row:
bench/dbg/triton_store_sass.py, HISTORY session 35) and the current default (triton_options, sm90 overrides included),
with % of the copy ceiling (K + V read in bf16, the slot mapping, the slots written: tqgen.bench.store_bytes) and each
shape's slots checked against the reference store by the tests' rule (tqgen.testing.compare_store: byte-identical but
for explained index flips / norm ulps; a shape's row sums run in its own order, so two shapes' bytes may differ where
both match the reference). Two input sets used in turn (each larger than L2 at 64K). Prints a markdown table.
TQ_SHAPES=default times the default only; TQ_SHAPES=2x8,1x4 those (warps x rows).
    PYTHONPATH=$PWD:/tmp/pp [TQ_D=64] [TQ_SHAPES=...] python bench/dbg/triton_store_sweep.py [PRESET ...]"""
import dataclasses
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/
from cuda_h200 import bench, copy_ceiling  # noqa: E402
from tqgen import reference as ref  # noqa: E402
from tqgen.bench import store_bytes  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_triton import make_variant, triton_options  # noqa: E402
from tqgen.testing import compare_store  # noqa: E402
from tqgen.triton_launch import load_variant  # noqa: E402

presets = sys.argv[1:] or ["k8v4", "4bit_nc", "k3v4_nc", "3bit_nc"]
dev, hk, d = torch.device("cuda"), 8, int(os.environ.get("TQ_D", "128"))
ceil = copy_ceiling()
print(f"copy ceiling {ceil / 1e9:.0f} GB/s; head_dim {d}, {hk} KV heads\n")
print("| preset | layout | N | store_num_warps | store_block_m | us | % ceiling | vs reference |\n|---|---|---|---|---|---|---|---|")
for preset in presets:
    for layout in ("soa", "aos"):
        spec = preset_spec_for_target(preset, Target.SM90, layout=layout, head_dim=d)
        base = triton_options(spec, Target.SM90)
        for n in (64 * 1024, 256 * 1024):
            sets = []
            for _ in range(2):
                k = torch.randn(n, hk, d, device=dev, dtype=torch.bfloat16) * 2
                v = torch.randn(n, hk, d, device=dev, dtype=torch.bfloat16)
                cache = ref.allocate(spec, n // spec.block_size, hk, dev)
                slots = torch.randperm(n, device=dev).to(torch.int32)
                sets.append((k, v, cache, slots))
            want = ref.allocate(spec, n // spec.block_size, hk, dev)
            ref.store(spec, sets[0][0], sets[0][1], want, sets[0][3])
            rd, wr = store_bytes(spec, n, hk)
            want_shapes = os.environ.get("TQ_SHAPES", "4x16,2x8,1x16,1x8,1x4")
            shapes = [] if want_shapes == "default" else [tuple(map(int, s.split("x"))) for s in want_shapes.split(",")]
            cur = (base.launch_kwargs(Target.SM90, store=True)["num_warps"], base.store_block_m)  # the default's
            for w, bm in shapes + ([] if cur in shapes else [cur]):
                kern = load_variant(make_variant(spec, Target.SM90, options=dataclasses.replace(
                    base, store_num_warps=w, store_block_m=bm)))
                i = [0]

                def call():
                    kern.store(*sets[i[0] % 2], check=False)
                    i[0] += 1
                sets[0][2].zero_()
                call()  # set 0 into a zeroed cache: this variant's bytes
                torch.cuda.synchronize()
                diff = compare_store(spec, sets[0][2], want, sets[0][0], sets[0][3])
                verdict = ("ok" if diff.ok else "MISMATCH") + f" ({diff.index_flips} flips, {diff.max_norm_ulp} ulp)"
                us = bench(call, reps=20)
                print(f"| {preset} | {layout} | {n // 1024}K | {w}{'*' if (w, bm) == cur else ''} | {bm} | "
                      f"{us:.1f} | {(rd + wr) / (us * 1e-6) / ceil * 100:.1f} | {verdict} |", flush=True)
