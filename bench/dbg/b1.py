"""B=1 L=4K decode latency on the H200: CUDA-graph replay per split count (debug, not a result)."""
import math, sys
import torch
import torch.nn.functional as F
sys.path.insert(0, "bench")
from cuda_h200 import bench, paged
from tqgen.build import preset_spec_for_target
from tqgen.cuda_launch import load_cuda
from tqgen.ir import Target

dev = torch.device("cuda")
b, L, hq, hk, d = 1, 4096, 32, 8, 128
q = torch.randn(b, hq, d, device=dev, dtype=torch.bfloat16)
kk = torch.randn(b, hk, L, d, device=dev, dtype=torch.bfloat16)
vv = torch.randn_like(kk)
print(f"SDPA eager {bench(lambda: F.scaled_dot_product_attention(q[:, :, None], kk, vv, enable_gqa=True)):.1f} us")
for preset in ("k8v4", "4bit_nc"):
    spec = preset_spec_for_target(preset, Target.SM90, layout="soa")
    kern = load_cuda(spec, "sm90")
    cache, bt, sl = paged(spec, b, L, hk, dev, kern)
    row = []
    for sp in (8, 16, 32, 64, 128):
        ws = kern.workspace(b, hq, sp, dev)
        out = torch.empty_like(q)
        kern.decode(q, cache, bt, sl, num_splits=sp, workspace=ws, out=out, check=False)
        gr = torch.cuda.CUDAGraph()
        with torch.cuda.graph(gr):
            kern.decode(q, cache, bt, sl, num_splits=sp, workspace=ws, out=out, check=False)
        row.append(f"{sp}: {bench(gr.replay, reps=50):.1f}")
    print(preset, "default splits", kern.num_splits_for(b, hk, L, dev), "| graph us by splits:", ", ".join(row))
