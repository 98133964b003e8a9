#!/bin/bash
# Session 42: why the balanced decode's wider grid costs 1.17-1.25x on equal lengths at one block a unit. A stand-in
# kernel's SM spread with exiting blocks (dispatch.py), then the decode's kernels timed apart (wide_parts.py).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 120 python bench/dbg/dispatch.py 256,1024 2>&1 | tee $OUT/dispatch.md | tail -14
timeout 300 python bench/dbg/wide_parts.py 3bit_nc:soa,4bit_nc:aos 32x32768 4,8 2>&1 | tee $OUT/wide-parts.md | tail -30
