"""Where an eager first-chunk prefill call's host time goes (session 32): cProfile over 50 calls of kv.prefill of 8
new prompts of 128 tokens, 4bit_nc SoA (C++ store), check=False, host lengths; plus the host / wall time a call.
    PYTHONPATH=$PWD:/tmp/pp python bench/dbg/fresh_profile.py"""
import cProfile
import pstats
import time

import torch

import tqgen_runtime as tqr

dev = torch.device("cuda")
kv = tqr.load("4bit_nc", layout="soa", num_kv_heads=8, num_q_heads=32, device=dev)
b, n, bs = 8, 128, kv.spec.block_size
pages = n // bs
cache = kv.allocate(b * pages)
bt = torch.arange(b * pages, dtype=torch.int32, device=dev).view(b, pages)
slots = torch.arange(b * n, dtype=torch.int32, device=dev)
q = torch.randn(b * n, 32, 128, device=dev, dtype=torch.bfloat16)
k = torch.randn(b * n, 8, 128, device=dev, dtype=torch.bfloat16)
sl = torch.full((b,), n, dtype=torch.int32)
qsl = torch.arange(0, b * n + 1, n, dtype=torch.int32)
call = lambda: kv.prefill(q, k, k, cache, slots, bt, sl, qsl, check=False)  # noqa: E731
parts = {
    "prefill": call,
    "store alone": lambda: kv.store(k, k, cache, slots, check=False),
    "SDPA alone (the run's call)": lambda: tqr.api._attention_batch(q.view(b, n, 32, 128), k.view(b, n, 8, 128).transpose(1, 2),
                                                                     k.view(b, n, 8, 128).transpose(1, 2), 0, 0.088, None, None),
    "empty_like + copy": lambda: torch.empty_like(q).copy_(q),
}
for name, f in parts.items():
    for _ in range(10):
        f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(50):
        f()
    host = (time.perf_counter() - t0) / 50
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / 50
    print(f"{name}: {host * 1e6:.0f} us host a call, {wall * 1e6:.0f} us wall", flush=True)
pr = cProfile.Profile()
pr.enable()
for _ in range(50):
    call()
pr.disable()
torch.cuda.synchronize()
pstats.Stats(pr).sort_stats("tottime").print_stats(25)
