"""The dense (orthogonal) rotation's C++ store at head_dim 80 / 96, A/B of source patches in one run (session 56):
the current rendering against (novfirst) the value row not loaded first (with mb4: session 55's store at 80),
(vfirst) the value row loaded before the key's rotation, as the fp8 keys' store does
(TQ_STORE_V_FIRST: its loads in flight across the rotation's barriers), (vpf) an L2 prefetch of the value row's chunks
at the start (no registers held), and (q2 / q3, session 57) Lloyd-Max keys rotated by two / three
of Πᵀ's bf16 parts, (unroll) the rotation's k-chunk loop unrolled, (nomma / norot: timing only, the caches wrong) the
rotation without its products / not called, (mbN) the store's __launch_bounds__ minimum at N blocks an SM; a+b: both. 64K tokens x 32
KV heads, bf16 (DT=f16: fp16); every arm's cache checked against the reference (compare_store's rule, 4096 tokens) and bit for bit
against the current rendering. Prints a markdown table last.
    PYTHONPATH=.:/tmp/pp python bench/dbg/dense_store_ab.py                 # every case and arm
    ARMS=base,vfirst CASES=4bit_nc:soa:80 ... python bench/dbg/dense_store_ab.py"""
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
from tqgen.testing import compare_store  # noqa: E402

dev = torch.device("cuda")
DT = {"bf16": torch.bfloat16, "f16": torch.float16}[os.environ.get("DT", "bf16")]  # the inputs' dtype
N, HK = 65536, 32
ARMS = os.environ.get("ARMS", "base,vfirst,vpf,mb5,mb6,vfirst+mb6,vpf+mb6").split(",")
CASES = os.environ.get("CASES", "4bit_nc:soa:80,3bit_nc:aos:80,k3v4_nc:soa:80,4bit_nc:soa:96,4bit_nc:aos:96").split(",")
CODE = "  uint32_t code[TQ_EL];\n  {\n    float k[TQ_EL];\n"
V_IN = "  const uint16_t* const v_in = value + tok * svn + head * svh;\n"


def patched(src: str, arm: str) -> str | None:
    """The rendering with ``arm``'s change, None where it does not apply (already so)."""
    if arm == "base":
        return src
    if "+" in arm:  # (arms together: vfirst+mb6)
        return joined(patched, src, arm)
    if arm == "vfirst":
        if "#define TQ_STORE_V_FIRST" in src:
            return None
        assert src.count(CODE) == 1
        return src.replace(CODE, "#define TQ_STORE_V_FIRST 1\n  uint4 v_raw[TQ_EL / 8];\n"
                                 "  tq_load_row_raw<TQ_VCH>(v_in, j, ok, v_raw);\n" + CODE)
    if arm == "novfirst":  # (session 56's kernel without its value row first: with mb4, session 55's)
        out, n = re.subn(r"  // the dense rotation in 16-element lanes.*?\n#define TQ_STORE_V_FIRST 1\n  uint4 v_raw\[TQ_EL / 8\];\n"
                         r"  tq_load_row_raw<TQ_VCH>\(v_in, j, ok, v_raw\);\n", "", src, flags=re.S)
        return out if n == 1 else None
    if arm == "vpf":
        assert src.count(V_IN) == 1
        return src.replace(V_IN, V_IN + "  if (ok) {\n#pragma unroll\n    for (int c = 0; c < TQ_EL / TQ_VCH; ++c)\n"
                           "      asm volatile(\"prefetch.global.L2 [%0];\" :: \"l\"(v_in + (c * TQ_SR + j) * TQ_VCH));\n  }\n")
    if arm == "q2":  # (session 57) Lloyd-Max keys' rotation from two of Πᵀ's bf16 parts, not three
        out = src.replace("tq_dense_rotate<1, true>(k,", "tq_dense_rotate<1, true, 2>(k,").replace(
            "tq_dense_rotate<2>(k,", "tq_dense_rotate<2, false, 2>(k,")
        return out if out != src else None
    if arm == "q3":  # (session 57) ... three (the store before session 57)
        out = src.replace("tq_dense_rotate<1, true, 2>(k,", "tq_dense_rotate<1, true>(k,").replace(
            "tq_dense_rotate<2, false, 2>(k,", "tq_dense_rotate<2>(k,")
        return out if out != src else None
    if arm == "unroll":  # (session 57) tq_dense_rotate's k-chunk loop unrolled (the store and the dequant)
        out = src.replace("#pragma unroll 1  // (unrolled, sm80's", "#pragma unroll  // (unrolled, sm80's")
        return out if out != src else None
    if arm == "nomma":  # (session 57, timing only: wrong caches) the rotation without its products (no B loads)
        return no_products(src)
    if arm == "norot":  # (session 57, timing only: wrong caches) the store's Lloyd-Max keys not rotated at all
        out = re.sub(r"tq_dense_rotate<(1, true|2, false), 2>\(k,[^;]*;", ";", src)
        return out if out != src else None
    if arm.startswith("mb"):
        return launch_bound(src, "tq_store", arm[2:], 2)
    raise ValueError(arm)


