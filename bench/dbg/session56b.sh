#!/bin/bash
# Session 56 (after the dense store at head_dim 80 takes its value row first at 6 blocks an SM): the GPU checks of
# every head_dim-80 variant and the padded specs, the same-run A/B of the new store against session 55's
# (novfirst+mb4; for rotated fp8 keys mb4), then the head80 suite's C++ store. Files under $OUT.
. "$(dirname "$0")/device_env.sh"
K='d80 or padded' timeout 240 bash bench/dbg/gpu_tests.sh 6 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -9
ARMS=base,novfirst+mb4,mb4 CASES=4bit_nc:soa:80,4bit_nc:aos:80,3bit_nc:aos:80,3bit_nc:soa:80,k3v4_nc:aos:80,k8v4:soa:80,k8v4:aos:80 \
  timeout 200 python bench/dbg/dense_store_ab.py > $OUT/store-ab2.txt 2>&1; echo "store_ab rc $? at $((SECONDS - t0)) s"
python -m tqgen bench --suite head80 --op store --backend cuda --out $OUT --tag $slug-$day-head80-store-v2 --no-plot \
  > $OUT/bench80-log.txt 2>&1; echo "bench80 rc $? at $((SECONDS - t0)) s"
grep -A40 '^| case' $OUT/store-ab2.txt
for f in $OUT/*head80-store-v2.md; do grep -E '^[|] cuda ' "$f" | cut -c1-120; done
