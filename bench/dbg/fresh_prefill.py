"""kv.prefill of first chunks only (new prompts, no history) at B sequences of n tokens, 4bit_nc SoA (C++ store),
check=False, lengths as host tensors: one SDPA call a sequence (session 31's code) vs one a run of equal chunks
(session 32), against one bf16 causal SDPA call over the batch [B, Hq, n, D] (what the attention itself costs).
    PYTHONPATH=<tree>:/tmp/pp python bench/dbg/fresh_prefill.py TAG"""
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import tqgen_runtime as tqr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/
from cuda_h200 import wall_us  # noqa: E402

tag = sys.argv[1] if len(sys.argv) > 1 else ""
dev = torch.device("cuda")
kv = tqr.load("4bit_nc", layout="soa", num_kv_heads=8, num_q_heads=32, device=dev)
print(f"| tree | B | n | prefill us | SDPA us | x SDPA |")
print("|---|---|---|---|---|---|")


timed = wall_us


for b in (8, 32):
    for n in (128, 512):
        bs = kv.spec.block_size
        pages = -(-n // bs)
        cache = kv.allocate(b * pages)
        bt = torch.arange(b * pages, dtype=torch.int32, device=dev).view(b, pages)
        slots = (bt[:, :, None] * bs + torch.arange(bs, device=dev)).flatten(1)[:, :n].flatten()
        q = torch.randn(b * n, 32, 128, device=dev, dtype=torch.bfloat16)
        k = torch.randn(b * n, 8, 128, device=dev, dtype=torch.bfloat16)
        sl = torch.full((b,), n, dtype=torch.int32)
        qsl = torch.arange(0, b * n + 1, n, dtype=torch.int32)
        us = timed(lambda: kv.prefill(q, k, k, cache, slots, bt, sl, qsl, check=False))
        qq, kk = q.view(b, n, 32, 128).transpose(1, 2), k.view(b, n, 8, 128).transpose(1, 2)
        sd = timed(lambda: F.scaled_dot_product_attention(qq, kk, kk, is_causal=True, enable_gqa=True))
        print(f"| {tag} | {b} | {n} | {us:.1f} | {sd:.1f} | {sd / us:.2f} |", flush=True)
