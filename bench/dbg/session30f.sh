#!/bin/bash
# Session 30, run 6: the GPU tests of the Triton decode and the runtime on the final code (the balanced merge asks
# an empty sequence's length only)
set -u
OUT=$OUT timeout 280 bash bench/dbg/gpu_tests.sh 8 tests/test_triton_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
