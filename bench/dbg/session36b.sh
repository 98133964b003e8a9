#!/bin/bash
# Session 36, device call 2 of 3: the Triton store's launch shapes; the full store suite behind the GPU hold; the
# prefill suite's mixed batches (4bit_nc SoA, C++).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
R=/tmp/r36 && rm -rf $R && mkdir -p $R  # the device returns 8 files at most: every table goes into one tarball
trap 'tar czf "$OUT/results.tgz" -C $R .' EXIT
timeout 200 python bench/dbg/triton_store_sweep.py 2>&1 | tee "$R/triton-store-sweep.md" | tail -3
B="timeout 190 python -m tqgen bench --out $R --budget-s 140"
$B --suite full --op store --backend cuda --backend triton --tag h200-full-store-v2 2>&1 | tail -3
$B --suite prefill --backend cuda --preset 4bit_nc --layout soa --no-plot --tag h200-prefill-v5 2>&1 | tail -2
