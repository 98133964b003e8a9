#!/bin/bash
# Session 31, run 2: the C++ dequant's centroids from shared memory (a select chain before) at 2, 4, 8 tokens a warp;
# the GPU tests of the batched prefill (bf16-ulp bound corrected) and of every C++ variant (dequant in bf16/fp16/fp32)
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
timeout 200 python bench/dbg/dequant_tokens.py 2 4 8
OUT=$OUT timeout 330 bash bench/dbg/gpu_tests.sh 8 tests/test_runtime_gpu.py tests/test_cuda_gpu.py::test_variant_matches_reference 2>&1 | tail -12
