#!/bin/bash
# Session 49: where the GQA-1 decode loses its bandwidth. The full suite's GQA-1 head_dim-128 decode (Hq 8 = Hk 8) on
# Triton beside C++ (CUDA graphs; SoA 4bit_nc and k8v4), the targets' GQA-4 shapes on Triton for the same presets, then
# the rotated store A/B (bench/dbg/store_ab.py); on an H200 also the head256 suite. Files under $OUT.
#   bash bench/dbg/session49a.sh
. "$(dirname "$0")/device_env.sh"
timeout ${GQA1_S:-170} python -m tqgen bench --suite full --op decode --gqa 1 --head-dim 128 --preset 4bit_nc \
  --preset k8v4 --layout soa --backend triton --backend cuda --cuda-graph --no-plot --out $OUT \
  --tag $slug-$day-gqa1-d128-graph 2>&1 | tail -2
echo "gqa1 done at $((SECONDS - t0)) s"
timeout ${TGT_S:-80} python -m tqgen bench --suite targets --op decode --preset 4bit_nc --preset k8v4 --layout soa \
  --backend triton --cuda-graph --no-plot --out $OUT --tag $slug-$day-targets-triton-graph 2>&1 | tail -2
echo "targets done at $((SECONDS - t0)) s"
timeout ${ROT_S:-150} python bench/dbg/store_ab.py 2>&1 | tail -24
echo "store_ab done at $((SECONDS - t0)) s"
case "$gpu" in *H200*)
  timeout 150 python -m tqgen bench --suite head256 --cuda-graph --no-plot --out $OUT --tag h200-$day-head256-graph 2>&1 | tail -2;;
esac
echo "done at $((SECONDS - t0)) s"
