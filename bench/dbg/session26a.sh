#!/usr/bin/env bash
# Session 26's device run 1: the balanced decode's equal-length path taken by every warp (tq_bal_equal_round: no
# warp-0 deal, no barrier on equal lengths of at most 256 sequences): the C++ decode and runtime GPU tests, the
# balanced / classic gap at head_dim 64 (bench/dbg/opts_mixed.py, AoS 4bit_nc: 100.4 / 97.1 us before), the decode
# targets with floors, the mixed suite. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
for v in 4bit_nc:aos 4bit_nc:soa k3v4_nc:aos; do
  D=64 B=32 timeout 120 python bench/dbg/opts_mixed.py $v default 16 2>&1 | tail -3
done | tee $OUT/bal-equal-d64.md
T=h200-2026-12-03-targets-v35-floor
timeout 300 python -m tqgen bench --suite targets --op decode --backend cuda --out $OUT --tag $T --cuda-graph --l2-floor --no-plot 2>&1 | grep -v "case/s\]" | tail -2
grep -A12 "^| backend | preset" $OUT/$T.md | head -11
grep "D64 GQA3" $OUT/$T.md | grep -o "| [0-9.]* % vs.*" | cut -c1-80
T=h200-2026-12-03-mixed-v7
timeout 150 python -m tqgen bench --suite mixed --backend cuda --out $OUT --tag $T --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -2
