"""Host cost of one eager kv.prefill call (session 31): 4bit_nc SoA (C++ kernels), Hq 32 Hk 8 D 128, continuation
chunks of 4 and 512 new tokens after 4096 of history at B = 1 and 8; with the argument checks or check=False, the
lengths (seq_lens, query_start_loc) on the GPU or as host tensors. Wall time a call (host timer, the stream synced
after each call), median of 30 after 5 warm-up calls.
    python bench/dbg/prefill_host.py"""
import statistics
import time

import torch

import tqgen_runtime as tqr

kv = tqr.load("4bit_nc", layout="soa", num_kv_heads=8, num_q_heads=32, device="cuda")
dev = torch.device("cuda")
print(f"{torch.cuda.get_device_name()}, {kv.variants['decode']}")
print("| B | history | new | lengths | check=True us | check=False us |\n|---|---|---|---|---|---|")
for b in (1, 8):
    for n in (4, 512):
        ctx, bs = 4096, kv.spec.block_size
        nb = -(-(ctx + n) // bs)
        cache = kv.allocate(b * nb)
        bt = torch.arange(b * nb, dtype=torch.int32, device=dev).reshape(b, nb)
        hist = torch.randn(b * ctx, 8, 128, device=dev, dtype=torch.bfloat16)
        kv.store(hist, hist, cache, (bt[:, :ctx // bs].repeat_interleave(bs, 1) * bs
                                     + torch.arange(ctx, device=dev) % bs).reshape(-1).to(torch.int32))
        pos = ctx + torch.arange(n, device=dev)
        slots = (bt[:, pos // bs].long() * bs + (pos % bs)[None]).reshape(-1).to(torch.int32)
        q = torch.randn(b * n, 32, 128, device=dev, dtype=torch.bfloat16)
        k = torch.randn(b * n, 8, 128, device=dev, dtype=torch.bfloat16)
        for where in ("gpu", "host"):
            d = dev if where == "gpu" else torch.device("cpu")
            sl = torch.full((b,), ctx + n, dtype=torch.int32, device=d)
            qsl = torch.arange(0, b * n + 1, n, dtype=torch.int32, device=d)
            row = f"| {b} | {ctx} | {n} | {where} |"
            for check in (True, False):
                ts = []
                for i in range(35):
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    kv.prefill(q, k, k, cache, slots, bt, sl, qsl, check=check)
                    torch.cuda.synchronize()
                    if i >= 5:
                        ts.append(time.perf_counter() - t0)
                row += f" {statistics.median(ts) * 1e6:.0f} |"
            print(row)
