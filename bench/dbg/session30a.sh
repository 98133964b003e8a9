#!/bin/bash
# Session 30, run 1: every shape of issue 6 (--suite full) for the C++ decode on the current kernels, by CUDA-graph
# replay (equal lengths, and the mixed batches balanced vs classic), with plots: refreshes session 13's table.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python bench/dbg/precompile.py
T=h200-2026-12-04-full-cuda-decode-graph-v2
timeout 480 python -m tqgen bench --suite full --op decode --backend cuda --cuda-graph --budget-s 450 --out $OUT --tag $T 2>&1 | grep -v "case/s\]" | tail -3
grep -c "skipped" $OUT/$T.md
