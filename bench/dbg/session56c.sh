#!/bin/bash
# Session 56: the dense rotation's rows dequant with two parts of x and Π for 16-bit outputs (three for fp32): the GPU
# checks of every head_dim-80 / 96 variant (store / decode / dequant against the reference), then the same-run A/B of
# the store and dequant against the committed template (bench/dbg/dense_ab.py at head_dim 80; OLD: the commit before
# the change). Files under $OUT.
. "$(dirname "$0")/device_env.sh"
K='(d80 or d96) and variant_matches' timeout 200 bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py 2>&1 | tail -11
HEAD_DIM=80 OLD=${OLD:-4584d9c1} timeout 300 python bench/dbg/dense_ab.py > $OUT/dense-ab-d80.txt 2>&1
echo "dense_ab rc $? at $((SECONDS - t0)) s"
grep -A40 '^| op' $OUT/dense-ab-d80.txt
