#!/bin/bash
# Session 47: head_dim 256 on the C++ path. The GPU tests that run it (every preset x layout through cpp_checks with the
# Triton decode as the second opinion, both merges, past 64 splits, the balanced decode, the runtime), then
# tqgen bench --suite head256 (C++ and Triton decode / store beside bf16 SDPA, CUDA graphs); files under $OUT.
#   bash bench/dbg/session47a.sh
. "$(dirname "$0")/device_env.sh"
K='256' timeout ${TESTS_S:-330} bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -14
echo "tests done at $((SECONDS - t0)) s"
timeout ${BENCH_S:-230} python -m tqgen bench --suite head256 --cuda-graph --no-plot --out $OUT \
  --tag $slug-$day-head256-graph 2>&1 | tail -3
echo "done at $((SECONDS - t0)) s"
