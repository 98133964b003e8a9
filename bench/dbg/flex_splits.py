"""Session 33, run 3: the flex paged baseline's split count (kernel option SPLIT_KV) at the targets' shapes,
CUDA-graph replay, two input sets rotated; prints us per split count (0 = torch's own choice)."""
import sys, torch
from tqgen.baselines import FlexPagedDecode
torch.manual_seed(0)
dev = "cuda"
SHAPES = [(32, 32768, 9, 3, 64), (32, 32768, 32, 8, 128), (128, 8192, 32, 8, 128), (1, 4096, 32, 8, 128),
          (8, 32768, 9, 3, 64)]
SPLITS = [0, 2, 4, 8, 16, 32]
page = 128
print("| B | L | Hq/Hk/D | split | us | GB/s |")
for b, l, hq, hk, d in SHAPES:
    nb = l // page
    bt = torch.randperm(b * nb, device=dev).view(b, nb)
    sets = [(torch.randn(1, hk, b * nb * page, d, dtype=torch.bfloat16, device=dev),
             torch.randn(1, hk, b * nb * page, d, dtype=torch.bfloat16, device=dev),
             torch.randn(b, hq, d, dtype=torch.bfloat16, device=dev)) for _ in range(2)]
    nbytes = 2 * b * l * hk * d * 2
    for sp in SPLITS:
        try:
            fs = [FlexPagedDecode(k, v, bt, [l] * b, page=page, split_kv=sp or None) for k, v, _ in sets]
            for f, (_, _, q) in zip(fs, sets):
                f(q)
            torch.cuda.synchronize()
            gs = []
            for f, (_, _, q) in zip(fs, sets):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    f(q)
                gs.append(g)
            for g in gs * 3:
                g.replay()
            ts = []
            for i in range(40):
                e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
                e0.record(); gs[i % 2].replay(); e1.record(); e1.synchronize()
                ts.append(e0.elapsed_time(e1) * 1e3)
            us = sorted(ts)[len(ts) // 2]
            print(f"| {b} | {l} | {hq}/{hk}/{d} | {sp} | {us:.1f} | {nbytes / us / 1e3:.0f} |", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"| {b} | {l} | {hq}/{hk}/{d} | {sp} | failed: {type(e).__name__}: {str(e)[:120]} | |", flush=True)
    del sets, fs, gs
    torch.cuda.empty_cache()
