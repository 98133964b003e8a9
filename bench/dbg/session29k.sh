#!/bin/bash
# Session 29, run 11: the block-a-row merge's groups from the block's size (8 from 64 splits, cuda_launch.merge_groups)
# on the working tree: the GPU tests, then bench/dbg/merge_ab.py with the launcher's rule ("base") against 4 groups
# always ("g4", the rule before), same cubins (.xfer/mk, compiled on the CPU machine).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
ARMS=base,g4 SHAPES=1x2048,1x4096,1x32768,1x131072,8x2048,8x8192,32x32768 python bench/dbg/merge_ab.py time .xfer/mk 4bit_nc:soa,4bit_nc:aos,k8v4:soa,3bit_nc:soa 2>&1 | tee $OUT/merge-groups.md
