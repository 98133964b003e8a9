#!/usr/bin/env bash
# Session 23's device run 9: the fast water-level deal: the GPU tests of the C++ decode and runtime, the mixed
# suite. OUT must be set; cubins precompiled into bench/dbg/tqc.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=$PWD/bench/dbg/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
python -m tqgen bench --suite mixed --backend cuda --out $OUT --tag h200-2026-12-03-mixed-v3 --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -2
python - <<'PY'
import json, os
for r in json.load(open(os.environ["OUT"] + "/h200-2026-12-03-mixed-v3.json"))["rows"]:
    print(r["preset"], r["layout"], r["B"], r["mix"], r["D"], round(r["time_us"], 1), round(r["classic_us"], 1),
          round(r["vs_classic"], 2), r["status"][:20], (r["check"] or "")[:24])
PY
