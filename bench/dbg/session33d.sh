#!/bin/bash
# Session 33, run 5: the rows dequant as the default (dequant_rows=2; 1 for 3-bit values on sm90), generated/ rebuilt:
# the C++ and runtime GPU tests (every default variant's store / decode / dequant against the reference, the
# runtime's prefill through the dequant), then the prefill suite on the C++ backend (512-token chunks take the
# dequant + SDPA path; the dequant rows at B=32 L=4K / 32K).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT timeout 330 bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
T=h200-2026-12-04-prefill-v4
timeout 200 python -m tqgen bench --suite prefill --backend cuda --no-plot --out $OUT --tag $T 2>&1 | grep -v "case/s\]" | tail -2
grep -A40 "^## dequant" $OUT/$T.md | grep "^| cuda" | head -20
grep -A60 "^## prefill" $OUT/$T.md | grep "^| cuda" | grep "| 512 |" | head -24
