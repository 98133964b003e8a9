#!/bin/bash
# Session 28, run 1: the decode's fixed latency taken apart (bench/dbg/fixed_cost.py; cubins compiled on the CPU
# machine into .xfer/fc). OUT=... bash bench/dbg/session28a.sh
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
ITEMS=4bit_nc:soa,4bit_nc:aos,k8v4:soa,k8v4:aos,3bit_nc:soa,k3v4_nc:aos
python bench/dbg/fixed_cost.py time .xfer/fc $ITEMS 1x4096,1x16384,32x512,32x2048,32x32768,128x8192 2>&1 | tee $OUT/fixed-d128.md
D=64 python bench/dbg/fixed_cost.py time .xfer/fc 4bit_nc:aos,k8v4:soa 1x4096,32x512,32x32768 2>&1 | tee $OUT/fixed-d64.md
