#!/bin/bash
# Session 28, run 3: the query prologue's parts (bench/dbg/fixed_cost.py: timing-only patches of HEAD's decode
# without the query's global load, its rotation, the pair table's fill; cubins in .xfer/fc)
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
ITEMS=4bit_nc:soa,4bit_nc:aos,k8v4:soa,3bit_nc:soa,k3v4_nc:aos
PATCHES=base,exit0,prologue,pro-min,noq,norot,nopair,noall ROUNDS=2 python bench/dbg/fixed_cost.py time .xfer/fc $ITEMS 1x4096,32x512,128x8192 2>&1 | tee $OUT/parts-d128.md
