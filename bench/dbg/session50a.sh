#!/bin/bash
# Session 50: the C++ decode at head_dim 96 (fp8 keys unrotated: every kernel; the orthogonal rotation: the decode,
# the query rotated by the launcher, Triton's store and dequant). The GPU tests of head_dim 96, then tqgen bench
# --suite head96 (C++ and Triton backends beside SDPA, CUDA graphs). Files under $OUT.
#   bash bench/dbg/session50a.sh        # TESTS_S / BENCH_S: the two parts' time limits
. "$(dirname "$0")/device_env.sh"
K='d96 or 96 or padded' timeout ${TESTS_S:-240} bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py \
  tests/test_runtime_gpu.py 2>&1 | tail -12
echo "tests done at $((SECONDS - t0)) s"
timeout ${BENCH_S:-300} python -m tqgen bench --suite head96 --cuda-graph --no-plot --out $OUT \
  --tag $slug-$day-head96-cpp-graph 2>&1 | tail -4
echo "done at $((SECONDS - t0)) s"
