#!/bin/bash
# Session 36, device call 4: this session's changes. Prepare here: bash bench/dbg/ab_trees.sh prepare 665f9bd7 (carry
# .xfer/base).
#  1. the Triton GPU tests (the store at its new sm90 launch shapes) and the runtime's (the padded prefill groups);
#  2. the Triton store's launch shapes at head_dim 64 (the overrides are head_dim 128's);
#  3. the full store suite, Triton, with the new shapes (against h200-2026-12-05-full-store-v2.md);
#  4. the prefill suite (4bit_nc SoA) with PREFILL_PAD_SCORES 2^22 (against -prefill-v5.md, 2^25);
#  5. the eager host cost, base (665f9bd7, the launcher before) against this tree, this tree's script on both.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
R=/tmp/r36d && rm -rf $R && mkdir -p $R  # the device returns 8 files at most: every table goes into one tarball
trap 'tar czf "$OUT/results.tgz" -C $R .' EXIT
OUT=$R timeout 200 bash bench/dbg/gpu_tests.sh 8 tests/test_triton_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -11
TQ_D=64 timeout 120 python bench/dbg/triton_store_sweep.py 2>&1 | tee "$R/triton-store-sweep-d64.md" | tail -2
B="timeout 100 python -m tqgen bench --out $R --budget-s 70 --no-plot"
$B --suite full --op store --backend triton --tag h200-full-store-triton-v3 2>&1 | tail -2
$B --suite prefill --backend cuda --preset 4bit_nc --layout soa --tag h200-prefill-v6 2>&1 | tail -1
[ -d .xfer/base ] && OUT=$R timeout 90 bash bench/dbg/ab_trees.sh run 'python $AB_NEW/bench/dbg/eager_host.py' 2
