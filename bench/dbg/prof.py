"""One decode launch per (preset, layout) at B=32 L=32K (D=128, Hq 32, Hk 8) for ncu (debug, not a result);
with OP=store one store launch of 64K tokens (Hk 8, slots: whole blocks in random order) instead; with
BACKEND=triton the Triton variants (same kernel names: tq_decode_split, tq_store).

    ncu -k regex:tq_decode_split --section ... python bench/dbg/prof.py 4bit_nc:soa,k8v4:soa
    ... python bench/dbg/prof.py k8v4:aos:4,k8v4:aos:6   # a third field: the decode's split count
    B=1 L=4096 OPTS=head_groups=0 ... python bench/dbg/prof.py k8v4:aos:64   # other shapes; CudaOptions changes
    HEAD_DIM=96 OP=store ... python bench/dbg/prof.py 4bit_nc:soa   # another head_dim (its build.rotation_for rotation:
                                                                    # the orthogonal one at 96 for Lloyd-Max keys)
"""
import os
import sys

import torch

sys.path.insert(0, "bench")
from cuda_h200 import paged  # noqa: E402
from tqgen import reference as ref  # noqa: E402
from tqgen.build import preset_spec_for_target, rotation_for  # noqa: E402
from tqgen.cuda_launch import load_cuda, load_variant  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import cuda_options, make_variant  # noqa: E402
from tqgen.triton_launch import load_triton  # noqa: E402

dev = torch.device("cuda")
B, L, HQ, HK = int(os.environ.get("B", 32)), int(os.environ.get("L", 32768)), 32, 8
D = int(os.environ.get("HEAD_DIM", 128))
OPTS = [c for c in os.environ.get("OPTS", "").split(",") if c]  # CudaOptions field=value changes (C++ only)
for item in sys.argv[1].split(","):
    preset, layout, *splits = item.split(":")
    spec = preset_spec_for_target(preset, Target.SM90, layout=layout, head_dim=D, **rotation_for(D, preset))
    if os.environ.get("BACKEND") == "triton":
        kern = load_triton(spec, "sm90")
    elif OPTS:
        kern = load_variant(make_variant(spec, "sm90", options=cuda_options(spec, Target.SM90).with_changes(OPTS)))
    else:
        kern = load_cuda(spec, "sm90")
    if os.environ.get("OP") == "store":
        n = 65536
        slots = (torch.randperm(n // 16, device=dev)[torch.arange(n, device=dev) // 16] * 16
                 + torch.arange(n, device=dev) % 16).to(torch.int32)
        k, v = (torch.randn(n, HK, D, dtype=torch.bfloat16, device=dev) for _ in range(2))
        cache = ref.allocate(spec, n // 16, HK, dev)
        for _ in range(3):
            kern.store(k, v, cache, slots, check=False)
        torch.cuda.synchronize()
        print(item, "store", n, file=sys.stderr)
        continue
    cache, bt, sl = paged(spec, B, L, HK, dev, kern)
    q = torch.randn(B, HQ, D, device=dev, dtype=torch.bfloat16)
    sp = int(splits[0]) if splits else kern.num_splits_for(B, HK, L, dev)
    ws = kern.workspace(B, HQ, sp, dev)
    out = torch.empty_like(q)
    kern.decode(q, cache, bt, sl, num_splits=sp, workspace=ws, out=out, check=False)
    torch.cuda.synchronize()
    print(item, "splits", sp, file=sys.stderr)
    del cache
