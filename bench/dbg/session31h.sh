#!/bin/bash
# Session 31, run 8: where an eager prefill call's host time goes (bench/dbg/prefill_profile.py)
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
timeout 200 python bench/dbg/prefill_profile.py 2>&1 | grep -v "^$" | cut -c1-160 | head -90
