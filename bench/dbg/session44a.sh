#!/bin/bash
# Session 44 (any H100 / H200): where the block scheduler puts the working blocks of a grid with exiting ones, and
# whether a per-SM ticket spreads them as a grid of only the working blocks (bench/dbg/dispatch.py, modes 0-2).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 200 python bench/dbg/dispatch.py 256,512,1024 2>&1 | tee $OUT/dispatch-ticket.md | tail -30
