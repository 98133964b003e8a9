#!/bin/bash
# Session 36, device call 1 of 3 (sessions 34/35's scripts folded into three calls): correctness first.
# Prepare here: bash bench/dbg/ab_trees.sh prepare 665f9bd7 (before the launcher and the Triton store changes; it has
# the bench's GPU hold), carry .xfer/base.
#  1. every GPU test file in 8 shards (the C++ kernels through the packed launcher, the Triton store's lookup, the
#     bench's hold, the padded prefill groups, the HF steps);
#  2. eager host cost, base against this tree (bench/dbg/eager_host.py, 2 rounds);
#  3. the Triton store at the target shapes, base against this tree (1 round).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
OUT=$OUT timeout 300 bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py \
  tests/test_triton_gpu.py tests/test_bench.py tests/test_hf_steps.py tests/test_h200_hf.py tests/test_baselines.py \
  2>&1 | tail -14
[ -d .xfer/base ] && OUT=$OUT timeout 100 bash bench/dbg/ab_trees.sh run 'python bench/dbg/eager_host.py' 2
[ -d .xfer/base ] && OUT=$OUT timeout 150 bash bench/dbg/ab_trees.sh run \
  'python -m tqgen bench --suite targets --op store --backend triton --no-plot --budget-s 60 --out /tmp/abo --tag ts >/dev/null 2>&1; grep "^| triton" /tmp/abo/ts.md' 1
