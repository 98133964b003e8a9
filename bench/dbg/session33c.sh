#!/bin/bash
# Session 33, run 4: the rows dequant (CudaOptions.dequant_rows) checked against the reference on the GPU (every preset
# x layout, head_dim 128 / 64, rotated fp8 keys) and timed against the lane kernel (bench/dbg/dequant_rows.py); then
# the flex paged baseline's sweep again (dynamo's recompile limit raised: the 9th shape had fallen back to eager).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python -m pytest -q -m gpu -p no:cacheprovider -x tests/test_cuda_gpu.py -k dequant_rows 2>&1 | tail -3
timeout 200 python bench/dbg/dequant_rows.py 2>&1 | tail -30
S=h200-2026-12-04-sweep-paged
timeout 250 python -m tqgen bench --suite sweep --op decode --backend cuda --cuda-graph --out $OUT --tag $S 2>&1 | grep -v "case/s\]" | tail -2
grep -A14 "^## bf16 paged" $OUT/$S.md
