"""Decode / store timing of the Triton variants vs the HBM copy ceiling and bf16 SDPA decode.

    PYTHONPATH=. python bench/triton_h200.py [--out DIR] [--target sm90] [--quick]

Everything is measured in one run on the current GPU: the copy ceiling (device-to-device copy of
2 GiB, bytes read + written), bf16 ``scaled_dot_product_attention`` decode (GQA, K/V [B, Hk, L, D]),
then each variant's decode (packed bytes read / time) and store (K/V bytes read + slot bytes written).
Times are medians of ``triton.testing.do_bench``; every buffer is far larger than the 60 MB L2.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tqgen import LayoutSpec, derive_layout  # noqa: E402
from tqgen.build import default_matrix  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.triton_launch import load_variant  # noqa: E402


def bench(fn, reps=50) -> float:
    return do_bench(fn, warmup=10, rep=reps, return_mode="median") * 1e-3  # seconds


def copy_ceiling() -> float:
    n = 2 << 30
    x = torch.empty(n, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    t = bench(lambda: y.copy_(x))
    del x, y
    return 2 * n / t


def sdpa_decode(b, hq, hk, length, d, dtype=torch.bfloat16) -> float:
    q = torch.randn(b, hq, 1, d, dtype=dtype, device="cuda")
    k = torch.randn(b, hk, length, d, dtype=dtype, device="cuda")
    v = torch.randn_like(k)
    t = bench(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
    del q, k, v
    return t


def fill_cache(kern, spec, b, length, hk, dtype):
    bs = spec.block_size
    nblk = b * math.ceil(length / bs)
    cache = torch.empty(nblk, bs, hk, derive_layout(spec).slot_bytes, dtype=torch.uint8, device="cuda")
    perm = torch.randperm(nblk, device="cuda").to(torch.int32)
    bt = perm.view(b, -1)
    chunk = 65536
    n = b * length
    pos = torch.arange(n, device="cuda")
    seq, p = pos // length, pos % length
    slots = (bt[seq, p // bs].long() * bs + p % bs).to(torch.int32)
    for s in range(0, n, chunk):
        m = min(chunk, n - s)
        k = torch.randn(m, hk, spec.head_dim, dtype=dtype, device="cuda")
        v = torch.randn(m, hk, spec.head_dim, dtype=dtype, device="cuda")
        kern.store(k, v, cache, slots[s:s + m], check=False)
    return cache, bt, torch.full((b,), length, dtype=torch.int32, device="cuda")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--target", default="sm90")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    target = Target.parse(a.target, "target")
    variants = [v for v in default_matrix()[0] if v.target is target and v.kind == "generic" and str(v.backend) == "triton"]
    dev = torch.cuda.get_device_name()
    ceiling = copy_ceiling()
    hq, hk, d, dt = 32, 8, 128, torch.bfloat16
    shapes = [(32, 32768), (128, 8192), (1, 4096)] if not a.quick else [(32, 32768)]
    rows, t0 = [], time.time()
    sdpa = {s: sdpa_decode(s[0], hq, hk, s[1], d) for s in shapes}
    for v in variants:
        kern = load_variant(v)
        spec = v.spec
        slot = derive_layout(spec).slot_bytes
        for b, length in shapes:
            cache, bt, sl = fill_cache(kern, spec, b, length, hk, dt)
            q = torch.randn(b, hq, d, dtype=dt, device="cuda")
            splits = kern.num_splits_for(b, hk, length, cache.device)
            ws = kern.workspace(b, hq, splits, cache.device)
            t = bench(lambda: kern.decode(q, cache, bt, sl, num_splits=splits, workspace=ws, check=False))
            packed = b * length * hk * slot
            rows.append(dict(kernel="decode", variant=v.id, spec=spec.token, B=b, L=length, splits=splits,
                             time_us=t * 1e6, bytes=packed, pct_copy=100 * packed / t / ceiling,
                             vs_sdpa=sdpa[(b, length)] / t, sdpa_us=sdpa[(b, length)] * 1e6))
            del cache, bt, sl
        # store: N tokens x 8 heads
        for n in ((65536, 262144) if not a.quick else (65536,)):
            k = torch.randn(n, hk, d, dtype=dt, device="cuda")
            vv = torch.randn_like(k)
            nblk = math.ceil(n / spec.block_size)
            cache = torch.zeros(nblk, spec.block_size, hk, slot, dtype=torch.uint8, device="cuda")
            slots = torch.randperm(nblk * spec.block_size, device="cuda")[:n].to(torch.int32)
            t = bench(lambda: kern.store(k, vv, cache, slots, check=False))
            moved = n * hk * (2 * d * k.element_size() + slot) + n * 4
            rows.append(dict(kernel="store", variant=v.id, spec=spec.token, B=n, L=0, splits=0, time_us=t * 1e6,
                             bytes=moved, pct_copy=100 * moved / t / ceiling, vs_sdpa=float("nan"), sdpa_us=0.0))
            del k, vv, cache
        torch.cuda.empty_cache()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = dict(device=dev, torch=torch.__version__, triton=triton.__version__, python=platform.python_version(),
                copy_ceiling_TBps=ceiling / 1e12, hq=hq, hk=hk, head_dim=d, dtype=str(dt), seconds=time.time() - t0,
                sdpa_us={f"B{b}_L{l}": t * 1e6 for (b, l), t in sdpa.items()})
    (out / f"triton-{a.target}.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    lines = [f"device {dev}; copy ceiling {ceiling / 1e12:.2f} TB/s (read+write); Hq={hq} Hk={hk} D={d} bf16",
             "", "| kernel | spec | B (or N) | L | splits | time (us) | % copy ceiling | x bf16 SDPA |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['kernel']} | {r['spec']} | {r['B']} | {r['L']} | {r['splits']} | {r['time_us']:.1f} | "
                     f"{r['pct_copy']:.1f} | {r['vs_sdpa']:.2f} |")
    lines.append("")
    lines += [f"bf16 SDPA decode B={b} L={l}: {t * 1e6:.1f} us" for (b, l), t in sdpa.items()]
    text = "\n".join(lines)
    (out / f"triton-{a.target}.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
