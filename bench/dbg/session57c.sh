#!/bin/bash
# Session 57's dense store rounds (CudaOptions.store_rounds, built and checked on the CPU only): the GPU checks of the
# rounds variants (store against the reference over several blocks, the special values) and of session 57's two-part
# store (session57b.sh's set), then the same-run A/B (bench/dbg/dense_store_ab.py: every arm's cache checked, and bit
# for bit against base): 80 with 4 rounds (r4; mbN: the launch bound's blocks), 96 with 2, and the timing-only arms
# nomma / norot (the rotation's share). If r4 / r2 win, a CUDA_OPTION_OVERRIDES entry by head_dim makes them the
# default (and the runtime's tests and the head80 / head96 suites re-run). Files under $OUT.
. "$(dirname "$0")/device_env.sh"
K='rounds or d80 or d96 or padded or orthogonal or dense' timeout 240 bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py \
  tests/test_runtime_gpu.py 2>&1 | tail -11
ARMS=base,r4,r4+mb5,r4+mb3,nomma,norot CASES=4bit_nc:soa:80,4bit_nc:aos:80,3bit_nc:aos:80,k3v4_nc:soa:80 \
  timeout 150 python bench/dbg/dense_store_ab.py > $OUT/rounds-80.txt 2>&1; echo "80 rc $? at $((SECONDS - t0)) s"
DT=f16 ARMS=base,r4 CASES=4bit_nc:soa:80,3bit_nc:aos:80 \
  timeout 90 python bench/dbg/dense_store_ab.py > $OUT/rounds-80-f16.txt 2>&1; echo "80 f16 rc $? at $((SECONDS - t0)) s"
ARMS=base,r2,r2+mb5,nomma CASES=4bit_nc:soa:96,3bit_nc:aos:96 \
  timeout 120 python bench/dbg/dense_store_ab.py > $OUT/rounds-96.txt 2>&1; echo "96 rc $? at $((SECONDS - t0)) s"
for f in rounds-80 rounds-80-f16 rounds-96; do grep -A30 '^| case' $OUT/$f.txt; done
