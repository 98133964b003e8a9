#!/bin/bash
# Session 29, run 12: issue 6's decode targets on the final code (the merge's 8 groups from 64 splits; the re-tuned
# small-batch points), C++ by CUDA-graph replay with L2 floors: v42.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
T=h200-2026-12-04-targets-v42
timeout 400 python -m tqgen bench --suite targets --op decode --backend cuda --cuda-graph --l2-floor --no-plot --out $OUT --tag $T 2>&1 | grep -v "case/s\]" | tail -2
grep -A12 "^| backend | preset" $OUT/$T.md | head -11
