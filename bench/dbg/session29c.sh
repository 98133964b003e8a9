#!/bin/bash
# Session 29, run 3: bench/dbg/wide_merge.py again (run 2's merge-alone graphs captured nothing: the stream was taken
# outside the capture), with the 8-warp rendering's whole call too and B=64 L=16K between run 2's two shapes.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
SHAPES=32x32768,64x16384,128x8192 python bench/dbg/wide_merge.py time .xfer/wm 4bit_nc:soa,4bit_nc:aos,k8v4:soa,4bit_nc:soa:64 2>&1 | grep -v "Warn\|capture_end" | tee $OUT/wide-merge.md
