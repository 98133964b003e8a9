#!/usr/bin/env bash
# Session 23's device run 2: balanced_cap's share by warps (a wave at 2 warps a block, 3/4 at 4): the GPU tests of
# the C++ decode and runtime (the kernel's plan checked against cuda_launch.balanced_blocks), then the mixed-length
# suite. OUT must be set; cubins precompiled into bench/dbg/tqc on the CPU machine (carried).
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=$PWD/bench/dbg/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
python -m tqgen bench --suite mixed --backend cuda --out $OUT --tag h200-2026-12-03-mixed-v2 --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -3
python - <<'PY'
import json, os
rows = json.load(open(os.environ["OUT"] + "/h200-2026-12-03-mixed-v2.json"))["rows"]
for r in rows:
    print(r["preset"], r["layout"], r["B"], r["mix"], r["D"], r["time_us"] and round(r["time_us"], 1),
          r["classic_us"] and round(r["classic_us"], 1), r["vs_classic"] and round(r["vs_classic"], 2),
          r["status"][:30], (r["check"] or "")[:30])
PY
