#!/bin/bash
# Session 54, the final code: the GPU checks of the kernels whose template paths changed (the register prefetch of
# the portable kind at head_dim 64 / 128, every head_dim-96 and head_dim-80 sm90 variant, both merges at 80 and 96,
# the runtime serving the padded specs). Files under $OUT.
. "$(dirname "$0")/device_env.sh"
K='portable or d96 or d80 or (merge and (80 or 96)) or padded' timeout ${TESTS_S:-420} bash bench/dbg/gpu_tests.sh 6 \
  tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
echo "done at $((SECONDS - t0)) s"
