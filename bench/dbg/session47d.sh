#!/bin/bash
# Session 47, the final head_dim-256 options: every GPU test file (bench/dbg/gpu_tests.sh, 8 shards), then tqgen bench
# --suite head256 (C++ and Triton beside bf16 SDPA, CUDA graphs) on this GPU. Files under $OUT.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu"
slug=$(echo "$gpu" | tr 'A-Z' 'a-z' | sed 's/nvidia //; s/ .*//'); day=$(date +%F); t0=$SECONDS
timeout ${TESTS_S:-420} bash bench/dbg/gpu_tests.sh 8 2>&1 | tail -14
echo "tests done at $((SECONDS - t0)) s"
timeout ${BENCH_S:-140} python -m tqgen bench --suite head256 --cuda-graph --no-plot --out $OUT \
  --tag $slug-$day-head256-graph 2>&1 | tail -2
echo "done at $((SECONDS - t0)) s"
