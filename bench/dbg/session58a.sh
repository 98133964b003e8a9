#!/bin/bash
# Session 58: the dense rotation's rounds on a GPU, store and rows dequant (both built and checked on the CPU only):
# the GPU tests of the rounds (store: CudaOptions.store_rounds; dequant: dequant_rounds) and the head_dim-80 / 96
# dense stores' special values (session 57's two-part store), then the same-run A/Bs: the store (bench/dbg/dense_store_ab.py:
# r4 at 80 with launch bounds, r2 at 96, nomma sizing the products' share) and the dequant
# (bench/dbg/dense_dequant_ab.py: d4 at 80 with 3 / 4 blocks an SM, d2 at 96). Every arm's output checked. If an arm
# wins, a CUDA option override by head_dim makes it the default. Files under $OUT.
. "$(dirname "$0")/device_env.sh"
# (the A/Bs first, each written to $OUT as it ends: what a cut-off run has done comes back)
ARMS=base,d4,d4+mb4,nomma CASES=4bit_nc:soa:80,3bit_nc:aos:80,k8v4:aos:80 \
  timeout 100 python bench/dbg/dense_dequant_ab.py > $OUT/dequant-rounds-80.txt 2>&1; echo "dequant 80 rc $? at $((SECONDS - t0)) s"
ARMS=base,r4,r4+mb5,nomma CASES=4bit_nc:soa:80,3bit_nc:aos:80,k3v4_nc:soa:80 \
  timeout 100 python bench/dbg/dense_store_ab.py > $OUT/store-rounds-80.txt 2>&1; echo "store 80 rc $? at $((SECONDS - t0)) s"
K='rounds or (store and orthogonal)' timeout 150 bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py \
  tests/test_runtime_gpu.py > $OUT/tests.txt 2>&1; tail -11 $OUT/tests.txt; echo "tests at $((SECONDS - t0)) s"
ARMS=base,d2 CASES=4bit_nc:soa:96,k3v4_nc:aos:96 \
  timeout 60 python bench/dbg/dense_dequant_ab.py > $OUT/dequant-rounds-96.txt 2>&1; echo "dequant 96 rc $? at $((SECONDS - t0)) s"
ARMS=base,r2 CASES=4bit_nc:soa:96,3bit_nc:aos:96 \
  timeout 60 python bench/dbg/dense_store_ab.py > $OUT/store-rounds-96.txt 2>&1; echo "store 96 rc $? at $((SECONDS - t0)) s"
for f in dequant-rounds-80 store-rounds-80 dequant-rounds-96 store-rounds-96; do grep -A20 '^| case' $OUT/$f.txt || tail -5 $OUT/$f.txt; done
