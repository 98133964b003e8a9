#!/bin/bash
# Session 35's launcher change (arguments packed by struct.pack_into at cuda_launch.PARAMS' offsets; Workspace views
# memoised), to run in a session with a device. Prepare here first: bash bench/dbg/ab_trees.sh prepare 665f9bd7, and
# carry .xfer/base.
#  1. the C++ GPU tests (tests/test_cuda_gpu.py, every variant through the new launcher) and tests/test_runtime_gpu.py;
#  2. the eager host cost, same run, the tree before the change against this one (bench/dbg/eager_host.py, 2 rounds).
# Then: record as bench/results/h200-<date>-eager-host.md, HISTORY.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
OUT=$OUT timeout 420 bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
[ -d .xfer/base ] && OUT=$OUT timeout 150 bash bench/dbg/ab_trees.sh run 'python bench/dbg/eager_host.py' 2
