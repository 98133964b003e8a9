#!/bin/bash
# Session 28, run 6: the groups merge online, all loads of a round in flight ("merge", over run 4's "new") against HEAD's kernels
# ("base", cubins from a worktree of ae344ed), same run, ABBA rounds; outputs compared bit for bit.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
ITEMS=4bit_nc:soa,4bit_nc:aos,k8v4:soa,k8v4:aos,3bit_nc:soa,k3v4_nc:aos,k3v4_nc:soa
PATCHES=base,new,merge ROUNDS=4 python bench/dbg/fixed_cost.py time .xfer/fc $ITEMS 1x4096,1x32768,8x2048,32x512,32x2048 2>&1 | tee $OUT/ab-d128.md
D=64 PATCHES=base,new,merge ROUNDS=4 python bench/dbg/fixed_cost.py time .xfer/fc 4bit_nc:aos,k8v4:soa 1x4096,32x512 2>&1 | tee $OUT/ab-d64.md
# the GPU tests of the C++ kernels and the runtime on the working tree
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
