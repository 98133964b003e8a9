#!/bin/bash
# Session 57 (after the dense store of Lloyd-Max keys takes two of Πᵀ's bf16 parts): the GPU checks of every head_dim-80
# / 96 / orthogonal variant (C++ store / decode / dequant against the reference, the store's special values,
# the runtime's padded specs), the same-run A/B against three parts (q3) and two timing-only arms (nomma: the rotation
# without its products; norot: no rotation). Files under $OUT.
. "$(dirname "$0")/device_env.sh"
K='d80 or d96 or padded or orthogonal or dense' timeout 200 bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py \
  tests/test_runtime_gpu.py 2>&1 | tail -11
ARMS=base,q3,nomma,norot CASES=4bit_nc:soa:80,4bit_nc:soa:96 \
  timeout 90 python bench/dbg/dense_store_ab.py > $OUT/q3-bf16.txt 2>&1; echo "bf16 rc $? at $((SECONDS - t0)) s"
grep -A20 '^| case' $OUT/q3-bf16.txt
