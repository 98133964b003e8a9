"""One CUDA decode launch (B=32, L=32K, Hq32 Hk8 D128) for Nsight Compute:

    ncu --clock-control none -k regex:tq_decode_split --section SpeedOfLight --section Occupancy \
        --section WarpStateStats --section MemoryWorkloadAnalysis python bench/profile_cuda_decode.py 4bit_nc soa
"""
import sys

import torch

sys.path.insert(0, "bench")
from cuda_h200 import paged  # noqa: E402

from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.cuda_launch import load_cuda  # noqa: E402
from tqgen.ir import Target  # noqa: E402

preset, layout = sys.argv[1], sys.argv[2]
spec = preset_spec_for_target(preset, Target.SM90, layout=layout)
kern = load_cuda(spec, "sm90")
dev = torch.device("cuda")
b, L, hq, hk = 32, 32768, 32, 8
cache, bt, sl = paged(spec, b, L, hk, dev, kern)
q = torch.randn(b, hq, 128, device=dev, dtype=torch.bfloat16)
splits = kern.num_splits_for(b, hk, L, dev)
ws = kern.workspace(b, hq, splits, dev)
for _ in range(2):
    kern.decode(q, cache, bt, sl, num_splits=splits, workspace=ws, check=False)
torch.cuda.synchronize()
print("splits", splits)
