"""End-to-end: build a variant, store a random KV sequence into a paged cache, decode, compare with
the reference oracle — on the best device here (an NVIDIA GPU, else the CPU through Triton's
interpreter).

    python examples/demo.py [--preset 4bit_nc] [--layout soa] [--seq-len 2048]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import torch

if not torch.cuda.is_available():  # the CPU runs Triton kernels through the interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")

from tqgen import LayoutSpec, derive_layout  # noqa: E402
from tqgen import reference as ref  # noqa: E402
from tqgen.testing import DECODE_TOL, Case, compare_store, rel_err  # noqa: E402
from tqgen.triton_launch import load_triton  # noqa: E402


def device_target() -> tuple[torch.device, str]:
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        return torch.device("cuda"), f"sm{major}{minor}" if f"sm{major}{minor}" in ("sm80", "sm86", "sm89") else "sm90"
    return torch.device("cpu"), "cpu"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="4bit_nc")
    ap.add_argument("--layout", default="soa")
    ap.add_argument("--seq-len", type=int, default=None, help="default: 32768 on a GPU, 200 on the CPU")
    a = ap.parse_args()
    dev, target = device_target()
    spec = LayoutSpec.from_preset(a.preset, layout=a.layout)
    n = a.seq_len or (32768 if dev.type == "cuda" else 200)
    hk, gqa = 8, 4
    kern = load_triton(spec, target)
    print(f"device {dev} ({target}); variant {kern.variant.id}")
    print(f"{spec.token}: slot {derive_layout(spec).slot_bytes} bytes per token-head "
          f"(bf16 K+V: {4 * spec.head_dim}) -> {4 * spec.head_dim / derive_layout(spec).slot_bytes:.2f}x smaller")
    case = Case(spec, [n, n // 3, 0], hk, gqa, seed=0).build(dev)
    cache = ref.allocate(spec, case["num_blocks"], hk, dev)
    t0 = time.time()
    kern.store(case["key"], case["value"], cache, case["slot_mapping"])
    want = ref.allocate(spec, case["num_blocks"], hk, dev)
    for s in range(0, case["key"].shape[0], 16384):
        sl = slice(s, s + 16384)
        ref.store(spec, case["key"][sl], case["value"][sl], want, case["slot_mapping"][sl])
    diff = compare_store(spec, cache, want, case["key"], case["slot_mapping"])
    print(f"store: {diff.summary()}")
    out = kern.decode(case["query"], cache, case["block_table"], case["seq_lens"], sinks=case["sinks"])
    exp = ref.decode(spec, case["query"], cache, case["block_table"], case["seq_lens"], sinks=case["sinks"])
    err = rel_err(out, exp)
    k, v = kern.dequant(cache, case["block_table"], case["seq_lens"], dtype=torch.float32)
    ek, ev = ref.dequant(spec, cache, case["block_table"], case["seq_lens"])
    kv_err = max(rel_err(k, ek), rel_err(v, ev))
    print(f"decode vs reference: max rel err {err:.2e} (tolerance {DECODE_TOL[torch.bfloat16]:.2e}); "
          f"dequant vs reference {kv_err:.1e}; {time.time() - t0:.1f}s")
    ok = diff.ok and err <= DECODE_TOL[torch.bfloat16] and kv_err < 1e-5 and torch.isfinite(out).all()
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
