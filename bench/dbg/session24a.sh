#!/usr/bin/env bash
# Session 24's device run 1: the decode targets on the water-level kernel (cc18897; equal lengths run the balanced
# entry point's uniform path inside the called plan), then bench/dbg/bal_cap.py on every decode at D=128 and 64
# (equal lengths and four mixes, 3/4 of a wave and a full wave as the cap). OUT must be set; cubins precompiled into
# bench/dbg/tqc on the CPU machine.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=$PWD/bench/dbg/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python -m tqgen bench --suite targets --op decode --backend cuda --out $OUT --tag h200-2026-12-03-targets-v28-graph --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -2
grep -A12 "^| backend | preset" $OUT/h200-2026-12-03-targets-v28-graph.md | head -11
V=k8v4:soa,4bit_nc:soa,k3v4_nc:soa,3bit_nc:soa,k8v4:aos,4bit_nc:aos,k3v4_nc:aos,3bit_nc:aos
python bench/dbg/bal_cap.py $V 2>&1 | tee $OUT/cap128.md | tail -42
D=64 python bench/dbg/bal_cap.py $V 2>&1 | tee $OUT/cap64.md | tail -42
