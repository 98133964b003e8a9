#!/bin/bash
# Session 34's addition to the full suite, to run in a device call of its own: the C++ decode at head_dim 64 with GQA
# 1 / 4 / 8 (8 KV heads; new in session 34) and the SmolLM2 shape, by CUDA-graph replay (832 cases, ~3-4 min + compiles).
# Then: record it as bench/results/h200-<date>-full-cuda-decode-graph-d64.md / .json / plots, and the README's "Every
# shape" line with its head_dim-64 ranges.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
timeout 560 python -m tqgen bench --suite full --op decode --backend cuda --cuda-graph --head-dim 64 --out "$OUT" \
  --tag h200-full-cuda-decode-graph-d64 2>&1 | tail -5
