#!/bin/bash
# Session 54, after session54a/b.sh: 3-bit keys (7.5-byte key quarters) and 3- / 2-bit values (3.75- / 2.5-byte
# eighths) at head_dim 80 in the C++ decode (the register prefetch). The GPU checks of every sm90 head_dim-80 variant
# (every preset x layout, two widths no preset has) and the runtime's choices; the split table's entries for 3-bit
# keys at 80 (tqgen tune, copied to $OUT); then tqgen bench --suite head80 (C++, Triton, SDPA; CUDA graphs). Files
# under $OUT.
. "$(dirname "$0")/device_env.sh"
K='d80 or padded' timeout ${TESTS_S:-240} bash bench/dbg/gpu_tests.sh 5 tests/test_cuda_gpu.py \
  tests/test_runtime_gpu.py 2>&1 | tail -12
echo "tests done at $((SECONDS - t0)) s"
timeout ${TUNE_S:-200} python -m tqgen tune --head-dim 80 --preset k3v4_nc --preset 3bit_nc --batch 1 --batch 8 \
  --batch 32 --seq-len 4096 --seq-len 8192 --out tqgen/tuned 2>&1 | grep -v "^  " | tail -6
cp tqgen/tuned/*.json $OUT/
echo "tune done at $((SECONDS - t0)) s"
timeout ${BENCH_S:-240} python -m tqgen bench --suite head80 --op decode --cuda-graph --no-plot \
  --out $OUT --tag $slug-$day-head80-all-tuned-graph 2>&1 | tail -2
echo "done at $((SECONDS - t0)) s"
