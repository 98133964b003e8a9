#!/usr/bin/env bash
# Session 27's device run 7: the balanced decode's fixed cost a block (bench/results/cpu-2026-12-04-balanced-model.md:
# one-long batches run 1.7-2.9x a packing model). bench/dbg/bal_merge.py at B=32 on one-long batches of L = 32K, 8K,
# 2K and 512 (the long sequence's blocks and the short ones' shrink with L: the time left as L falls is what a block
# and the merge pay once) and equal lengths, CUDA-graph replay. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
for L in 32768 8192 2048 512; do
  B=32 L=$L timeout 100 python bench/dbg/bal_merge.py 4bit_nc:aos,4bit_nc:soa 2>&1 | grep "^|" | grep -v "^|---"
done | tee $OUT/bal-fixed-cost.md
