#!/usr/bin/env bash
# Session 27's device run 5: issue 6's "the benchmark command runs from a fresh clone on the H200". A `git archive`
# of HEAD (carry .xfer/fresh.tar: `git archive --format=tar HEAD > .xfer/fresh.tar`) is unpacked into an empty
# folder, installed into the machine's Python next to its torch/triton (no network there: pip install --no-deps
# --no-build-isolation -e .; a venv does not see that torch), then the README's main job (tqgen build --all; examples/demo.py
# on the GPU) and the targets benchmark run from that folder. OUT must be set.
set -u
F=/tmp/fresh; rm -rf $F; mkdir -p $F; tar -xf .xfer/fresh.tar -C $F; cd $F
echo "python: $(command -v python)"
python -m pip install --no-deps --no-build-isolation -e . 2>&1 | tail -1
python -c "import tqgen, tqgen_runtime, torch, triton; print('tqgen', tqgen.__file__, 'torch', torch.__version__, 'triton', triton.__version__)"
export TQGEN_CACHE_DIR=/tmp/tqc_fresh PYTHONUNBUFFERED=1
tqgen build --all 2>&1 | tail -1
git status > /dev/null 2>&1 || echo "(no git in the archive: the build's staleness is its file count)"
python examples/demo.py 2>&1 | tail -14 | tee $OUT/demo-fresh-gpu.txt
T=h200-2026-12-04-targets-v39-fresh
timeout 300 tqgen bench --suite targets --op decode --backend cuda --cuda-graph --l2-floor --no-plot --out $OUT --tag $T 2>&1 | grep -v "case/s\]" | tail -2
grep -A12 "^| backend | preset" $OUT/$T.md | head -11
