#!/bin/bash
# Session 37, device call 3 (any time after 37a / 37b, ~4 minutes): the C++ GPU tests this session touched.
#  1. the store's special values with the padding slot moved off the NaN-value / inf-key rows (stored for the first
#     time: the C++ store's nan_row / bad-norm branches against the reference);
#  2. the rows dequant with AMD's new defaults (one round, 4 logical warps a block) through the HIP fragment path
#     compiled for NVIDIA (12 variants), against the reference.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
R=/tmp/r37c && rm -rf $R && mkdir -p $R
trap 'tar czf "$OUT/results.tgz" -C $R .' EXIT
K='special_values or (dequant_rows and portable)' OUT=$R timeout 400 bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py \
  2>&1 | tail -11
