#!/bin/bash
# Session 32, run 1: the transformers generate step's time through TurboQuantCache (before any change)
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
timeout 500 python bench/dbg/hf_host.py --tag before 2>&1 | grep -v Warning | tee $OUT/hf-host-before.txt
