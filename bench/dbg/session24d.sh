#!/usr/bin/env bash
# Session 24's device run 4: the Triton decode's targets with --l2-floor (CUDA graphs). OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
T=h200-2026-12-03-targets-v30-triton-floor
timeout 540 python -m tqgen bench --suite targets --op decode --backend triton --out $OUT --tag $T --cuda-graph --l2-floor --no-plot 2>&1 | grep -v "case/s\]" | tail -2
grep -A12 "^| backend | preset" $OUT/$T.md | head -11
python - <<PY
import json
for r in json.load(open("$OUT/$T.json"))["rows"]:
    print(r["preset"], r["layout"], r["B"], r["L"], r["D"], r["time_us"] and round(r["time_us"], 1), r["pct_ceiling"] and round(r["pct_ceiling"], 1),
          r["floor_us"] and round(r["floor_us"], 1), r["floor_pct"] and round(r["floor_pct"], 1), r["status"][:40])
PY
