#!/usr/bin/env bash
# Session 24's device run 11 (branch balanced-width): the balanced grid of its own width: the C++ decode and runtime
# GPU tests, then the mixed suite (CUDA graphs). OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
T=h200-2026-12-03-mixed-v4-width
timeout 150 python -m tqgen bench --suite mixed --backend cuda --out $OUT --tag $T --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -2
python - <<PY
import json
for r in json.load(open("$OUT/$T.json"))["rows"]:
    print(r["preset"], r["layout"], r["B"], r["mix"], r["D"], r["splits"], r["time_us"] and round(r["time_us"], 1),
          r["classic_us"] and round(r["classic_us"], 1), r["vs_classic"] and round(r["vs_classic"], 2), r["status"][:20], (r["check"] or "")[:24])
PY
