#!/usr/bin/env bash
# Session 25's device run 4: the final pair_prmt code (template fixed after run 3's SoA compile failures): the C++
# decode and runtime GPU tests, the decode targets with floors, the mixed suite. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
T=h200-2026-12-03-targets-v34-floor
timeout 300 python -m tqgen bench --suite targets --op decode --backend cuda --out $OUT --tag $T --cuda-graph --l2-floor --no-plot 2>&1 | grep -v "case/s\]" | tail -2
grep -A12 "^| backend | preset" $OUT/$T.md | head -11
T=h200-2026-12-03-mixed-v6
timeout 150 python -m tqgen bench --suite mixed --backend cuda --out $OUT --tag $T --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -2
