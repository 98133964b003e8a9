#!/usr/bin/env bash
# Session 26's device run 6 (the last ~5 min of the budget): the warp-a-row merge with its 8 partial rows loaded
# before their use (run 5's: ptxas kept 2 in flight, the merge alone unchanged) and the GPU test fixed to the
# design (the block-a-row merge reads the plan; a warp-a-row equal-length case added): the C++ decode and runtime GPU
# tests, then bench/dbg/bal_merge.py at B=32. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
B=32 python bench/dbg/bal_merge.py 4bit_nc:aos,3bit_nc:aos 2>&1 | grep -v Warn | tee $OUT/bal-merge.md
