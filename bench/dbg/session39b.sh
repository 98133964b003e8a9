#!/bin/bash
# Session 39, device call 2 (after session39a.sh, on the warm machine): the rest of sessions 36/37's unrun device work.
#  1. the Triton store's launch shapes at head_dim 64 (this tree);
#  2. the full store suite, C++ and Triton in one run (against -full-store-triton-v3.md: the divisions an element gone;
#     and runtime/select.py's one exception, NVIDIA's k8v4 AoS store on Triton, read in one run again);
#  3. the prefill suite with host seq_lens / query_start_loc (no read-back inside the timed call);
#  4. the prefill padding bound by wall time, same process: 2^20, 2^22 (the default), 2^25 (the old), as far as it gets.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
R=/tmp/r39b && rm -rf $R && mkdir -p $R
trap 'tar czf "$OUT/results.tgz" -C $R .' EXIT
TQ_D=64 timeout 80 python bench/dbg/triton_store_sweep.py 4bit_nc k3v4_nc 3bit_nc 2>&1 | tee "$R/triton-store-sweep-d64.md" | tail -25
timeout 170 python -m tqgen bench --out $R --no-plot --budget-s 140 --suite full --op store --backend cuda --backend triton \
  --tag h200-full-store-v3 2>&1 | tail -2
timeout 100 python -m tqgen bench --out $R --budget-s 70 --no-plot --suite prefill --backend cuda --preset 4bit_nc \
  --layout soa --tag h200-prefill-v7 2>&1 | tail -1
PADS=1048576,4194304,33554432 timeout 210 python bench/dbg/mixed_fresh_prefill.py 2>&1 | tee "$R/mixed-fresh-prefill.md" | tail -30
