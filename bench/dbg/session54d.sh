#!/bin/bash
# Session 54, after session54c.sh: 3-bit keys' 7.5-byte quarters and 3-bit values' 3.75-byte eighths at head_dim 80
# through the decode's line loads (the words that hold each piece's bits, funnel-shifted). The GPU checks of every
# sm90 head_dim-80 variant and both merges; the same-run A/B against the register prefetch (bench/dbg/frac_ab.py, old =
# stages=0: the path session54c.sh timed; outputs compared bit for bit); the split table's 3-bit entries at 80
# re-tuned; tqgen bench --suite head80 --backend cuda with them. Files under $OUT.
. "$(dirname "$0")/device_env.sh"
K='d80' timeout ${TESTS_S:-200} bash bench/dbg/gpu_tests.sh 5 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -10
echo "tests done at $((SECONDS - t0)) s"
HEAD_DIM=80 timeout ${AB_S:-200} python bench/dbg/frac_ab.py 3bit_nc,k3v4_nc stages=0 2>&1 | tee $OUT/frac-ab-d80.txt | tail -15
echo "A/B done at $((SECONDS - t0)) s"
timeout ${TUNE_S:-150} python -m tqgen tune --head-dim 80 --preset k3v4_nc --preset 3bit_nc --batch 1 --batch 8 \
  --batch 32 --seq-len 4096 --seq-len 8192 --out tqgen/tuned 2>&1 | grep -v "^  " | tail -6
cp tqgen/tuned/*.json $OUT/
echo "tune done at $((SECONDS - t0)) s"
timeout ${BENCH_S:-150} python -m tqgen bench --suite head80 --backend cuda --op decode --cuda-graph --no-plot \
  --out $OUT --tag $slug-$day-head80-cpp-lines-tuned-graph 2>&1 | tail -2
echo "done at $((SECONDS - t0)) s"
