#!/bin/bash
# Session 49: the rotated store's exact-part dots on the GPU. The store A/B (bench/dbg/store_ab.py: session 48's
# bf16x6 store beside this session's, rows / warps / chunk loops), then the GPU tests of the padded heads / orthogonal
# rotation (store with bf16 and fp16 keys, special values, decode, dequant, the runtime). Files under $OUT.
#   bash bench/dbg/session49b.sh
. "$(dirname "$0")/device_env.sh"
timeout ${AB_S:-120} python bench/dbg/store_ab.py > $OUT/store-ab.txt 2>&1; grep "^|" $OUT/store-ab.txt
echo "store_ab done at $((SECONDS - t0)) s"
K='d96 or d80 or orthogonal or padded' timeout ${TESTS_S:-240} bash bench/dbg/gpu_tests.sh 8 tests/test_triton_gpu.py \
  tests/test_runtime_gpu.py 2>&1 | tail -8
echo "done at $((SECONDS - t0)) s"
