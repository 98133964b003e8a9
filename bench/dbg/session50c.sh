#!/bin/bash
# Session 50, after session50b.sh: 3-bit values at head_dim 96 read as two aligned words and a funnel shift (SoA; AoS
# slots are 2-byte aligned and keep the byte loads: the same run's control). The GPU checks of the 3bit_nc head_dim-96
# variants, then tqgen bench --suite head96 --preset 3bit_nc (C++ decode, the table's splits). Files under $OUT.
#   bash bench/dbg/session50c.sh
. "$(dirname "$0")/device_env.sh"
K='d96 and k3nc-v3' timeout ${TESTS_S:-120} bash bench/dbg/gpu_tests.sh 2 tests/test_cuda_gpu.py 2>&1 | tail -6
echo "tests done at $((SECONDS - t0)) s"
timeout ${BENCH_S:-100} python -m tqgen bench --suite head96 --backend cuda --op decode --preset 3bit_nc --cuda-graph \
  --no-plot --out $OUT --tag $slug-$day-head96-3bit-words-graph 2>&1 | tail -2
echo "done at $((SECONDS - t0)) s"
