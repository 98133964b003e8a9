"""Where one eager kv.prefill call's host time goes (session 31): cProfile over 50 calls of a 4-token and a 512-token
continuation chunk after 4096 tokens of history, B=1, 4bit_nc SoA (C++ kernels), check=False, lengths as host tensors.
    python bench/dbg/prefill_profile.py"""
import cProfile
import pstats
import time

import torch

import tqgen_runtime as tqr

kv = tqr.load("4bit_nc", layout="soa", num_kv_heads=8, num_q_heads=32, device="cuda")
dev = torch.device("cuda")
ctx, bs = 4096, kv.spec.block_size
for n in (4, 512):
    nb = -(-(ctx + n) // bs)
    cache = kv.allocate(nb)
    bt = torch.arange(nb, dtype=torch.int32, device=dev)[None]
    hist = torch.randn(ctx, 8, 128, device=dev, dtype=torch.bfloat16)
    kv.store(hist, hist, cache, torch.arange(ctx, dtype=torch.int32, device=dev))
    slots = torch.arange(ctx, ctx + n, dtype=torch.int32, device=dev)
    q = torch.randn(n, 32, 128, device=dev, dtype=torch.bfloat16)
    k = torch.randn(n, 8, 128, device=dev, dtype=torch.bfloat16)
    sl, qsl = torch.tensor([ctx + n], dtype=torch.int32), torch.tensor([0, n], dtype=torch.int32)
    call = lambda: kv.prefill(q, k, k, cache, slots, bt, sl, qsl, check=False)  # noqa: E731
    for _ in range(10):
        call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(50):
        call()
    host = (time.perf_counter() - t0) / 50
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / 50
    print(f"== new={n}: {host * 1e6:.0f} us of host time a call (launches queued), {wall * 1e6:.0f} us with the GPU's work")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(50):
        call()
    pr.disable()
    torch.cuda.synchronize()
    pstats.Stats(pr).sort_stats("cumulative").print_stats(28)
