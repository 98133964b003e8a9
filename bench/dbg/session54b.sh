#!/bin/bash
# Session 54, after session54a.sh: the H100 split table's head_dim-80 entries (tqgen tune --head-dim 80, Phi-2's Hq 32 =
# Hk 32; the four sm90 decodes of 4-bit / fp8 keys: 3-bit keys are Triton's there, skipped with their reason), written
# to tqgen/tuned here and copied to $OUT, then tqgen bench --suite head80 --backend cuda with them. Files under $OUT.
. "$(dirname "$0")/device_env.sh"
timeout ${TUNE_S:-300} python -m tqgen tune --head-dim 80 --batch 1 --batch 8 --batch 32 --seq-len 4096 \
  --seq-len 8192 --out tqgen/tuned 2>&1 | grep -v "^  " | tail -12
cp tqgen/tuned/*.json $OUT/
echo "tune done at $((SECONDS - t0)) s"
timeout ${BENCH_S:-150} python -m tqgen bench --suite head80 --backend cuda --op decode --cuda-graph --no-plot \
  --out $OUT --tag $slug-$day-head80-cpp-tuned-graph 2>&1 | tail -2
echo "done at $((SECONDS - t0)) s"
