"""The runtime's masked / sinks attention (sliding windows, sinks) a block of queries at a time vs one block (session
32): a first chunk of n tokens at gpt-oss-20b's attention shape (64 query / 8 KV heads, head_dim 64, bf16), sinks, a
128-token window or none; time, peak memory, and the blockwise result against one block where one block fits.
    PYTHONPATH=$PWD:/tmp/pp python bench/dbg/attn_blocks.py"""
import time

import torch

from tqgen_runtime import api

dev = torch.device("cuda")
hq, hk, d = 64, 8, 64
print("| n | window | ATTN_BLOCK_BYTES | ms | peak GiB | max abs diff vs one block |")
print("|---|---|---|---|---|---|")
for n in (8192, 32768):
    g = torch.Generator(device=dev).manual_seed(0)
    q = torch.randn(1, n, hq, d, device=dev, dtype=torch.bfloat16, generator=g)
    k = torch.randn(1, hk, n, d, device=dev, dtype=torch.bfloat16, generator=g)
    v = torch.randn(1, hk, n, d, device=dev, dtype=torch.bfloat16, generator=g)
    sinks = torch.randn(hq, device=dev, generator=g)
    for window in (128, None):
        ref = None
        for budget in ((1 << 40, 1 << 28) if n == 8192 else (1 << 28,)):
            api.ATTN_BLOCK_BYTES = budget
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            try:
                t0 = time.perf_counter()
                o = api._attention_batch(q, k, v, 0, d ** -0.5, sinks, window)
                torch.cuda.synchronize()
                ms = 1e3 * (time.perf_counter() - t0)
            except torch.OutOfMemoryError:
                print(f"| {n} | {window} | {budget} | OOM | | |", flush=True)
                continue
            peak = (torch.cuda.max_memory_allocated() - base) / 2**30
            diff = "" if ref is None else f"{float((o.float() - ref.float()).abs().max()):.2e}"
            ref = o if ref is None else ref
            print(f"| {n} | {window} | {budget} | {ms:.1f} | {peak:.2f} | {diff} |", flush=True)
            del o
