#!/bin/bash
# Session 40, device call 1: the H200 runs pending since session 36 (H200 only: on another GPU it stops at once,
# the H100 runs of session 39 already cover that card).
#  1. the targets suite on this tree, CUDA graphs, with each row's L2-resident floor (no decode kernel changed
#     since v44: a re-confirmation, and the floors next to the times in one run);
#  2. session 37's Triton store at its default launch shapes on the H200 (measured on an H100 only).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
R=/tmp/r40a && rm -rf $R && mkdir -p $R
trap 'tar czf "$OUT/results.tgz" -C $R .' EXIT
gpu=$(nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader); echo "$gpu" | tee $R/gpu.txt
case "$gpu" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
timeout 330 python -m tqgen bench --suite targets --op decode --backend cuda --cuda-graph --l2-floor --no-plot \
  --out $R --tag h200-2026-12-05-targets-v45-graph 2>&1 | tail -3
TQ_SHAPES=default timeout 120 python bench/dbg/triton_store_sweep.py k8v4 4bit_nc k3v4_nc 3bit_nc 2>&1 \
  | tee "$R/triton-store-defaults-d128.md" | tail -25
