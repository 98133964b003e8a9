#!/bin/bash
# Session 53: 3-bit values at head_dim 96 (4.5-byte value eighths) through the decode's line loads, and the dense
# store's bf16 keys written to shared memory as loaded. The GPU checks of the head_dim-96 variants with the orthogonal
# rotation (every preset x layout: store, decode, dequant), then the same-run A/B of the decode against the register-
# prefetch path (bench/dbg/frac_ab.py; OLD_DIR: the previous commit's rendered sources, bench/dbg/old_src, untracked)
# and of the dense store against the previous template (bench/dbg/dense_ab.py; OLD: bench/dbg/old_tpl, untracked).
# Files under $OUT.
. "$(dirname "$0")/device_env.sh"
K='96 and orthogonal0' timeout ${TESTS_S:-170} bash bench/dbg/gpu_tests.sh 4 tests/test_cuda_gpu.py 2>&1 | tail -8
echo "tests done at $((SECONDS - t0)) s"
OLD_DIR=${OLD_DIR:-bench/dbg/old_src} timeout ${AB_S:-200} python bench/dbg/frac_ab.py 2>&1 | tee $OUT/frac-ab.txt | tail -12
echo "decode A/B done at $((SECONDS - t0)) s"
OLD=${OLD:-bench/dbg/old_tpl/kernels.cu.j2} timeout ${DENSE_S:-200} python bench/dbg/dense_ab.py 2>&1 | tee $OUT/dense-ab.txt | tail -24
echo "done at $((SECONDS - t0)) s"
