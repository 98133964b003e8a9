#!/bin/bash
# Session 30, run 2: every shape of issue 6 (--suite full) for the Triton decode (the fallback; AMD's portable path)
# on the current kernels, by CUDA-graph replay, with plots: refreshes session 13's table (which its budget cut in half).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
T=h200-2026-12-04-full-triton-decode-graph
timeout 560 python -m tqgen bench --suite full --op decode --backend triton --cuda-graph --budget-s 530 --out $OUT --tag $T 2>&1 | grep -v "case/s\]" | tail -3
grep -c "skipped" $OUT/$T.md
