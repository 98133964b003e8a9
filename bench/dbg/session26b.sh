#!/usr/bin/env bash
# Session 26's device run 2: the balanced merge on equal lengths of at most 256 sequences takes the classic rows
# without reading the plan, and reads the lengths before its PDL wait (tq_merge_bal_pre); run 1's decode-side change
# (every warp taking the classic mapping on equal lengths) measured nothing and was reverted. The C++ decode and
# runtime GPU tests, the balanced / classic gap at head_dim 64 (bench/dbg/opts_mixed.py; run 1: AoS 4bit_nc
# 99.9 / 96.6 us), the decode targets with floors, the mixed suite. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
for v in 4bit_nc:aos 4bit_nc:soa k3v4_nc:aos; do
  D=64 B=32 timeout 120 python bench/dbg/opts_mixed.py $v default 16 2>&1 | tail -3
done | tee $OUT/bal-equal-d64-merge.md
T=h200-2026-12-03-targets-v36-floor
timeout 300 python -m tqgen bench --suite targets --op decode --backend cuda --out $OUT --tag $T --cuda-graph --l2-floor --no-plot 2>&1 | grep -v "case/s\]" | tail -2
grep -A12 "^| backend | preset" $OUT/$T.md | head -11
T=h200-2026-12-03-mixed-v8
timeout 150 python -m tqgen bench --suite mixed --backend cuda --out $OUT --tag $T --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -2
