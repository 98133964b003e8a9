#!/bin/bash
# Session 32, run 5: first-chunk prefill, session 31's runtime (tmp_old/: a git archive of 58a590d, runtime + tqgen)
# vs this session's (one SDPA call a run of equal first chunks), same device call; then the runtime GPU tests
set -u
export TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp /tmp/pp_old && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime && ln -sfn $PWD/tmp_old/runtime /tmp/pp_old/tqgen_runtime
for round in 1 2; do
  PYTHONPATH=$PWD/tmp_old:/tmp/pp_old timeout 120 python bench/dbg/fresh_prefill.py "old r$round" 2>&1 | tee -a $OUT/fresh-prefill.txt
  PYTHONPATH=$PWD:/tmp/pp timeout 120 python bench/dbg/fresh_prefill.py "new r$round" 2>&1 | tee -a $OUT/fresh-prefill.txt
done
OUT=$OUT timeout 240 bash bench/dbg/gpu_tests.sh 8 tests/test_runtime_gpu.py tests/test_hf_steps.py 2>&1 | tail -12
