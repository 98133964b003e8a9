#!/bin/bash
# Session 32, run 4: the blockwise masked / sinks attention at gpt-oss-20b's head shape (bench/dbg/attn_blocks.py), then
# the runtime / TurboQuantCache GPU tests on the final code
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
timeout 200 python bench/dbg/attn_blocks.py 2>&1 | tee $OUT/attn-blocks.txt
OUT=$OUT timeout 300 bash bench/dbg/gpu_tests.sh 8 tests/test_hf_steps.py tests/test_runtime_gpu.py 2>&1 | tail -12
