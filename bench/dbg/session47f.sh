#!/bin/bash
# Session 47, H200 only (exits 3 elsewhere): the head256 suite on the H200 (C++ and Triton beside bf16 SDPA, CUDA
# graphs), then the H200 re-tune and decode targets (bench/dbg/session43a.sh with what is left of BUDGET). Files under $OUT.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu"
case "$gpu" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
day=$(date +%F); t0=$SECONDS
timeout 150 python -m tqgen bench --suite head256 --cuda-graph --no-plot --out $OUT --tag h200-$day-head256-graph 2>&1 | tail -2
BUDGET=$(( ${BUDGET:-540} - (SECONDS - t0) )) bash bench/dbg/session43a.sh
