#!/bin/bash
# Session 28, run 5: issue 6's decode targets on the working tree (the query rows rotated a warp a row), and a
# longer ABBA A/B of the large shapes against HEAD's kernels (base cubins in .xfer/fc) for the rows run 4 left in
# doubt (k3v4_nc SoA B=32 L=32K 1.06x there).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
T=h200-2026-12-04-targets-v40
timeout 400 python -m tqgen bench --suite targets --op decode --backend cuda --cuda-graph --l2-floor --no-plot --out $OUT --tag $T 2>&1 | grep -v "case/s\]" | tail -2
grep -A12 "^| backend | preset" $OUT/$T.md | head -11
PATCHES=base,new ROUNDS=8 python bench/dbg/fixed_cost.py time .xfer/fc k3v4_nc:soa,4bit_nc:aos,3bit_nc:soa,4bit_nc:soa 32x32768,128x8192 2>&1 | tee $OUT/ab-large.md
