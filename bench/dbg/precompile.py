"""Compile every C++ decode variant (presets x layouts x head_dim 64 / 128) for this GPU at once, into the kernel
cache, so a benchmark afterwards does not pay nvcc case by case (debug; nvcc runs in subprocesses).
Usage: python bench/dbg/precompile.py   (the tqgen first on PYTHONPATH is the one compiled)"""
from concurrent.futures import ThreadPoolExecutor

import torch

from tqgen.build import preset_spec_for_target
from tqgen.cuda_launch import build_binary, device_arch
from tqgen.ir import Target
from tqgen.lower_cuda import make_variant

dev = torch.device("cuda")
arch = device_arch(dev)
t = Target.parse(arch, "target")
jobs = [make_variant(preset_spec_for_target(p, t, layout=lay, head_dim=d), t)
        for d in (128, 64) for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc") for lay in ("aos", "soa")]
with ThreadPoolExecutor(16) as ex:
    list(ex.map(lambda v: build_binary(v, arch), jobs))
print(f"compiled {len(jobs)} variants for {arch}")
