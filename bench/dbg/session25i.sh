#!/usr/bin/env bash
# Session 25's device run 9: where the balanced entry point's equal-length cost at head_dim 64 comes from (AoS
# 4bit_nc: 3 %): bench/dbg/bal_exp.py's patched balanced kernels (bal, vals, noplan, nobar, swap; cubins compiled on
# the CPU machine into bench/dbg/be_cubins) against the classic kernel, D=64 Hq 9 Hk 3, B=32 L=32K. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
D=64 PATCHES=bal,vals,noplan,nobar,swap python bench/dbg/bal_exp.py time bench/dbg/be_cubins 4bit_nc:aos,k8v4:aos 32x32768 2>&1 | tee $OUT/bal-exp-d64.md | tail -6
