#!/bin/bash
# Session 55: the C++ store and rows dequant at head_dim 80 (5 lanes of 16 a row). First the GPU checks of every
# head_dim-80 variant (store / decode / dequant against the reference, the store's special values), the merges at 80
# and the runtime serving the padded specs (6 shards: their compiles fill the kernel cache), then the head80 suite's
# store and dequant on both backends (the 64 / 96 / 128 / 256 store and dequant SASS is unchanged: no re-run). Files
# under $OUT.
. "$(dirname "$0")/device_env.sh"
K='d80 or (merge and 80) or padded' timeout ${TESTS_S:-400} bash bench/dbg/gpu_tests.sh 6 \
  tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
python -m tqgen bench --suite head80 --op store --op dequant --out $OUT --tag $slug-$day-head80-store-dequant --no-plot \
  > $OUT/bench80-log.txt 2>&1; echo "bench80 rc $? at $((SECONDS - t0)) s"
echo "done at $((SECONDS - t0)) s"
for f in $OUT/*head80-store-dequant.md; do grep -E '^## (store|dequant)|^[|] (cuda|triton) ' "$f" | cut -c1-150; done
