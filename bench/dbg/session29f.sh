#!/bin/bash
# Session 29, run 6: re-tune the H200 table's small-batch points whose measured count sat at the old 4-tile cap
# (B=4, 8 at L=1K and 4K, B=32 at L=1K) now that a measured count may use 2-tile splits (tuning.TUNED_MIN_TILES);
# the partial tune merges its points into tqgen/tuned/nvidia-h200.json; the table and the tuner's output come back.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python -m tqgen tune --batch 4 --batch 8 --batch 32 --seq-len 1024 --seq-len 4096 --out tqgen/tuned 2>&1 | tee $OUT/tune.txt | tail -30
cp tqgen/tuned/nvidia-h200.json "$OUT/"
