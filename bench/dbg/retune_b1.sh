#!/bin/bash
# Re-tune the H200 table's small-batch points now that a measured count may use 2-tile splits
# (tuning.TUNED_MIN_TILES, session 28: B=1 L=1K-2K 9-23 % faster at 32 / 64 splits than the table's 16,
# bench/results/h200-2026-12-04-fixed-cost-parts.md run 8), then time the launcher's choice against the counts
# around it. The partial tune merges its points into tqgen/tuned/nvidia-h200.json (the others kept); the table
# comes back in $OUT: copy it over tqgen/tuned/ and commit it with the timing table.
#   OUT=... bash bench/dbg/retune_b1.sh        (on the H200, through the device tool)
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python -m tqgen tune --batch 1 --seq-len 1024 --seq-len 2048 --out tqgen/tuned 2>&1 | tail -80
cp tqgen/tuned/nvidia-h200.json "$OUT/"
python bench/dbg/b1_splits.py 4bit_nc:soa,4bit_nc:aos,k8v4:soa,k3v4_nc:aos 1x1024,1x2048,1x3072,1x4096 2>&1 | tee "$OUT/b1-splits-retuned.md"
