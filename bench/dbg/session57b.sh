#!/bin/bash
# Session 57 (after the dense store of Lloyd-Max keys takes two of Πᵀ's bf16 parts): the GPU checks of every head_dim-80
# / 96 / orthogonal variant (C++ and Triton store / decode / dequant against the reference, the store's special values,
# the runtime's padded specs), the same-run A/B against three parts (q3, bf16 and fp16 inputs), then the head80 and
# head96 suites' C++ store. Files under $OUT.
. "$(dirname "$0")/device_env.sh"
K='d80 or d96 or padded or orthogonal or dense' timeout 260 bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py \
  tests/test_runtime_gpu.py tests/test_triton_gpu.py 2>&1 | tail -11
ARMS=base,q3,nomma,norot CASES=4bit_nc:soa:80,4bit_nc:aos:80,3bit_nc:soa:80,k3v4_nc:aos:80,4bit_nc:soa:96,4bit_nc:aos:96 \
  timeout 200 python bench/dbg/dense_store_ab.py > $OUT/q3-bf16.txt 2>&1; echo "bf16 rc $? at $((SECONDS - t0)) s"
DT=f16 ARMS=base,q3,nomma,norot CASES=4bit_nc:aos:80,3bit_nc:soa:80,4bit_nc:aos:96 \
  timeout 150 python bench/dbg/dense_store_ab.py > $OUT/q3-f16.txt 2>&1; echo "f16 rc $? at $((SECONDS - t0)) s"
for s in 80 96; do
  python -m tqgen bench --suite head$s --op store --backend cuda --out $OUT --tag $slug-$day-head$s-store-q2 --no-plot \
    > $OUT/bench$s-log.txt 2>&1; echo "bench$s rc $? at $((SECONDS - t0)) s"
done
grep -A20 '^| case' $OUT/q3-bf16.txt; grep -A20 '^| case' $OUT/q3-f16.txt
for f in $OUT/*-store-q2.md; do grep -E '^[|] cuda ' "$f" | cut -c1-120; done
