#!/bin/bash
# Session 50, after session50a.sh: the runtime's choices at head_dim 96 / 80 (Triton store for fp8 keys at 96, the C++
# decode, Triton's store / dequant with the orthogonal rotation) and the C++ checks of head_dim 96 again (the final
# template); then the H100 split table's head_dim-96 entries (tqgen tune, written to tqgen/tuned here and copied to
# $OUT) and tqgen bench --suite head96 --backend cuda --op decode with them. Files under $OUT.
#   TUNE_S=200 bash bench/dbg/session50b.sh   # TESTS_S / TUNE_S / BENCH_S: the parts' time limits (no TUNE_S: no tune)
. "$(dirname "$0")/device_env.sh"
K='padded or d96 or 96' timeout ${TESTS_S:-200} bash bench/dbg/gpu_tests.sh 8 tests/test_runtime_gpu.py \
  tests/test_cuda_gpu.py 2>&1 | tail -12
echo "tests done at $((SECONDS - t0)) s"
if [ "${TUNE_S:-0}" -gt 0 ]; then  # the split table's head_dim-96 entries (TUNE_S=0: the heuristic's counts)
  timeout $TUNE_S python -m tqgen tune --head-dim 96 --batch 1 --batch 8 --batch 32 --seq-len 4096 \
    --seq-len 8192 --seq-len 32768 --out tqgen/tuned ${TUNE_ARGS:-} 2>&1 | grep -v "^  " | tail -12
  cp tqgen/tuned/*.json $OUT/
  echo "tune done at $((SECONDS - t0)) s"
fi
timeout ${BENCH_S:-100} python -m tqgen bench --suite head96 --backend cuda --op decode --cuda-graph --no-plot \
  --out $OUT --tag $slug-$day-head96-cpp-${TUNE_S:+tuned-}graph 2>&1 | tail -2
echo "done at $((SECONDS - t0)) s"
