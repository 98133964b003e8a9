#!/bin/bash
# session 16, device call 3 (one-off): the Triton GPU tests and the Triton decode targets (v20) on the final code
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1; mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
timeout 170 bash bench/dbg/gpu_tests.sh 8 tests/test_triton_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
timeout 200 python -m tqgen bench --suite targets --op decode --backend triton --out $OUT --tag h200-2026-12-02-targets-v20-triton-graph --cuda-graph --no-plot 2>&1 | tail -3
timeout 100 python -m tqgen bench --suite targets --op decode --backend triton --out $OUT --tag h200-2026-12-02-targets-v20-triton --no-plot 2>&1 | tail -3
grep -A12 "^| backend | preset" $OUT/h200-2026-12-02-targets-v20-triton-graph.md | head -14
