#!/usr/bin/env bash
# Session 27's device run 8: the warp-a-row merge with 16 partial rows in flight while a round has them (a balanced
# decode's long rows: 128 splits, 9.3 us with 8): bench/dbg/bal_merge.py at B=32 (L=32K and 2K), then the C++ decode
# and runtime GPU tests. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
for L in 32768 2048; do
  B=32 L=$L timeout 80 python bench/dbg/bal_merge.py 4bit_nc:aos,4bit_nc:soa 2>&1 | grep "^|" | grep -v "^|---"
done | tee $OUT/bal-merge16.md
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
