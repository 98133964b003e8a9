#!/bin/bash
# Session 49, the final code (the store's exact-part rotation on 2 warps on NVIDIA): the GPU tests of the padded heads /
# orthogonal rotation, then tqgen bench --suite head96 --op store (Triton, the rotated presets beside the unrotated
# fp8 ones). Files under $OUT.
#   bash bench/dbg/session49c.sh
. "$(dirname "$0")/device_env.sh"
K='d96 or d80 or orthogonal or padded' timeout ${TESTS_S:-200} bash bench/dbg/gpu_tests.sh 8 tests/test_triton_gpu.py \
  tests/test_runtime_gpu.py 2>&1 | tail -9
echo "tests done at $((SECONDS - t0)) s"
timeout ${BENCH_S:-100} python -m tqgen bench --suite head96 --op store --backend triton --no-plot --out $OUT \
  --tag $slug-$day-head96-store-v2 2>&1 | tail -2
echo "done at $((SECONDS - t0)) s"
