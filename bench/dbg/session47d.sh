#!/bin/bash
# Session 47, the final head_dim-256 options: every GPU test file (bench/dbg/gpu_tests.sh, 8 shards), then tqgen bench
# --suite head256 (C++ and Triton beside bf16 SDPA, CUDA graphs) on this GPU. Files under $OUT.
. "$(dirname "$0")/device_env.sh"
timeout ${TESTS_S:-420} bash bench/dbg/gpu_tests.sh 8 2>&1 | tail -14
echo "tests done at $((SECONDS - t0)) s"
timeout ${BENCH_S:-140} python -m tqgen bench --suite head256 --cuda-graph --no-plot --out $OUT \
  --tag $slug-$day-head256-graph 2>&1 | tail -2
echo "done at $((SECONDS - t0)) s"
