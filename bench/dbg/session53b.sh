#!/bin/bash
# Session 53, after session53a.sh: the split table's head_dim-96 entries of 3bit_nc again (timed on the register
# prefetch, now the line loads: tqgen tune, written to tqgen/tuned here and copied to $OUT), then tqgen bench --suite
# head96 --preset 3bit_nc with them (C++ decode, CUDA graphs), then every preset's C++ decode at 96 (the table as it
# is). Files under $OUT.
. "$(dirname "$0")/device_env.sh"
timeout ${TUNE_S:-220} python -m tqgen tune --head-dim 96 --preset 3bit_nc --batch 1 --batch 8 --batch 32 \
  --seq-len 4096 --seq-len 8192 --seq-len 32768 --out tqgen/tuned 2>&1 | grep -v "^  " | tail -8
cp tqgen/tuned/*.json $OUT/
echo "tune done at $((SECONDS - t0)) s"
timeout ${BENCH_S:-300} python -m tqgen bench --suite head96 --backend cuda --op decode --cuda-graph --no-plot \
  --out $OUT --tag $slug-$day-head96-cpp-lines-tuned-graph 2>&1 | tail -2
echo "done at $((SECONDS - t0)) s"
