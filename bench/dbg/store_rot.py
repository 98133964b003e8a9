"""The Triton store at head_dim 96 with the orthogonal rotation: its dots' precision (bf16x6, the default; tf32x3;
bf16x3) timed side by side on 64K tokens x 32 KV heads, and each checked against the reference on 4096 tokens
(compare_store's rule). Session 48's next step for the rotated store (6-13 % of the copy ceiling).
    PYTHONPATH=.:/tmp/pp python bench/dbg/store_rot.py"""
import sys

import torch

import tqgen.lower_triton as lt
from tqgen import LayoutSpec
from tqgen import reference as ref
from tqgen.testing import compare_store
from tqgen.triton_launch import load_variant

orig = lt._render_inputs
n, hk, d = 65536, 32, 96
g = torch.Generator(device="cuda").manual_seed(0)
key = torch.randn(n, hk, d, device="cuda", generator=g).to(torch.bfloat16)
val = torch.randn(n, hk, d, device="cuda", generator=g).to(torch.bfloat16)
slots = torch.randperm(n, device="cuda", generator=g).to(torch.int32)
rows = []
for preset, layout in [("4bit_nc", "soa"), ("4bit_nc", "aos"), ("3bit_nc", "soa")]:
    spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=d, rotation="orthogonal")
    for prec in sys.argv[1:] or ["bf16x6", "tf32x3", "bf16x3", "bf16x6"]:
        lt._render_inputs = lambda s, k, t, p=prec: dict(orig(s, k, t), rot_precision=p)
        lt._template_digest.cache_clear()
        kern = load_variant(lt.make_variant(spec, "sm90"))
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
        rows.append((preset, layout, prec, sorted(ts)[5], diff.ok, diff.summary()))
        print(rows[-1], flush=True)
lt._render_inputs = orig
print("| preset | layout | dots | median us | store check |\n|---|---|---|---|---|")
for r in rows:
    print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.1f} | {'ok' if r[4] else 'FAIL'}: {r[5]} |")
