"""kv.prefill of chunks of *different* lengths or histories, 4bit_nc SoA (C++ store, dequant), check=False, lengths as
host tensors, Hq 32 / Hk 8 / D 128, bf16: equal chunks only (PREFILL_PAD_SCORES = 0: one call a chunk for distinct
lengths, as before session 34) against the padded groups of session 34 at each bound of PADS (default: the runtime's
PREFILL_PAD_SCORES), in one process, two rounds; wall time a call (host and GPU: the call reads its lengths on the
host, so an eager caller waits for both).
Table 1, new prompts (no history): B prompts of n/2..n tokens (seeded); x SDPA = one bf16 causal SDPA call over the
batch padded to its longest prompt [B, Hq, nmax, D] (the attention alone, no grouping to do). Table 2, continuation
chunks of 512 tokens after histories of L/2..L tokens (stored first; the dequant + SDPA path). Prints markdown.
    PYTHONPATH=<tree>:/tmp/pp [PADS=4194304,33554432] python bench/dbg/mixed_fresh_prefill.py"""
import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import tqgen_runtime as tqr
from tqgen_runtime import api

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/
from cuda_h200 import wall_us  # noqa: E402

dev = torch.device("cuda")
kv = tqr.load("4bit_nc", layout="soa", num_kv_heads=8, num_q_heads=32, device=dev)
default = api.PREFILL_PAD_SCORES
pads = [0] + [int(x) for x in os.environ.get("PADS", str(default)).split(",")]
cols = "".join(f" calls (2^{p.bit_length() - 1}) | us | / equal runs |" for p in pads[1:])
print(f"| round | B | lengths | calls (equal runs) | us |{cols} padded SDPA us |\n|{'---|' * (6 + 3 * len(pads[1:]))}")


def cells(res):
    (c0, u0), rest = res[0], res[1:]
    return f"{c0} | {u0:.1f} | " + "".join(f"{c} | {u:.1f} | {u / u0:.2f} | " for c, u in rest)


timed = wall_us


def n_calls(pad, spans, token_bytes):
    return len(api._pad_groups(spans, 32, token_bytes, pad))


for rnd in (1, 2):
    for b in (8, 32):
        for n in (128, 512, 2048):
            g = torch.Generator().manual_seed(b * n)
            news = torch.randint(n // 2, n + 1, (b,), generator=g).tolist()
            bs = kv.spec.block_size
            pages = -(-n // bs)
            cache = kv.allocate(b * pages)
            bt = torch.arange(b * pages, dtype=torch.int32, device=dev).view(b, pages)
            slots = torch.cat([bt[i].repeat_interleave(bs)[:m] * bs + torch.arange(m, device=dev) % bs
                               for i, m in enumerate(news)]).int()
            t = sum(news)
            q = torch.randn(t, 32, 128, device=dev, dtype=torch.bfloat16)
            k = torch.randn(t, 8, 128, device=dev, dtype=torch.bfloat16)
            sl = torch.tensor(news, dtype=torch.int32)
            qsl = torch.tensor([0] + torch.tensor(news).cumsum(0).tolist(), dtype=torch.int32)
            res = []
            for pad in pads:
                api.PREFILL_PAD_SCORES = pad
                res.append((n_calls(pad, [(0, m) for m in news], 48 * 256),
                            timed(lambda: kv.prefill(q, k, k, cache, slots, bt, sl, qsl, check=False))))
            api.PREFILL_PAD_SCORES = default
            top = max(news)
            qq = torch.randn(b, 32, top, 128, device=dev, dtype=torch.bfloat16)
            kk = torch.randn(b, 8, top, 128, device=dev, dtype=torch.bfloat16)
            sd = timed(lambda: F.scaled_dot_product_attention(qq, kk, kk, is_causal=True, enable_gqa=True))
            print(f"| {rnd} | {b} | {min(news)}-{top} | {cells(res)}{sd:.1f} |", flush=True)

print()
print(f"| round | B | histories | calls (equal runs) | us |{cols}\n|{'---|' * (5 + 3 * len(pads[1:]))}")
n = 512
for rnd in (1, 2):
    for b in (8, 32):
        for L in (4096, 8192):
            g = torch.Generator().manual_seed(b * L + 1)
            ctxs = torch.randint(L // 2, L + 1, (b,), generator=g).tolist()
            bs = kv.spec.block_size
            pages = -(-(L + n) // bs)
            cache = kv.allocate(b * pages)
            bt = torch.arange(b * pages, dtype=torch.int32, device=dev).view(b, pages)
            for i, c in enumerate(ctxs):  # the histories, stored
                h = torch.randn(c, 8, 128, device=dev, dtype=torch.bfloat16)
                kv.store(h, h, cache, (bt[i].repeat_interleave(bs)[:c] * bs + torch.arange(c, device=dev) % bs).int())
            slots = torch.cat([bt[i].repeat_interleave(bs)[c:c + n] * bs + torch.arange(c, c + n, device=dev) % bs
                               for i, c in enumerate(ctxs)]).int()
            q = torch.randn(b * n, 32, 128, device=dev, dtype=torch.bfloat16)
            k = torch.randn(b * n, 8, 128, device=dev, dtype=torch.bfloat16)
            sl = torch.tensor([c + n for c in ctxs], dtype=torch.int32)
            qsl = torch.arange(0, b * n + 1, n, dtype=torch.int32)
            res = []
            for pad in pads:
                api.PREFILL_PAD_SCORES = pad
                res.append((n_calls(pad, [(c, c + n) for c in ctxs], 32 * 256),
                            timed(lambda: kv.prefill(q, k, k, cache, slots, bt, sl, qsl, check=False), reps=10)))
            api.PREFILL_PAD_SCORES = default
            print(f"| {rnd} | {b} | {min(ctxs)}-{max(ctxs)} | {cells(res)}", flush=True)
