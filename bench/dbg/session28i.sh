#!/bin/bash
# Session 28, run 9: two more latency cuts against HEAD c589935's kernels ("base", cubins from a worktree), same run,
# 4 ABBA rounds: "fill" = the pair table filled while the query loads are in flight (not pair_prmt variants);
# "rows" = fill + the warp-a-row merge online (a round's first 16 / 8 partial rows loaded before its weights). Then
# the balanced decode's merge on a one-long batch on the working tree ("rows"), and the GPU tests on it.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
ITEMS=4bit_nc:soa,4bit_nc:aos,k8v4:soa,3bit_nc:soa,k3v4_nc:aos,k3v4_nc:soa
PATCHES=base,fill,rows ROUNDS=4 python bench/dbg/fixed_cost.py time .xfer/fc $ITEMS 1x4096,8x2048,32x512,32x2048,128x1024 2>&1 | tee $OUT/ab-d128.md
B=32 L=32768 python bench/dbg/bal_merge.py 4bit_nc:aos,4bit_nc:soa 2>&1 | tee $OUT/bal-merge.md
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
