#!/usr/bin/env bash
# Session 26's device run 4: bench/dbg/bal_merge.py again (run 3 timed empty graphs: the merge was launched on the
# stream of before the capture), and two more rounds of run 3's mixed-suite two-tree A/B (base 25582f3 vs this tree).
# Carry .xfer/base. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
V=4bit_nc:aos,4bit_nc:soa,3bit_nc:aos,k8v4:soa
(B=32 timeout 150 python bench/dbg/bal_merge.py $V; B=128 timeout 200 python bench/dbg/bal_merge.py $V | tail -n +3) 2>&1 | grep -v Warn | tee $OUT/bal-merge.md
OUT=$OUT bash bench/dbg/ab_trees.sh run 'rm -rf /tmp/abm; timeout 150 python -m tqgen bench --suite mixed --backend cuda --out /tmp/abm --tag m --cuda-graph --no-plot > /dev/null 2>&1; grep "^| cuda" /tmp/abm/m.md' 2 > /dev/null
grep -c . $OUT/ab.txt
