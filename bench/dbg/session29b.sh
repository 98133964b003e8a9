#!/bin/bash
# Session 29, run 2: the wide merge (MERGE_WIDE warps a row for a balanced decode's rows) on the working tree: the GPU
# tests first (C++ and runtime), then bench/dbg/wide_merge.py (whole balanced calls wide vs rows forced, ABBA; the
# merges alone: rows, wide 4, wide 8 from .xfer/wm cubins, groups).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
python bench/dbg/wide_merge.py time .xfer/wm 4bit_nc:aos,4bit_nc:soa,k8v4:soa,3bit_nc:aos,4bit_nc:soa:64,k3v4_nc:aos:64 2>&1 | tee $OUT/wide-merge.md
