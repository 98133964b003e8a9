#!/bin/bash
# Session 41, H200 only: the committed H200 split table was timed by the tuner before tuning.tune_workspace, so its
# 30 points at one block a unit (B >= 2) were timed on the classic grid while a request there runs the balanced
# decode's wider grid (1.17-1.25x slower on an H100 at B=32). The decode targets with the committed table, a re-tune
# of every default decode with today's tuner, then the targets with the new table; files under $OUT.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
case "$gpu" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
day=$(date +%F)
timeout 150 python -m tqgen bench --suite targets --op decode --backend cuda --cuda-graph --no-plot \
  --out $OUT --tag h200-$day-targets-v47-table-graph 2>&1 | tail -2
mkdir -p $OUT/tuned
timeout 300 python -m tqgen tune --out $OUT/tuned > $OUT/tune-log.txt 2>&1; echo "tune rc $?"; tail -2 $OUT/tune-log.txt
TQGEN_TUNING_DIR=$OUT/tuned timeout 150 python -m tqgen bench --suite targets --op decode --backend cuda --cuda-graph \
  --no-plot --out $OUT --tag h200-$day-targets-v47-retuned-graph 2>&1 | tail -2
