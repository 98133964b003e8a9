#!/bin/bash
# Session 53: 3-bit values at head_dim 96 (4.5-byte value eighths) through the decode's line loads. The GPU checks of
# the 3bit_nc head_dim-96 variants, then the same-run A/B against the register-prefetch path (bench/dbg/frac_ab.py;
# OLD_DIR: the previous commit's rendered sources, bench/dbg/old_src, untracked), then tqgen bench --suite head96
# --preset 3bit_nc (C++ decode, the split table's counts, CUDA graphs). Files under $OUT.
. "$(dirname "$0")/device_env.sh"
K='96 and k3nc-v3' timeout ${TESTS_S:-150} bash bench/dbg/gpu_tests.sh 4 tests/test_cuda_gpu.py 2>&1 | tail -8
echo "tests done at $((SECONDS - t0)) s"
OLD_DIR=${OLD_DIR:-bench/dbg/old_src} timeout ${AB_S:-240} python bench/dbg/frac_ab.py 2>&1 | tee $OUT/frac-ab.txt | tail -12
echo "A/B done at $((SECONDS - t0)) s"
timeout ${BENCH_S:-120} python -m tqgen bench --suite head96 --backend cuda --op decode --preset 3bit_nc --cuda-graph \
  --no-plot --out $OUT --tag $slug-$day-head96-3bit-lines-graph 2>&1 | tail -2
echo "done at $((SECONDS - t0)) s"
