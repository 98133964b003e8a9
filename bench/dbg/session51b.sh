#!/bin/bash
# Session 51: the C++ store and rows dequant of the dense (orthogonal) rotation at head_dim 96 (tq_dense_rotate: m16n8k16 products with
# Πᵀ's bf16 parts). The GPU checks of head_dim 96 (the store of every sm90 variant against the reference through
# cpp_checks.check_variant, the runtime's per-kernel choice), then the head96 store suite (C++ beside Triton, same run);
# on an H200 the re-tune and decode targets after it (bench/dbg/session43a.sh) with what is left of BUDGET. Files under $OUT.
. "$(dirname "$0")/device_env.sh"
K='padded or d96 or 96' timeout ${TESTS_S:-220} bash bench/dbg/gpu_tests.sh 8 tests/test_runtime_gpu.py \
  tests/test_cuda_gpu.py 2>&1 | tail -14
echo "tests done at $((SECONDS - t0)) s"
timeout ${BENCH_S:-170} python -m tqgen bench --suite head96 --op store --op dequant --no-plot --out $OUT \
  --tag $slug-$day-head96-dense-store 2>&1 | tail -2
grep "^| [ct]" $OUT/*dense-store.md | cut -c1-150 | tail -34
echo "bench done at $((SECONDS - t0)) s"
case "$gpu" in *H200*) BUDGET=$(( ${BUDGET:-560} - (SECONDS - t0) )) bash bench/dbg/session43a.sh;; esac
