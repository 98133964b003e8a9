#!/bin/bash
# Session 29, run 5: bench/dbg/nvrtc_ab.py again (run 4's stopped at k3v4_nc AoS on a build without a decode report:
# failed builds are now printed with their log and skipped).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python bench/dbg/nvrtc_ab.py 32x32768,128x8192 64:32x32768 2>&1 | tee $OUT/nvrtc-ab.md
