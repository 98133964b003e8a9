#!/usr/bin/env bash
# Session 24's device run 8: the mixed suite for SoA k3v4_nc (pair_add: 8 blocks an SM, which balanced_cap's wave
# now matches) on the final code. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
T=h200-2026-12-03-mixed-k3v4-soa-pair-add
python -m tqgen bench --suite mixed --backend cuda --preset k3v4_nc --layout soa --out $OUT --tag $T --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -2
python - <<PY
import json
for r in json.load(open("$OUT/$T.json"))["rows"]:
    print(r["preset"], r["layout"], r["B"], r["mix"], r["D"], round(r["time_us"], 1), round(r["classic_us"], 1),
          round(r["vs_classic"], 2), r["status"][:20], (r["check"] or "")[:24])
PY
