#!/bin/bash
# Session 57 (after the dense store of Lloyd-Max keys takes two of Πᵀ's bf16 parts): the GPU checks of every head_dim-80
# / 96 / orthogonal variant (C++ and Triton store / decode / dequant against the reference, the store's special values,
# the runtime's padded specs), the same-run A/B against three parts (q3) and two timing-only arms (nomma: the rotation
# without its products; norot: no rotation), then the head80 suite's C++ store. Files under $OUT.
. "$(dirname "$0")/device_env.sh"
K='d80 or d96 or padded or orthogonal or dense' timeout 200 bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py \
  tests/test_runtime_gpu.py tests/test_triton_gpu.py 2>&1 | tail -11
ARMS=base,q3,nomma,norot CASES=4bit_nc:soa:80,4bit_nc:aos:80,3bit_nc:soa:80,4bit_nc:soa:96 \
  timeout 120 python bench/dbg/dense_store_ab.py > $OUT/q3-bf16.txt 2>&1; echo "bf16 rc $? at $((SECONDS - t0)) s"
timeout 100 python -m tqgen bench --suite head80 --op store --backend cuda --out $OUT --tag $slug-$day-head80-store-q2 \
  --no-plot > $OUT/bench80-log.txt 2>&1; echo "bench80 rc $? at $((SECONDS - t0)) s"
grep -A20 '^| case' $OUT/q3-bf16.txt
for f in $OUT/*-store-q2.md; do grep -E '^[|] cuda ' "$f" | cut -c1-120; done
