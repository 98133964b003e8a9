#!/bin/bash
# Session 33, run 6: the final defaults (rows dequant: 2 rounds for Lloyd-Max keys with 4-bit values on sm90, else 1):
# every C++ GPU test (every default variant's store / decode / dequant against the reference, the rows dequant at
# 1, 2 and 4 rounds) and the bf16 paged baseline's GPU test.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
OUT=$OUT timeout 280 bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_baselines.py 2>&1 | tail -12
