"""Decode time of widths no preset has, C++ vs Triton, on this GPU: the runtime forced to each backend, B=32 L=8K
(Hq 32, Hk 8, D 128, bf16), the cache written by the store, a workspace sized for the shape and no host checks (as in
a serving loop), median of 20 CUDA-event timings after 5 warm-ups (one input set: the cache, 0.15-0.4 GB, is larger
than L2); GB/s counts the cache's bytes once. Session 46: AoS 4-bit keys + 8-bit values built no C++ decode
before its fix (the runtime served Triton).

    python bench/dbg/width_time.py [layout:key_bits:value_bits ...]   # default: the four below
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import tqgen_runtime as tqr  # noqa: E402

B, L, HQ, HK, D = 32, 8192, 32, 8, 128


def time_decode(kv, args, reps: int = 20) -> float:
    ws = kv.workspace(B, L)
    for _ in range(5):
        kv.decode(*args, workspace=ws, check=False)
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        kv.decode(*args, workspace=ws, check=False)
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    return sorted(ts)[len(ts) // 2]


def main() -> None:
    cases = sys.argv[1:] or ["aos:4:8", "soa:3:8", "soa:2:2", "aos:4:4"]
    g = torch.Generator(device="cuda").manual_seed(0)
    print(f"{torch.cuda.get_device_name()}: B={B} L={L} Hq={HQ} Hk={HK} D={D} bf16, decode median us")
    print("| spec | slot bytes | cuda us | cuda GB/s | triton us | triton / cuda |")
    print("|---|---|---|---|---|---|")
    for c in cases:
        layout, kb, vb = c.split(":")
        times, ids, nbytes = {}, {}, 0
        for be in ("cuda", "triton"):
            kv = tqr.load("4bit_nc", layout=layout, head_dim=D, num_kv_heads=HK, num_q_heads=HQ, device="cuda",
                          backend=be, key_bits=int(kb), value_bits=int(vb))
            nb = B * L // 16
            cache = kv.allocate(nb)
            for s in range(0, nb * 16, 65536):  # every slot written by the store
                n = min(65536, nb * 16 - s)
                k = torch.randn(n, HK, D, device="cuda", generator=g, dtype=torch.bfloat16)
                kv.store(k, k, cache, torch.arange(s, s + n, dtype=torch.int32, device="cuda"))
            bt = torch.randperm(nb, device="cuda", generator=g).to(torch.int32).view(B, L // 16)
            sl = torch.full((B,), L, dtype=torch.int32, device="cuda")
            q = torch.randn(B, HQ, D, device="cuda", generator=g, dtype=torch.bfloat16)
            times[be] = time_decode(kv, (q, cache, bt, sl))
            nbytes = cache.numel()
            ids[be] = kv.variants["decode"]
            del cache
            torch.cuda.empty_cache()
        assert ids["cuda"].startswith("cuda-") and ids["triton"].startswith("triton-"), ids
        print(f"| {kv.spec.token} | {cache_slot(kv)} | {times['cuda']:.1f} | {nbytes / times['cuda'] / 1e3:.0f} | "
              f"{times['triton']:.1f} | {times['triton'] / times['cuda']:.2f} |", flush=True)


def cache_slot(kv) -> int:
    from tqgen.layout import derive_layout
    return derive_layout(kv.spec).slot_bytes


if __name__ == "__main__":
    main()
