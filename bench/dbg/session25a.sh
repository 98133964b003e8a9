#!/usr/bin/env bash
# Session 25's device run 1: the decode targets with floors on the balanced grid of its own width (558cd04; v31
# predates it), the C++ decode and runtime GPU tests (6a2d62a's plan-test edit not yet run on the GPU), then the
# mixed suite. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
T=h200-2026-12-03-targets-v32-floor
timeout 330 python -m tqgen bench --suite targets --op decode --backend cuda --out $OUT --tag $T --cuda-graph --l2-floor --no-plot 2>&1 | grep -v "case/s\]" | tail -2
grep -A12 "^| backend | preset" $OUT/$T.md | head -11
python - <<PY
import json
for r in json.load(open("$OUT/$T.json"))["rows"]:
    print(r["preset"], r["layout"], r["B"], r["L"], r["D"], r["time_us"] and round(r["time_us"], 1), r["pct_ceiling"] and round(r["pct_ceiling"], 1),
          r["floor_us"] and round(r["floor_us"], 1), r["floor_pct"] and round(r["floor_pct"], 1), r["status"][:40])
PY
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
T=h200-2026-12-03-mixed-v5
timeout 150 python -m tqgen bench --suite mixed --backend cuda --out $OUT --tag $T --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -2
