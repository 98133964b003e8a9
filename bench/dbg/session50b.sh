#!/bin/bash
# Session 50, after session50a.sh: the runtime's choices at head_dim 96 / 80 (Triton store for fp8 keys at 96, the C++
# decode, Triton's store / dequant with the orthogonal rotation) through tests/test_runtime_gpu.py, and the C++ checks
# of head_dim 96 again (the final template). Files under $OUT.
#   bash bench/dbg/session50b.sh
. "$(dirname "$0")/device_env.sh"
K='padded or d96 or 96' timeout ${TESTS_S:-300} bash bench/dbg/gpu_tests.sh 8 tests/test_runtime_gpu.py \
  tests/test_cuda_gpu.py 2>&1 | tail -12
echo "done at $((SECONDS - t0)) s"
