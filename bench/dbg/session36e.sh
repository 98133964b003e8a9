#!/bin/bash
# Session 36, device call 5: the prefill padding bound by wall time, same process, two rounds (the prefill suite's
# "x classic" column read 0.69-0.92x on rows where both timings run the same calls: its GPU hold does not cover a call
# that reads its lengths on the host): equal runs only, 2^20, 2^22 (the new default), 2^25 (the old).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
PADS=1048576,4194304,33554432 timeout 280 python bench/dbg/mixed_fresh_prefill.py 2>&1 | tee "$OUT/mixed-fresh-prefill.md"
