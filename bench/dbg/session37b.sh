#!/bin/bash
# Session 37, device call 2 (after session37a.sh, on the warm machine): session 36's fifth call, never run (no machine
# in sessions 36 and 37), and the Triton store's full suite on this tree.
#  1. the prefill padding bound by wall time, same process, two rounds: 2^20, 2^22 (the default), 2^25 (the old);
#  2. the prefill suite with host seq_lens / query_start_loc (no read-back inside the timed call: the hold holds);
#  3. the full store suite, C++ and Triton in one run (against -full-store-triton-v3.md: the divisions an element
#     gone; and runtime/select.py's one exception, NVIDIA's k8v4 AoS store on Triton, read in one run again).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
R=/tmp/r37b && rm -rf $R && mkdir -p $R
trap 'tar czf "$OUT/results.tgz" -C $R .' EXIT
PADS=1048576,4194304,33554432 timeout 280 python bench/dbg/mixed_fresh_prefill.py 2>&1 | tee "$R/mixed-fresh-prefill.md" | tail -30
B="timeout 100 python -m tqgen bench --out $R --budget-s 70 --no-plot"
$B --suite prefill --backend cuda --preset 4bit_nc --layout soa --tag h200-prefill-v7 2>&1 | tail -1
timeout 170 python -m tqgen bench --out $R --no-plot --budget-s 140 --suite full --op store --backend cuda --backend triton \
  --tag h200-full-store-v3 2>&1 | tail -2
