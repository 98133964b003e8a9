#!/usr/bin/env bash
# Session 24's device run 2: the decode targets with --l2-floor (each equal-length decode also timed with its block
# table folded into blocks a quarter of L2 holds: what the kernel's instructions allow without HBM). OUT must be
# set; cubins precompiled into bench/dbg/tqc on the CPU machine.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=$PWD/bench/dbg/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
T=h200-2026-12-03-targets-v29-floor
python -m tqgen bench --suite targets --op decode --backend cuda --out $OUT --tag $T --cuda-graph --l2-floor --no-plot 2>&1 | grep -v "case/s\]" | tail -2
python - <<PY
import json
for r in json.load(open("$OUT/$T.json"))["rows"]:
    print(r["preset"], r["layout"], r["B"], r["L"], r["D"], round(r["time_us"], 1), round(r["pct_ceiling"], 1),
          r["floor_us"] and round(r["floor_us"], 1), r["floor_pct"] and round(r["floor_pct"], 1), r["floor_blocks"], r["status"], (r["check"] or "")[:30])
PY
