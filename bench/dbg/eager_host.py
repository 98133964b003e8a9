"""Eager host cost of the runtime's decode and store calls (debug): wall time a call, back to back (one sync at the
end), of ``kv.decode`` (a workspace, check=False) and ``kv.store`` (check=False) at B = 1 and 8, L = 4K, 4bit_nc SoA
(Hq 32, Hk 8, D 128, the C++ kernels), next to the same decode's GPU time by CUDA-graph replay: where the wall time is
above the GPU time, the host's Python and launches bound an eager call. Prints a markdown table. For a same-run A/B of
two trees (session 35's launcher against the one before it):
    here:    bash bench/dbg/ab_trees.sh prepare 665f9bd7      (then carry .xfer/base to the device)
    device:  bash bench/dbg/ab_trees.sh run 'python bench/dbg/eager_host.py' 2"""
import sys
from pathlib import Path

import torch

import tqgen_runtime as tqr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/
from cuda_h200 import wall_us  # noqa: E402

dev = torch.device("cuda")
kv = tqr.load("4bit_nc", layout="soa", num_kv_heads=8, num_q_heads=32, device=dev)
print("| B | decode eager us/call | decode graph us | store eager us/call (B tokens) |\n|---|---|---|---|")
for b in (1, 8):
    L, bs = 4096, kv.spec.block_size
    cache = kv.allocate(b * L // bs)
    bt = torch.arange(b * L // bs, dtype=torch.int32, device=dev).view(b, -1)
    sl = torch.full((b,), L, dtype=torch.int32, device=dev)
    q = torch.randn(b, 32, 128, device=dev, dtype=torch.bfloat16)
    k = torch.randn(b, 8, 128, device=dev, dtype=torch.bfloat16)
    slots = torch.arange(b, dtype=torch.int32, device=dev) * L
    ws = kv.workspace(b, L)

    def wall(f):
        return wall_us(f, reps=2000, warm=50)

    dec = lambda: kv.decode(q, cache, bt, sl, workspace=ws, check=False)  # noqa: E731
    st = lambda: kv.store(k, k, cache, slots, check=False)  # noqa: E731
    g = torch.cuda.CUDAGraph()
    dec()
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        dec()
    gt = wall(g.replay)
    print(f"| {b} | {wall(dec):.1f} | {gt:.1f} | {wall(st):.1f} |", flush=True)
