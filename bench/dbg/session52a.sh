#!/bin/bash
# Session 52: the runtime's per-kernel choice at head_dim 96 on the GPU (the padded specs: the C++ store / dequant for
# the orthogonal rotation, Triton's store and dequant for unrotated fp8 keys), then the dense rotation's C++ store and
# dequant A/B (bench/dbg/dense_ab.py: session 51's loop order against this one, rotated fp8 keys, Triton's beside).
# Then ncu of the C++ store at 96 (bench/dbg/prof.sh: the dense SoA 4bit_nc one and the unrotated fp8 one). Files
# under $OUT.
. "$(dirname "$0")/device_env.sh"
K='padded' timeout ${TESTS_S:-150} bash bench/dbg/gpu_tests.sh 6 tests/test_runtime_gpu.py 2>&1 | tail -8
echo "tests done at $((SECONDS - t0)) s"
timeout ${AB_S:-300} python bench/dbg/dense_ab.py 2>&1 | tee $OUT/dense-ab.txt | tail -24
echo "A/B done at $((SECONDS - t0)) s"
HEAD_DIM=96 OP=store NAME=-d96-store timeout ${NCU_S:-150} bash bench/dbg/prof.sh 4bit_nc:soa,k8v4:soa 2>&1 | tail -60
echo "done at $((SECONDS - t0)) s"
