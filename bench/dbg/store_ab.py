"""The Triton store at head_dim 96 with the orthogonal rotation, A/B in one run: session 48's (bf16x6 dots of the
fp32 key, 16 rows a program; the template of commit 8fc070e7, written to bench/dbg/old_tpl by git show) against session 49's
(_rot_cols_exact: the key's exact bf16 parts meet Pi^T's three host-split bf16 parts in three plain dots) at 16 /
32 / 64 rows a program and 2 / 4 / 8 warps, its column chunks unrolled (static) or software-pipelined (stages3),
64K tokens x 32 KV heads (Phi-3-mini), bf16 and fp16 keys; each checked against the reference on 4096 tokens
(compare_store's rule). Prints a markdown table last.
    PYTHONPATH=.:/tmp/pp python bench/dbg/store_ab.py"""
import dataclasses
import subprocess
from pathlib import Path

import torch

import tqgen.lower_triton as lt
from tqgen import LayoutSpec
from tqgen import reference as ref
from tqgen.testing import compare_store
from tqgen.triton_launch import load_variant

NEW_DIR, OLD_DIR = lt.TEMPLATE_DIR, Path(__file__).parent / "old_tpl"
OLD_COMMIT = "8fc070e7"  # session 48's last commit: its Triton template, written to old_tpl/ here (not committed)
if not (OLD_DIR / "triton" / "kernels.py.j2").exists():
    (OLD_DIR / "triton").mkdir(parents=True, exist_ok=True)
    (OLD_DIR / "triton" / "kernels.py.j2").write_bytes(subprocess.run(
        ["git", "show", f"{OLD_COMMIT}:tqgen/templates/triton/kernels.py.j2"], check=True, capture_output=True).stdout)
CHUNKS = "tl.range(0, D_REAL, ROT_NC)"
EDITS = {"static": "tl.static_range(0, D_REAL, ROT_NC)", "stages3": "tl.range(0, D_REAL, ROT_NC, num_stages=3)"}
DIRS = {"old": OLD_DIR, "new": NEW_DIR}
for name, loop in EDITS.items():  # the current template with its column-chunk loops rewritten
    text = (NEW_DIR / "triton" / "kernels.py.j2").read_text()
    assert CHUNKS in text
    DIRS[name] = Path(f"/tmp/store_ab_{name}")
    (DIRS[name] / "triton").mkdir(parents=True, exist_ok=True)
    (DIRS[name] / "triton" / "kernels.py.j2").write_text(text.replace(CHUNKS, loop))
    if not (DIRS[name] / "gpu").exists():
        (DIRS[name] / "gpu").symlink_to(NEW_DIR / "gpu")
n, hk, d = 65536, 32, 96
g = torch.Generator(device="cuda").manual_seed(0)
rows = []
VARIANTS = [("old", 16, 4), ("new", 16, 4), ("new", 16, 2), ("static", 16, 4), ("stages3", 16, 4), ("new", 32, 4)]


def bench(spec, which, bm, warps, dtype, key, val, slots):
    lt.TEMPLATE_DIR = DIRS[which]
    lt._template_digest.cache_clear()
    lt._env.cache_clear()
    opts = dataclasses.replace(lt.triton_options(spec, lt.Target.SM90), store_block_m=bm, store_num_warps=warps,
                               dequant_block_n=bm)  # dense_reasons asks both for DENSE_ROWS
    saved = lt.DENSE_ROWS
    lt.DENSE_ROWS = bm
    try:
        kern = load_variant(lt.make_variant(spec, "sm90", options=opts))
    finally:
        lt.DENSE_ROWS = saved
    c = kern._device_consts(key.device)  # the store asks by the cache's device: "cuda:0"
    if which == "old":
        c["store_rot"] = c["rot"]  # the old store reads [Pi^T, Pi] in fp32
    cache = ref.allocate(spec, n // spec.block_size, hk, "cuda")
    for _ in range(3):
        kern.store(key, val, cache, slots, check=False)
    ts = []
    for _ in range(10):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); kern.store(key, val, cache, slots, check=False); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b) * 1000)
    m = 4096
    want = ref.allocate(spec, n // spec.block_size, hk, "cuda")
    got = ref.allocate(spec, n // spec.block_size, hk, "cuda")
    kern.store(key[:m], val[:m], got, slots[:m])
    ref.store(spec, key[:m], val[:m], want, slots[:m])
    diff = compare_store(spec, got, want, key[:m], slots[:m])
    rows.append((spec.token, which, bm, warps, str(dtype)[6:], sorted(ts)[5], diff.ok, diff.summary()))
    print(rows[-1], flush=True)


for dtype in (torch.bfloat16, torch.float16):
    key = torch.randn(n, hk, d, device="cuda", generator=g).to(dtype)
    val = torch.randn(n, hk, d, device="cuda", generator=g).to(dtype)
    slots = torch.randperm(n, device="cuda", generator=g).to(torch.int32)
    cases = [("4bit_nc", "soa"), ("3bit_nc", "aos")] if dtype == torch.bfloat16 else [("4bit_nc", "soa")]
    for preset, layout in cases:
        spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=d, rotation="orthogonal")
        for which, bm, warps in VARIANTS:
            try:
                bench(spec, which, bm, warps, dtype, key, val, slots)
            except Exception as e:  # a shape that does not compile: say so, go on
                print(spec.token, which, bm, warps, type(e).__name__, str(e)[:200], flush=True)
    k8 = LayoutSpec.from_preset("k8v4", layout="soa", head_dim=d, rotation="orthogonal")
    if dtype == torch.bfloat16:
        for which, bm, warps in VARIANTS[:2]:
            try:
                bench(k8, which, bm, warps, dtype, key, val, slots)
            except Exception as e:
                print(k8.token, which, bm, warps, type(e).__name__, str(e)[:200], flush=True)
lt.TEMPLATE_DIR = NEW_DIR
gb = n * hk * d * 2 * 2 / 1e9  # bf16 key + value read (the slots' bytes come on top)
print(f"\n| spec | store | rows | warps | keys | median us | K+V read GB/s | store check |\n|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]:.1f} | {gb / r[5] * 1e6:.0f} | "
          f"{'ok' if r[6] else 'FAIL'}: {r[7]} |")
