#!/bin/bash
# Session 30, run 4: the Triton decode's balanced splits after run 3 (the merge reads a plan the split kernel writes
# instead of dealing again, and takes num_splits pieces a round): balanced vs classic, same run, by CUDA-graph replay;
# then the GPU tests of the Triton decode and the runtime.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
timeout 250 python bench/dbg/triton_bal_ab.py k8v4:soa,4bit_nc:soa,k3v4_nc:soa,3bit_nc:soa,k8v4:aos,4bit_nc:aos,k3v4_nc:aos,3bit_nc:aos 2>&1 | tee $OUT/triton-bal-ab-d128.txt | tail -70
timeout 60 python bench/dbg/triton_bal_ab.py 4bit_nc:soa,3bit_nc:aos 64 2>&1 | tee $OUT/triton-bal-ab-d64.txt | tail -20
OUT=$OUT timeout 240 bash bench/dbg/gpu_tests.sh 8 tests/test_triton_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
