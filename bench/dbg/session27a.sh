#!/usr/bin/env bash
# Session 27's device run 1: the final code of session 26 (21bbf5d, CPU-verified only): the C++ decode and runtime
# GPU tests, the mixed suite's same-run two-tree A/B against 25582f3 (carry .xfer/base: bash bench/dbg/ab_trees.sh
# prepare 25582f3), the decode targets with floors. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
OUT=$OUT bash bench/dbg/ab_trees.sh run 'rm -rf /tmp/abm; timeout 150 python -m tqgen bench --suite mixed --backend cuda --out /tmp/abm --tag m --cuda-graph --no-plot > /dev/null 2>&1; grep "^| cuda" /tmp/abm/m.md' 1 > /dev/null
cp /tmp/abm/m.md $OUT/h200-2026-12-04-mixed-v10.md; cp /tmp/abm/m.json $OUT/h200-2026-12-04-mixed-v10.json
grep -c . $OUT/ab.txt
T=h200-2026-12-04-targets-v38-floor
timeout 300 python -m tqgen bench --suite targets --op decode --backend cuda --out $OUT --tag $T --cuda-graph --l2-floor --no-plot 2>&1 | grep -v "case/s\]" | tail -1
grep -A12 "^| backend | preset" $OUT/$T.md | head -11
grep "D64 GQA3" $OUT/$T.md | grep -o "| [0-9.]* % vs.*" | cut -c1-80
