#!/bin/bash
# Session 41, device call on an H100 (the GPU lent most often; no tuning table of its own, so its decodes take the
# split heuristic, which the first call found up to 6 % off at head_dim 64): the decode targets by CUDA-graph replay
# with the heuristic, `tqgen tune` of every default decode (the table the package will ship as
# tqgen/tuned/<slug>.json), then the same targets reading that table. Files under $OUT. V=v47 was the first run (the
# tuner then timed the classic grid at every count); v48 (default) after tuning.tune_workspace.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
case "$gpu" in *H100*) ;; *) echo "not an H100: nothing run"; exit 3;; esac
day=$(date +%F)
timeout 120 python -m tqgen bench --suite targets --op decode --backend cuda --cuda-graph --no-plot \
  --out $OUT --tag h100-$day-targets-${V:-v48}-heuristic-graph 2>&1 | tail -2
mkdir -p $OUT/tuned
timeout 330 python -m tqgen tune --out $OUT/tuned > $OUT/tune-log.txt 2>&1; echo "tune rc $?"; tail -3 $OUT/tune-log.txt
TQGEN_TUNING_DIR=$OUT/tuned timeout 120 python -m tqgen bench --suite targets --op decode --backend cuda --cuda-graph \
  --no-plot --out $OUT --tag h100-$day-targets-${V:-v48}-tuned-graph 2>&1 | tail -2
