#!/bin/bash
# Session 56: the runtime serving head_dim 80 with the C++ store and dequant first (select._ordered; the padded specs
# of tests/test_runtime_gpu.py); the dense (orthogonal-rotation) store's A/B of source patches at head_dim 80 / 96
# (bench/dbg/dense_store_ab.py: the value row loaded first / prefetched to L2, more blocks an SM); then ncu of the dense
# store at 80 (64K tokens, Hk 8). Files under $OUT.
. "$(dirname "$0")/device_env.sh"
K='padded' timeout 300 bash bench/dbg/gpu_tests.sh 3 tests/test_runtime_gpu.py 2>&1 | tail -6
timeout 300 python bench/dbg/dense_store_ab.py > $OUT/store-ab.txt 2>&1; echo "store_ab rc $? at $((SECONDS - t0)) s"
HEAD_DIM=80 OP=store NAME=-store80 NCU_EXTRA='--section InstructionStats --section MemoryWorkloadAnalysis' \
  timeout 150 bash bench/dbg/prof.sh 4bit_nc:soa 2>&1 | grep -v "^ *$" | head -60
echo "done at $((SECONDS - t0)) s"
grep -A40 '^| case' $OUT/store-ab.txt
