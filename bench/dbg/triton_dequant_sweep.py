"""The Triton dequant's tokens a program (BLOCK_N) x warps on the H200 (session 32): every combination timed on the
same cache (B=32, L=8K, Hk 8, D 128, bf16 out; L2 cannot hold it), outputs compared with the default's (16 x 4).
    PYTHONPATH=$PWD:/tmp/pp python bench/dbg/triton_dequant_sweep.py"""
import sys
from pathlib import Path

import torch

import tqgen_runtime as tqr
from tqgen.triton_launch import layout_constexprs, load_triton, triton_cdiv

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/
from cuda_h200 import wall_us  # noqa: E402

dev = torch.device("cuda")
B, L, HK = 32, 8192, 8
ceiling = None


def copy_ceiling():
    x = torch.empty(1 << 28, dtype=torch.float32, device=dev)
    y = torch.empty_like(x)
    return 2 * x.numel() * 4 / bench(lambda: y.copy_(x)) / 1e3


def bench(f, reps=10):
    return wall_us(f, reps, warm=2)


ceil = copy_ceiling()
print(f"copy ceiling {ceil:.0f} GB/s")
print("| preset | layout | BLOCK_N | warps | us | % ceiling | x default | same output |")
print("|---|---|---|---|---|---|---|---|")
for preset, layout in (("4bit_nc", "soa"), ("4bit_nc", "aos"), ("k8v4", "soa"), ("k3v4_nc", "soa")):
    kv = tqr.load(preset, layout=layout, num_kv_heads=HK, num_q_heads=32, device=dev, backend="triton")
    tk = load_triton(kv.spec, "sm90")
    bs = kv.spec.block_size
    pages = L // bs
    cache = kv.allocate(B * pages)
    x = torch.randn(B * L, HK, 128, device=dev, dtype=torch.bfloat16)
    kv.store(x, x, cache, torch.arange(B * L, dtype=torch.int32, device=dev))
    bt = torch.randperm(B * pages, device=dev, dtype=torch.int32).view(B, pages).contiguous()
    sl = torch.full((B,), L, dtype=torch.int32, device=dev)
    k = torch.empty(B, HK, L, 128, dtype=torch.bfloat16, device=dev)
    v = torch.empty_like(k)
    c = tk._device_consts(dev)
    packed = cache.element_size() * cache[0].numel() * (B * pages) / (B * L * HK)  # bytes a token-head in the pages
    moved = B * L * HK * (packed + 2 * 128 * 2)

    def run(bn, warps):
        tk.module.tq_dequant[(B * HK, triton_cdiv(L, bn))](
            cache, cache.view(torch.int16), bt, sl, c["rot"], c["cent"], k, v, bt.stride(0), L,
            **layout_constexprs(kv.spec, HK), BLOCK_N=bn, num_warps=warps, num_stages=1)

    run(16, 4)
    ref_k, ref_v = k.clone(), v.clone()
    base = bench(lambda: run(16, 4))
    for bn in (16, 32, 64):
        for warps in (1, 2, 4, 8):
            k.zero_(), v.zero_()
            try:
                run(bn, warps)
            except Exception as e:  # noqa: BLE001 (a combination that does not compile: say so)
                print(f"| {preset} | {layout} | {bn} | {warps} | {type(e).__name__} | | | |", flush=True)
                continue
            same = torch.equal(k, ref_k) and torch.equal(v, ref_v)
            us = bench(lambda: run(bn, warps))
            pct = 100 * moved / us / 1e3 / ceil
            print(f"| {preset} | {layout} | {bn} | {warps} | {us:.1f} | {pct:.1f} | "
                  f"{base / us:.2f} | {same} |", flush=True)
    del cache, x, k, v, ref_k, ref_v
    torch.cuda.empty_cache()
