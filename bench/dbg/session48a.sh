#!/bin/bash
# Session 48: head_dim no power of two on the Triton kernels (padded to the next power of two, the orthogonal rotation
# as bf16x6 dots). The GPU tests that run it (every preset x layout at 96 and two at 80 through the store / decode /
# dequant checks, special store values, the runtime serving them; the default variants' PTX is unchanged: CPU-checked),
# then tqgen bench --suite head96 (Triton decode / store beside bf16 SDPA, CUDA graphs; the
# reference backend, which served these heads before, eager); files under $OUT.
#   bash bench/dbg/session48a.sh
. "$(dirname "$0")/device_env.sh"
K='d96 or d80 or orthogonal or padded' timeout ${TESTS_S:-300} bash bench/dbg/gpu_tests.sh 8 tests/test_triton_gpu.py \
  tests/test_runtime_gpu.py 2>&1 | tail -14
echo "tests done at $((SECONDS - t0)) s"
timeout ${BENCH_S:-150} python -m tqgen bench --suite head96 --backend triton --cuda-graph --no-plot --out $OUT \
  --tag $slug-$day-head96-graph 2>&1 | tail -3
echo "bench done at $((SECONDS - t0)) s"
timeout ${REF_S:-90} python -m tqgen bench --suite head96 --backend reference --op decode --preset 4bit_nc \
  --preset k8v4 --layout soa --no-plot --out $OUT --tag $slug-$day-head96-reference 2>&1 | tail -3
echo "done at $((SECONDS - t0)) s"
