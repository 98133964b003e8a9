#!/bin/bash
# Session 31, run 6: the transformers integration on the GPU with the final code (eval/h200_hf.py --quick: generation
# at batch 1 and 3 through the C++ kernels, the prefill with host copies of the lengths and check=False)
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
timeout 400 python eval/h200_hf.py --device cuda --quick --out $OUT/h200-2026-12-04-hf-quick-session31.md 2>&1 | tail -45
