"""Runtime measurements on the GPU: the prefill decode-vs-dequant threshold and a 32K-token prompt
in 512-token chunks (time and peak memory).

    PYTHONPATH=. python bench/runtime_h200.py --out DIR
"""
import argparse, json, math, sys, time
from pathlib import Path
import torch
from triton.testing import do_bench
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import tqgen_runtime as tqr  # noqa: E402


def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--out", default="bench/results"); a = ap.parse_args()
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    hq, hk, d = 32, 8, 128
    kv = tqr.load("4bit_nc", layout="soa", num_kv_heads=hk, num_q_heads=hq, device="cuda")
    rows = []
    for ctx in (4096, 32768):
        nblk = math.ceil((ctx + 512) / 16)
        cache = kv.allocate(nblk)
        bt = torch.arange(nblk, dtype=torch.int32, device="cuda")[None]
        for s in range(0, ctx, 65536):
            m = min(65536, ctx - s)
            x = torch.randn(m, hk, d, dtype=torch.bfloat16, device="cuda")
            kv.store(x, x, cache, torch.arange(s, s + m, dtype=torch.int32, device="cuda"))
        for n in (1, 4, 16, 32, 64, 128, 256, 512):
            q = torch.randn(n, hq, d, dtype=torch.bfloat16, device="cuda")
            k = torch.randn(n, hk, d, dtype=torch.bfloat16, device="cuda")
            slots = torch.arange(ctx, ctx + n, dtype=torch.int32, device="cuda")
            sl = torch.tensor([ctx + n], dtype=torch.int32, device="cuda")
            qsl = torch.tensor([0, n], dtype=torch.int32, device="cuda")
            t = {}
            for name, lim in (("decode", 10**9), ("dequant_sdpa", 0)):
                t[name] = do_bench(lambda: kv.prefill(q, k, k, cache, slots, bt, sl, qsl, decode_max_tokens=lim),
                                   warmup=3, rep=20, return_mode="median") * 1e3
            rows.append(dict(ctx=ctx, new_tokens=n, decode_us=t["decode"], dequant_sdpa_us=t["dequant_sdpa"]))
            print(rows[-1], flush=True)
        del cache
    # crossover: the largest chunk for which the decode path is still faster, at every context
    ok = [n for n in sorted({r["new_tokens"] for r in rows})
          if all(r["decode_us"] <= r["dequant_sdpa_us"] for r in rows if r["new_tokens"] == n)]
    threshold = max(ok) if ok else 0
    # a 32K-token prompt in 512-token chunks with the runtime's default threshold
    torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
    n_total, chunk = 32768, 512
    nblk = n_total // 16
    cache = kv.allocate(nblk)
    bt = torch.arange(nblk, dtype=torch.int32, device="cuda")[None]
    q = torch.randn(n_total, hq, d, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(n_total, hk, d, dtype=torch.bfloat16, device="cuda")
    base = torch.cuda.max_memory_allocated()
    torch.cuda.synchronize(); t0 = time.time(); per_chunk = []
    for s in range(0, n_total, chunk):
        c0 = time.time()
        kv.prefill(q[s:s + chunk], k[s:s + chunk], k[s:s + chunk], cache,
                   torch.arange(s, s + chunk, dtype=torch.int32, device="cuda"), bt,
                   torch.tensor([s + chunk], dtype=torch.int32, device="cuda"),
                   torch.tensor([0, chunk], dtype=torch.int32, device="cuda"))
        torch.cuda.synchronize(); per_chunk.append(time.time() - c0)
    total = time.time() - t0
    peak = torch.cuda.max_memory_allocated() - base
    res = dict(rows=rows, measured_threshold=threshold, default_threshold=tqr.PREFILL_DECODE_MAX_TOKENS,
               prefill_32k=dict(chunk=chunk, total_s=total, first_chunk_ms=per_chunk[0] * 1e3,
                                last_chunk_ms=per_chunk[-1] * 1e3, peak_extra_MiB=peak / 2**20,
                                cache_MiB=cache.numel() / 2**20))
    (out / "runtime-sm90.json").write_text(json.dumps(res, indent=1))
    print(json.dumps({k: v for k, v in res.items() if k != "rows"}, indent=1))


if __name__ == "__main__":
    main()
