"""End-to-end: pick variants for the best device here, store a random KV sequence into a paged cache,
decode, prefill a continuation in chunks, dequantise — each compared with the reference oracle.

On an NVIDIA GPU the generated Triton kernels run natively; on a CPU-only machine they run through
Triton's interpreter (slow, so the sizes shrink).

    python examples/demo.py [--preset 4bit_nc] [--layout soa] [--seq-len N]
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import time

import torch

if not torch.cuda.is_available():  # the CPU runs Triton kernels through the interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")

import tqgen_runtime as tqr  # noqa: E402
from tqgen import derive_layout  # noqa: E402
from tqgen import reference as ref  # noqa: E402
from tqgen.testing import DECODE_TOL, Case, compare_store, rel_err  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="4bit_nc")
    ap.add_argument("--layout", default="soa")
    ap.add_argument("--seq-len", type=int, default=None, help="default: 32768 on a GPU, 200 on the CPU")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    gpu = torch.cuda.is_available()
    hk, hq = 8, 32
    kv = tqr.load(a.preset, layout=a.layout, head_dim=128, num_kv_heads=hk, num_q_heads=hq, block_size=16,
                  dtype=torch.bfloat16, device="cuda" if gpu else "cpu")
    spec = kv.spec
    slot = derive_layout(spec).slot_bytes
    print(f"device {kv.device} -> target {kv.target}{' (' + kv.note + ')' if kv.note else ''}")
    for k, v in kv.variants.items():
        print(f"  {k:<8} {v}")
    for cid, reasons in kv.rejected:
        print(f"  passed over {cid}: {reasons[0]}")
    print(f"{spec.token}: {slot} bytes per token-head vs {4 * spec.head_dim} in bf16 ({4 * spec.head_dim / slot:.2f}x smaller)")

    n = a.seq_len or (32768 if gpu else 200)
    t0 = time.time()
    case = Case(spec, [n, n // 3, 0], hk, hq // hk, seed=0).build(kv.device)
    cache = kv.allocate(case["num_blocks"] + 8)  # room for the continuation below
    kv.store(case["key"], case["value"], cache, case["slot_mapping"])
    want = ref.allocate(spec, cache.shape[0], hk, kv.device)
    for s in range(0, case["key"].shape[0], 16384):
        sl = slice(s, s + 16384)
        ref.store(spec, case["key"][sl], case["value"][sl], want, case["slot_mapping"][sl])
    diff = compare_store(spec, cache, want, case["key"], case["slot_mapping"])
    print(f"store    {diff.summary()}")

    out = kv.decode(case["query"], cache, case["block_table"], case["seq_lens"], sinks=case["sinks"])
    exp = ref.decode(spec, case["query"], cache, case["block_table"], case["seq_lens"], sinks=case["sinks"])
    dec_err = rel_err(out, exp)
    print(f"decode   max rel err vs reference {dec_err:.2e} (tolerance {DECODE_TOL[torch.bfloat16]:.2e})")

    # continuation prefill of the shortest non-empty sequence: 2 chunks of new tokens
    i = 1
    ctx = int(case["seq_lens"][i])
    chunk = 24
    nb = case["block_table"].shape[1]
    bt = torch.cat([case["block_table"][i:i + 1, : math.ceil(ctx / 16)],
                    torch.arange(case["num_blocks"], case["num_blocks"] + 8, dtype=torch.int32,
                                 device=kv.device)[None]], dim=1)[:, : max(nb, math.ceil((ctx + 2 * chunk) / 16))]
    g = torch.Generator(device=kv.device).manual_seed(7)
    pre_err = 0.0
    for c in range(2):
        s = ctx + c * chunk
        pos = torch.arange(s, s + chunk, device=kv.device)
        slots = (bt[0, pos // 16].long() * 16 + pos % 16).to(torch.int32)
        q = torch.randn(chunk, hq, 128, device=kv.device, generator=g).to(torch.bfloat16)
        k = torch.randn(chunk, hk, 128, device=kv.device, generator=g).to(torch.bfloat16)
        o = kv.prefill(q, k, k, cache, slots, bt, torch.tensor([s + chunk], dtype=torch.int32, device=kv.device),
                       torch.tensor([0, chunk], dtype=torch.int32, device=kv.device))
        e = ref.decode(spec, q, cache, bt.expand(chunk, -1).contiguous(),
                       torch.arange(s + 1, s + chunk + 1, dtype=torch.int32, device=kv.device))
        pre_err = max(pre_err, rel_err(o, e))
    print(f"prefill  2 continuation chunks of {chunk} tokens: max rel err vs reference {pre_err:.2e}")

    k, v = kv.dequant(cache, case["block_table"], case["seq_lens"], dtype=torch.float32)
    ek, ev = ref.dequant(spec, cache, case["block_table"], case["seq_lens"])
    kv_err = max(rel_err(k, ek), rel_err(v, ev))
    print(f"dequant  max rel err vs reference {kv_err:.1e}   ({time.time() - t0:.1f} s)")
    ok = (diff.ok and dec_err <= DECODE_TOL[torch.bfloat16] and pre_err <= DECODE_TOL[torch.bfloat16]
          and kv_err < 1e-5 and bool(torch.isfinite(out).all()))
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
