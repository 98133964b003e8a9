#!/usr/bin/env bash
# Session 26's device run 3: (1) how much of the balanced decode on one-long batches is its merge
# (bench/dbg/bal_merge.py: the plan's most splits a row, the merge alone as rows / groups); (2) same-run two-tree A/B
# of the mixed suite: base 25582f3 (session 25's final code) vs this tree (the merge's lengths before its PDL wait, no
# plan read on equal lengths). Carry .xfer/base (bash bench/dbg/ab_trees.sh prepare 25582f3). OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
V=4bit_nc:aos,4bit_nc:soa,3bit_nc:aos,k8v4:soa
(B=32 timeout 150 python bench/dbg/bal_merge.py $V; B=128 timeout 200 python bench/dbg/bal_merge.py $V | tail -n +3) 2>&1 | tee $OUT/bal-merge.md
OUT=$OUT bash bench/dbg/ab_trees.sh run 'rm -rf /tmp/abm; timeout 150 python -m tqgen bench --suite mixed --backend cuda --out /tmp/abm --tag m --cuda-graph --no-plot > /dev/null 2>&1; grep "^| cuda" /tmp/abm/m.md' 1 > /dev/null
grep -c . $OUT/ab.txt
