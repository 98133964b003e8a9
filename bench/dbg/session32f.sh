#!/bin/bash
# Session 32, run 8: the Triton dequant's tokens a program x warps (bench/dbg/triton_dequant_sweep.py)
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
timeout 330 python bench/dbg/triton_dequant_sweep.py 2>&1 | grep -v Warning | tee $OUT/triton-dequant-sweep.txt
# run 9: how far the rows whose outputs differed are (bench/dbg/triton_dequant_diff.py)
timeout 200 python bench/dbg/triton_dequant_diff.py 2>&1 | grep -v Warning | tee $OUT/triton-dequant-diff.txt
