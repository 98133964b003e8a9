#!/bin/bash
# Session 58, after session58a.sh: the rows dequant's rounds made the NVIDIA default at head_dim 80 (4 rounds, 4 blocks
# an SM) and 96 (2, 3 blocks): the GPU checks of every sm90 head_dim-80 / 96 dense variant (store / decode / dequant
# against the reference), the rounds' dequant list (DQ_ROUNDS, with a one-round arm) and the dense stores' special
# values (one failed in session58a.sh: two test shards compiled its variant into one directory at once, fixed in
# cuda_launch.build_binary). Files under $OUT.
. "$(dirname "$0")/device_env.sh"
K='dqrounds or (special and orthogonal and not rounds) or (variant_matches and orthogonal)' timeout 200 \
  bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py > $OUT/tests.txt 2>&1; tail -11 $OUT/tests.txt
echo "tests at $((SECONDS - t0)) s"
