#!/bin/bash
# Session 39, device call 1 (session 37a's runs, the GPU test files all): sessions 37/38's code on the GPU.
# Prepare here: bash bench/dbg/ab_trees.sh prepare ca37be7e; rm -rf .xfer/base/bench/results (carry .xfer/base).
#  1. every GPU test file (the C++ checks now in tests/cpp_checks.py; the Triton store without divisions an element);
#  2. the Triton store at its defaults, base (ca37be7e, before session 37) against this tree, head_dim 128, 2 rounds;
#  3. this tree's Triton store launch shapes, head_dim 128 (the instruction mix changed).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
R=/tmp/r39a && rm -rf $R && mkdir -p $R
trap 'tar czf "$OUT/results.tgz" -C $R .' EXIT
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
OUT=$R timeout 250 bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py tests/test_triton_gpu.py \
  tests/test_bench.py tests/test_hf_steps.py tests/test_h200_hf.py tests/test_baselines.py 2>&1 | tail -12
OUT=$R timeout 150 bash bench/dbg/ab_trees.sh run \
  'TQ_SHAPES=default python $AB_NEW/bench/dbg/triton_store_sweep.py k8v4 4bit_nc k3v4_nc 3bit_nc' 2 | grep -v '^....\? *$' | tail -30
timeout 130 python bench/dbg/triton_store_sweep.py k8v4 4bit_nc k3v4_nc 3bit_nc 2>&1 | tee "$R/triton-store-sweep-d128.md" | tail -40
