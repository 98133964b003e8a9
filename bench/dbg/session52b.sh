#!/bin/bash
# Session 52, second run: the dense rotation's smaller shared memory (the bf16 store's 20 KB: its union sized by its
# parts) and y's conflict-free pitch (D + 4 floats) against HEAD (bench/dbg/dense_ab.py, OLD=HEAD), with the store's
# __launch_bounds__ minimum at 6 blocks beside (MB=6); then the GPU checks of the head_dim-96 dense variants. Files
# under $OUT. Where the device machine's git lacks the commit, OLD names a template file written here first
# (git show C:tqgen/templates/gpu/kernels.cu.j2 > bench/dbg/old_tpl/kernels-C.cu.j2: untracked, it travels with the
# tree).
. "$(dirname "$0")/device_env.sh"
OLD=${OLD:-HEAD} MB=${MB:-6} timeout ${AB_S:-300} python bench/dbg/dense_ab.py 2>&1 | tee $OUT/dense-ab2.txt | tail -34
echo "A/B done at $((SECONDS - t0)) s"
K='orthogonal and 96' timeout ${TESTS_S:-200} bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py \
  tests/test_runtime_gpu.py 2>&1 | tail -12
echo "done at $((SECONDS - t0)) s"
