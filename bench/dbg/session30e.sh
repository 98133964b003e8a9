#!/bin/bash
# Session 30, run 5: tqgen bench's mixed suite on the Triton decode, now timed balanced and classic (kv.balanced_decode)
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
T=h200-2026-12-04-mixed-triton
timeout 400 python -m tqgen bench --suite mixed --backend triton --cuda-graph --no-plot --out $OUT --tag $T 2>&1 | grep -v "case/s\]" | tail -3
grep "^| triton" $OUT/$T.md | head -50
