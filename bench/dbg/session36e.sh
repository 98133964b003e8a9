#!/bin/bash
# Session 36, device call 5: the prefill padding bound by wall time, same process, two rounds (the prefill suite's
# "x classic" column read 0.69-0.92x on rows where both timings run the same calls: its GPU hold does not cover a call
# that reads its lengths on the host): equal runs only, 2^20, 2^22 (the new default), 2^25 (the old).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
PADS=1048576,4194304,33554432 timeout 280 python bench/dbg/mixed_fresh_prefill.py 2>&1 | tee "$OUT/mixed-fresh-prefill.md"
# the prefill suite with host seq_lens / query_start_loc (no read-back inside the timed call: the hold holds)
timeout 100 python -m tqgen bench --suite prefill --backend cuda --preset 4bit_nc --layout soa --out "$OUT" --budget-s 70 \
  --no-plot --tag h200-prefill-v7 2>&1 | tail -1
