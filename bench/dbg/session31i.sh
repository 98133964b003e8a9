#!/bin/bash
# Session 31, run 9: the runtime GPU tests after the review (the prefill batch case from tqgen.testing)
set -u
OUT=$OUT timeout 200 bash bench/dbg/gpu_tests.sh 8 tests/test_runtime_gpu.py 2>&1 | tail -10
