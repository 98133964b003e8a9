#!/bin/bash
# Session 43, H200 only: session41c.sh cut for a short device budget. The committed table's points at the B >= 2
# decode targets' shapes re-timed with today's tuner (tuning.tune_workspace: the balanced decode's wider grid timed
# where a request runs it; write_table merges them into a copy of the committed table), then the decode targets with
# the merged table, then with the committed one (same machine, for the A/B); files under $OUT. BUDGET (seconds, default 560) bounds the whole.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
case "$gpu" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
day=$(date +%F); t0=$SECONDS
mkdir -p $OUT/tuned && cp tqgen/tuned/nvidia-h200.json $OUT/tuned/
timeout $(( ${BUDGET:-560} * 300 / 560 )) python -m tqgen tune --batch 32 --batch 128 --seq-len 8192 --seq-len 32768 --out $OUT/tuned > $OUT/tune-log.txt 2>&1; echo "tune rc $? at $((SECONDS - t0)) s"
tail -2 $OUT/tune-log.txt
TQGEN_TUNING_DIR=$OUT/tuned timeout 150 python -m tqgen bench --suite targets --op decode --backend cuda --cuda-graph \
  --no-plot --out $OUT --tag h200-$day-targets-v47-retuned-graph 2>&1 | tail -2; echo "at $((SECONDS - t0)) s"
left=$((${BUDGET:-560} - (SECONDS - t0)))
[ $left -gt 60 ] && timeout $left python -m tqgen bench --suite targets --op decode --backend cuda --cuda-graph \
  --no-plot --out $OUT --tag h200-$day-targets-v47-table-graph 2>&1 | tail -2
echo "done at $((SECONDS - t0)) s"
