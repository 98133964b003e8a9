#!/bin/bash
# Session 29, run 8: the warp-a-row merge with its rows strided across blocks vs as generated, same run
# (bench/dbg/merge_stride.py, now bench/dbg/merge_ab.py with ARMS=base,stride; cubins compiled on the CPU machine into .xfer/ms).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
ARMS=base,stride SHAPES=32x32768,64x16384,128x8192 python bench/dbg/merge_ab.py time .xfer/ms 4bit_nc:aos,4bit_nc:soa,k8v4:soa,3bit_nc:aos 2>&1 | tee $OUT/merge-stride.md
