#!/usr/bin/env bash
# Session 28, run 8: (1) small-batch decode calls by split count on the final kernels (bench/dbg/b1_splits.py);
# (2) issue 6's benchmark from a fresh clone: a `git archive` of HEAD (carry-free: .xfer/fresh.tar, made by
# `git archive --format=tar HEAD > .xfer/fresh.tar`) unpacked into an empty folder, installed into the machine's Python
# next to its torch (pip install --no-deps --no-build-isolation -e .), then the README's main job (tqgen build --all;
# examples/demo.py on the GPU) and the targets benchmark from that folder. OUT must be set.
set -u
R=$PWD
export PYTHONPATH=$R:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $R/runtime /tmp/pp/tqgen_runtime
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
python bench/dbg/b1_splits.py 4bit_nc:soa,4bit_nc:aos,k8v4:soa,k3v4_nc:aos 1x1024,1x2048,1x4096,1x8192,8x2048 2>&1 | tee $OUT/b1-splits.md
unset PYTHONPATH
F=/tmp/fresh; rm -rf $F; mkdir -p $F; tar -xf .xfer/fresh.tar -C $F; cd $F
python -m pip install --no-deps --no-build-isolation -e . 2>&1 | tail -1
python -c "import tqgen, tqgen_runtime, torch, triton; print('tqgen', tqgen.__file__, 'torch', torch.__version__, 'triton', triton.__version__)"
export TQGEN_CACHE_DIR=/tmp/tqc_fresh
tqgen build --all 2>&1 | tail -1
python examples/demo.py 2>&1 | tail -14 | tee $OUT/demo-fresh-gpu.txt
T=h200-2026-12-04-targets-v41-fresh
timeout 300 tqgen bench --suite targets --op decode --backend cuda --cuda-graph --l2-floor --no-plot --out $OUT --tag $T 2>&1 | grep -v "case/s\]" | tail -2
grep -A12 "^| backend | preset" $OUT/$T.md | head -11
