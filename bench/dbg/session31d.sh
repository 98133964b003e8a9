#!/bin/bash
# Session 31, run 4: the final prefill: GPU runtime tests (a batch with host copies of the lengths), then
# tqgen bench --suite prefill timed with check=False (as decode / store / dequant are) on the C++ kernels (every
# preset x layout) and on Triton (two presets)
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT timeout 150 bash bench/dbg/gpu_tests.sh 8 tests/test_runtime_gpu.py 2>&1 | tail -10
T=h200-2026-12-04-prefill-v3
timeout 200 python -m tqgen bench --suite prefill --backend cuda --budget-s 180 --out $OUT --tag $T 2>&1 | grep -v "case/s\]" | tail -2
timeout 150 python -m tqgen bench --suite prefill --op prefill --backend triton --preset 4bit_nc --preset k3v4_nc --budget-s 120 \
  --no-plot --out $OUT --tag $T-triton 2>&1 | grep -v "case/s\]" | tail -2
for f in $T $T-triton; do echo "== $f"; grep "^| cuda\|^| triton" $OUT/$f.md | grep "decode \|dequant+sdpa" | cut -d'|' -f3-19 | head -70; done
