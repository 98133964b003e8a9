#!/usr/bin/env bash
# Session 26's device run 5: the warp-a-row merge with its weights by shuffles (8 partial rows in flight) and the
# block-a-row merge no longer asking whether the lengths are equal: the C++ decode and runtime GPU tests,
# bench/dbg/bal_merge.py (the merge alone), the mixed suite's same-run two-tree A/B against 25582f3 (carry
# .xfer/base), the decode targets with floors. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
V=4bit_nc:aos,4bit_nc:soa,3bit_nc:aos,k8v4:soa
(B=32 timeout 150 python bench/dbg/bal_merge.py $V; B=128 timeout 200 python bench/dbg/bal_merge.py $V | tail -n +3) 2>&1 | grep -v Warn | tee $OUT/bal-merge.md
OUT=$OUT bash bench/dbg/ab_trees.sh run 'rm -rf /tmp/abm; timeout 150 python -m tqgen bench --suite mixed --backend cuda --out /tmp/abm --tag m --cuda-graph --no-plot > /dev/null 2>&1; grep "^| cuda" /tmp/abm/m.md' 1 > /dev/null
cp /tmp/abm/m.md $OUT/h200-2026-12-03-mixed-v9.md; cp /tmp/abm/m.json $OUT/h200-2026-12-03-mixed-v9.json
T=h200-2026-12-03-targets-v37-floor
timeout 300 python -m tqgen bench --suite targets --op decode --backend cuda --out $OUT --tag $T --cuda-graph --l2-floor --no-plot 2>&1 | grep -v "case/s\]" | tail -1
grep -A12 "^| backend | preset" $OUT/$T.md | head -11
