#!/bin/bash
# Session 56: the runtime serving head_dim 80 with the C++ store and dequant first (select._ordered; the padded specs
# of tests/test_runtime_gpu.py), then ncu of the dense (orthogonal-rotation) store at head_dim 80 and 96 and of the
# unrotated fp8 keys' at 80 (64K tokens, Hk 8): why the dense store at 80 moves 31-35 % of the copy ceiling. Files
# under $OUT.
. "$(dirname "$0")/device_env.sh"
K='padded' timeout 300 bash bench/dbg/gpu_tests.sh 3 tests/test_runtime_gpu.py 2>&1 | tail -6
for d in 80 96; do
  HEAD_DIM=$d OP=store NAME=-store$d NCU_EXTRA='--section InstructionStats --section MemoryWorkloadAnalysis' \
    timeout 200 bash bench/dbg/prof.sh 4bit_nc:soa,3bit_nc:aos,k8v4:soa 2>&1 | grep -v "^ *$" | head -80
  echo "store$d at $((SECONDS - t0)) s"
done
