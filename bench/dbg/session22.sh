#!/usr/bin/env bash
# Session 22's device run: the balanced kernel's equal-length A/B after the 128-byte alignment of the decode's
# shared pipeline (bench/dbg/bal_exp.py), then the targets and the mixed-length suite. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=$PWD/bench/dbg/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
PATCHES=bal python bench/dbg/bal_exp.py time bench/dbg/balx k8v4:soa,3bit_nc:soa,4bit_nc:soa,k8v4:aos,4bit_nc:aos,k3v4_nc:soa 32x32768 2>&1 | tail -8 | tee $OUT/bal_ab.md
D=64 PATCHES=bal python bench/dbg/bal_exp.py time bench/dbg/balx 4bit_nc:soa,k8v4:aos 32x32768 2>&1 | tail -2 | tee -a $OUT/bal_ab.md
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
python -m tqgen bench --suite targets --op decode --backend cuda --out $OUT --tag h200-2026-12-03-targets-v26-graph --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -3
grep -A12 "^| backend | preset" $OUT/h200-2026-12-03-targets-v26-graph.md | head -11
python -m tqgen bench --suite mixed --backend cuda --out $OUT --tag h200-2026-12-03-mixed --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -3
python - <<'PY'
import json, os
rows = json.load(open(os.environ["OUT"] + "/h200-2026-12-03-mixed.json"))["rows"]
for r in rows:
    print(r["preset"], r["layout"], r["B"], r["mix"], r["D"], r["time_us"] and round(r["time_us"], 1),
          r["classic_us"] and round(r["classic_us"], 1), r["vs_classic"] and round(r["vs_classic"], 2),
          r["pct_ceiling"] and round(r["pct_ceiling"], 1), r["status"][:40], (r["check"] or "")[:30])
PY
