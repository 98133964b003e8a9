#!/bin/bash
# Session 54: the C++ decode at head_dim 80 (Phi-2's; a decode only: Triton stores and dequantises). The GPU checks of
# the sm90 head_dim-80 variants (decode against the reference and Triton's, the store / dequant refusals), both merges
# at 80, the runtime's per-kernel choice at 96 / 80; then tqgen bench --suite head80 (C++ beside Triton's padded
# decode and bf16 SDPA, CUDA graphs, the heuristic's split counts). Files under $OUT.
#   TESTS_S / BENCH_S: the parts' time limits
. "$(dirname "$0")/device_env.sh"
K='d80 or (merge and 80) or padded' timeout ${TESTS_S:-240} bash bench/dbg/gpu_tests.sh 4 tests/test_cuda_gpu.py \
  tests/test_runtime_gpu.py 2>&1 | tail -12
echo "tests done at $((SECONDS - t0)) s"
timeout ${BENCH_S:-300} python -m tqgen bench --suite head80 --op decode --cuda-graph --no-plot \
  --out $OUT --tag $slug-$day-head80-graph 2>&1 | tail -3
echo "done at $((SECONDS - t0)) s"