def compile_one(job):
    """(case, arm, source) -> the cubin's bytes, None where the arm is moot."""
    return cubin(job[2])


def arm_variant(case: str, arm: str):
    """The case's sm90 variant; an arm with rN (session 57): CudaOptions.store_rounds=N (its own rendering and launch:
    rows a block x N), the arm's other parts patched into that rendering."""
    preset, lay, d = case.split(":")
    spec = LayoutSpec.from_preset(preset, layout=lay, head_dim=int(d), rotation="orthogonal")
    rounds = [a[1:] for a in arm.split("+") if re.fullmatch(r"r\d", a)]
    opts = cuda_options(spec, Target.SM90).with_changes([f"store_rounds={rounds[0]}"]) if rounds else None
    return make_cuda(spec, "sm90", options=opts)


def arm_source(case: str, arm: str) -> str | None:
    rest = "+".join(a for a in arm.split("+") if not re.fullmatch(r"r\d", a)) or "base"
    return patched(render_cuda(arm_variant(case, arm)), rest)


variants = {(c, a): arm_variant(c, a) for c in CASES for a in ARMS}
jobs = [(c, a, arm_source(c, a)) for c in CASES for a in ARMS]
with ThreadPoolExecutor(8) as ex:  # (the compiles first, in parallel)
    images = dict(zip([(c, a) for c, a, _ in jobs], ex.map(compile_one, jobs)))
print(f"{len(jobs)} compiles done", flush=True)
g = torch.Generator(device="cuda").manual_seed(0)
rows = []
for case in CASES:
    preset, lay, d = case.split(":")
    spec = variants[case, ARMS[0]].spec
    key = torch.randn(N, HK, int(d), device=dev, generator=g).to(DT)
    val = torch.randn(N, HK, int(d), device=dev, generator=g).to(DT)
    slots = torch.randperm(N, device=dev, generator=g).to(torch.int32)
    s4 = torch.randperm(4096, device=dev, generator=g).to(torch.int32)  # the check's 4096 tokens, every slot once
    want = ref.allocate(spec, 4096 // spec.block_size, HK, "cpu")
    ref.store(spec, key[:4096].cpu(), val[:4096].cpu(), want, s4.cpu())
    first = None
    for arm in ARMS:
        if images[case, arm] is None:
            continue
        k = kernels_from_image(variants[case, arm], images[case, arm], dev)
        small = ref.allocate(spec, 4096 // spec.block_size, HK, dev)
        k.store(key[:4096], val[:4096], small, s4)
        diff = compare_store(spec, small.cpu(), want, key[:4096].cpu(), s4.cpu())
        first = small if first is None else first
        cache = ref.allocate(spec, N // spec.block_size, HK, dev)
        us = bench(lambda: k.store(key, val, cache, slots, check=False))
        rows.append((case, arm, us, torch.equal(small, first), diff.summary()[:110]))
        print(rows[-1], flush=True)
    del key, val, slots
    torch.cuda.empty_cache()

print("\n| case | arm | median us | vs base | same bytes as base | check |\n|---|---|---|---|---|---|")
base = {r[0]: r[2] for r in rows if r[1] == "base"}
for r in rows:
    print(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[2] / base.get(r[0], r[2]):.3f} | {r[3]} | {r[4]} |")
