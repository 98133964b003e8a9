#!/bin/bash
# Session 40, last device call (H200 only): the full suite's head_dim-64 GQA 3 decode rows (the SmolLM2 shape), which
# session 36's 260 s budget never reached (tqgen bench --gqa, new).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
case "$gpu" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
timeout 130 python -m tqgen bench --suite full --op decode --head-dim 64 --gqa 3 --backend cuda --cuda-graph \
  --budget-s 100 --no-plot --out $OUT --tag h200-2026-12-05-full-cuda-decode-graph-d64-gqa3 2>&1 | tail -3
