#!/bin/bash
# Session 29, run 10: the block-a-row merge with 8 groups of D threads instead of 4 (bench/dbg/merge_ab.py, arm g8;
# cubins compiled on the CPU machine into .xfer/mg): B=1 at 4K-128K tokens (192 splits a row at 128K: 3 rounds of 16
# loads a group -> 2), B=8 (the groups merge at 256 rows), B=32 (the rows merge: a control).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
ARMS=base,g8 SHAPES=1x4096,1x32768,1x131072,8x8192,32x32768 python bench/dbg/merge_ab.py time .xfer/mg 4bit_nc:soa,4bit_nc:aos,k8v4:soa 2>&1 | tee $OUT/merge-g8.md
