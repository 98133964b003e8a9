#!/bin/bash
# Session 29, run 9: one long sequence (B=1, L=32K and 128K) on the current kernels: decode calls by split count
# (bench/dbg/b1_splits.py) and the call taken apart into its split and merge kernels (bench/dbg/merge_cost.py, the
# CUDA profiler inside graph replays) at the launcher's count: what holds a long single-sequence decode near 60 % of
# the copy ceiling (2.3x SDPA for SoA 4bit_nc at 128K in session 15's sweep)?
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python bench/dbg/b1_splits.py 4bit_nc:soa,4bit_nc:aos,k8v4:soa 1x32768,1x131072 64,128,192,256,384,512 2>&1 | tee $OUT/b1-long.md
SHAPES=1x32768,1x131072 LAYOUT=soa python bench/dbg/merge_cost.py 4bit_nc,k8v4 2>&1 | grep "^|" | tee $OUT/b1-long-parts.md
SHAPES=1x131072 LAYOUT=aos python bench/dbg/merge_cost.py 4bit_nc 2>&1 | grep "^|" | tail -1 | tee -a $OUT/b1-long-parts.md
