#!/bin/bash
# Session 33, run 2: the flex paged baseline replayed from a CUDA graph (like the decodes) and GQA 3 padded to
# a power-of-two group (flex-decoding's requirement); issue 6's C++ decode targets with it (v44) and the
# decode sweep (B 1 / 32, L 1K-128K, head_dim 128) with the paged baseline in its plots.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python -m pytest -q -m gpu -p no:cacheprovider tests/test_baselines.py 2>&1 | tail -1
T=h200-2026-12-04-targets-v44
timeout 300 python -m tqgen bench --suite targets --op decode --backend cuda --cuda-graph --no-plot --out $OUT --tag $T 2>&1 | grep -v "case/s\]" | tail -2
grep -A8 "^## bf16 paged" $OUT/$T.md
grep -A10 "^| backend | preset | layout | decode B=32" $OUT/$T.md
S=h200-2026-12-04-sweep-paged
timeout 280 python -m tqgen bench --suite sweep --op decode --backend cuda --cuda-graph --out $OUT --tag $S 2>&1 | grep -v "case/s\]" | tail -2
grep -A14 "^## bf16 paged" $OUT/$S.md
