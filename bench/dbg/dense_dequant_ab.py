"""The dense (orthogonal) rotation's C++ rows dequant at head_dim 80 / 96, A/B in one run (session 58): the current
rendering (base: a rotation a round) against (dN) CudaOptions.dequant_rounds=N (the rounds' rows through one
rotation: 80 with 4, 96 with 2), (mbM) the dequant's __launch_bounds__ minimum at M blocks an SM, (nomma: timing only,
the outputs wrong) the rotation without its products; a+b: both. B=8 L=8K x 32 KV heads, bf16 outputs (OT=f16:
fp16). Every arm's K and V against the reference dequant (pure torch, on the GPU: within one rounding, 2^-8 / 2^-11
of the largest |K|) and bit for bit against base's (the rounds' products are base's, per row in the same order).
Prints a markdown table last.
    PYTHONPATH=.:/tmp/pp python bench/dbg/dense_dequant_ab.py
    ARMS=base,d4,d4+mb4 CASES=4bit_nc:soa:80 OT=f16 ... python bench/dbg/dense_dequant_ab.py"""
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor

import torch

sys.path.insert(0, "bench")
sys.path.insert(0, "bench/dbg")
from ab_arms import cubin, joined, launch_bound, no_products  # noqa: E402
from cuda_h200 import bench  # noqa: E402
from tqgen import LayoutSpec  # noqa: E402
from tqgen import reference as ref  # noqa: E402
from tqgen.cuda_launch import kernels_from_image  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import cuda_options, make_variant as make_cuda, render_cuda  # noqa: E402
from tqgen.testing import Case, rel_err  # noqa: E402

dev = torch.device("cuda")
OT = {"bf16": torch.bfloat16, "f16": torch.float16}[os.environ.get("OT", "bf16")]  # the outputs' dtype
TOL = {torch.bfloat16: 2**-8, torch.float16: 2**-11}[OT]
B, L, HK = 8, 8192, 32
ARMS = os.environ.get("ARMS", "base,d4,d4+mb4,nomma").split(",")
CASES = os.environ.get("CASES", "4bit_nc:soa:80,3bit_nc:aos:80,k8v4:aos:80").split(",")


def patched(src: str, arm: str) -> str | None:
    """The rendering with ``arm``'s change (dN is the variant's option, not a patch)."""
    if arm == "base":
        return src
    if "+" in arm:
        return joined(patched, src, arm)
    if arm == "nomma":
        return no_products(src)
    if arm.startswith("mb"):
        return launch_bound(src, "tq_dequant", arm[2:], 3)
    raise ValueError(arm)


def arm_variant(case: str, arm: str):
    preset, lay, d = case.split(":")
    spec = LayoutSpec.from_preset(preset, layout=lay, head_dim=int(d), rotation="orthogonal",
                                  **({"rotation_seed": 3} if preset == "k8v4" else {}))
    rounds = [a[1:] for a in arm.split("+") if re.fullmatch(r"d\d", a)]
    opts = cuda_options(spec, Target.SM90).with_changes([f"dequant_rounds={rounds[0]}"]) if rounds else None
    return make_cuda(spec, "sm90", options=opts)


def compile_one(job):
    case, arm = job
    rest = "+".join(a for a in arm.split("+") if not re.fullmatch(r"d\d", a)) or "base"
    return cubin(patched(render_cuda(arm_variant(case, arm)), rest))


jobs = [(c, a) for c in CASES for a in ARMS]
with ThreadPoolExecutor(8) as ex:  # (the compiles first, in parallel)
    images = dict(zip(jobs, ex.map(compile_one, jobs)))
print(f"{len(jobs)} compiles done", flush=True)
if os.environ.get("COMPILE_ONLY"):  # (a CPU check of the arms' sources)
    sys.exit(0)
rows = []
for case in CASES:
    spec = arm_variant(case, ARMS[0]).spec
    c = Case(spec, [L] * B, HK, 1, seed=7).build(dev)
    cache = ref.allocate(spec, c["num_blocks"], HK, dev)
    ref.store(spec, c["key"], c["value"], cache, c["slot_mapping"])
    del c["key"], c["value"]
    ek, ev = ref.dequant(spec, cache, c["block_table"], c["seq_lens"])
    first = None
    for arm in ARMS:
        if images[case, arm] is None:
            continue
        k = kernels_from_image(arm_variant(case, arm), images[case, arm], dev)
        gk, gv = k.dequant(cache, c["block_table"], c["seq_lens"], dtype=OT)
        errs = (rel_err(gk, ek), rel_err(gv, ev))
        ok = "nomma" in arm or max(errs) < TOL
        same = first is None or (torch.equal(gk, first[0]) and torch.equal(gv, first[1]))
        first = first or (gk, gv)
        us = bench(lambda: k.dequant(cache, c["block_table"], c["seq_lens"], dtype=OT, check=False))
        rows.append((case, arm, us, same, f"K {errs[0]:.2e} V {errs[1]:.2e} {'ok' if ok else 'FAIL'}"))
        print(rows[-1], flush=True)
        del gk, gv
    del cache, ek, ev, first
    torch.cuda.empty_cache()

print(f"\n| case ({str(OT)[6:]} out) | arm | median us | vs base | same bytes as base | check |\n|---|---|---|---|---|---|")
base = {r[0]: r[2] for r in rows if r[1] == "base"}
for r in rows:
    print(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[2] / base.get(r[0], r[2]):.3f} | {r[3]} | {r[4]} |")
