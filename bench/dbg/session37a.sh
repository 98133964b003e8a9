#!/bin/bash
# Session 37, device call 1: the Triton store's key with one division a row and Markstein value codes (no division an
# element), its no-op clamps gone (value codes; fp8 e4m3 keys: the satfinite conversion alone).
# Prepare here: bash bench/dbg/ab_trees.sh prepare ca37be7e; rm -rf .xfer/base/bench/results (carry .xfer/base).
#  1. the Triton GPU tests (the store against the reference on the GPU, its special values new);
#  2. the store at its defaults, base (ca37be7e) against this tree, head_dim 128, every preset, 2 rounds;
#  3. this tree's launch shapes again (the instruction mix changed), head_dim 128 and 64.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
R=/tmp/r37a && rm -rf $R && mkdir -p $R
trap 'tar czf "$OUT/results.tgz" -C $R .' EXIT
OUT=$R timeout 180 bash bench/dbg/gpu_tests.sh 8 tests/test_triton_gpu.py 2>&1 | tail -11
OUT=$R timeout 150 bash bench/dbg/ab_trees.sh run \
  'TQ_SHAPES=default python $AB_NEW/bench/dbg/triton_store_sweep.py k8v4 4bit_nc k3v4_nc 3bit_nc' 2 | grep -v '^....\? *$' | tail -30
timeout 130 python bench/dbg/triton_store_sweep.py k8v4 4bit_nc k3v4_nc 3bit_nc 2>&1 | tee "$R/triton-store-sweep-d128.md" | tail -40
TQ_D=64 timeout 80 python bench/dbg/triton_store_sweep.py 4bit_nc k3v4_nc 3bit_nc 2>&1 | tee "$R/triton-store-sweep-d64.md" | tail -40
