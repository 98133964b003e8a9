#!/bin/bash
# Session 35's Triton store change (a key's code by one table lookup instead of a compare a midpoint: SASS a row on
# sm90 4bit_nc SoA 1070 -> 506, other Lloyd-Max rows 2-25 % fewer; bytes identical on the CPU), to run in a session
# with a device. Prepare here first: bash bench/dbg/ab_trees.sh prepare cf9fcf13 (the commit before
# 211cc3e8, "Triton store: ... one table lookup"), carry .xfer/base.
#  1. tests/test_triton_gpu.py (the Triton kernels on the GPU, the store among them);
#  2. the store, same run, the tree before against this one: tqgen bench --suite targets --op store --backend triton;
#  3. bench/dbg/triton_store_sweep.py: (store_num_warps, rows a program) = (4, 16) the default, (2, 8), (1, 16), (1, 8),
#     (1, 4) (SASS a row, 4bit_nc SoA: 506, 499, 428, 443, 486; registers 64, 56, 255, 89, 72): a measured best becomes
#     an sm90 override (TritonOptions.store_num_warps / store_block_m).
# Then: bench/results/h200-<date>-triton-store.md, HISTORY, README (the store line).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
OUT=$OUT timeout 240 bash bench/dbg/gpu_tests.sh 6 tests/test_triton_gpu.py 2>&1 | tail -8
[ -d .xfer/base ] && OUT=$OUT timeout 150 bash bench/dbg/ab_trees.sh run \
  'python -m tqgen bench --suite targets --op store --backend triton --no-plot --out /tmp/abo --tag ts >/dev/null 2>&1; grep "^| triton" /tmp/abo/ts.md' 2
timeout 240 python bench/dbg/triton_store_sweep.py 2>&1 | tail -70
