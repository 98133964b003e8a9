#!/bin/bash
# Session 51, for a short device budget: the dense rotation's C++ store and dequant beside Triton's at head_dim 96
# (tqgen bench --suite head96 --op store --op dequant, two presets, each row's first call checked against the
# reference); the full run with the GPU tests is session51b.sh. Files under $OUT.
. "$(dirname "$0")/device_env.sh"
timeout ${BENCH_S:-170} python -m tqgen bench --suite head96 --op store --op dequant --preset 4bit_nc \
  --preset 3bit_nc --no-plot --out $OUT --tag $slug-$day-head96-dense-store-short 2>&1 | tail -2
grep "^| [ct]" $OUT/*dense-store-short.md | cut -c1-170
echo "done at $((SECONDS - t0)) s"
