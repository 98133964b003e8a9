#!/bin/bash
# Session 31, run 5: the GPU tests of the runtime and the transformers integration on the final code (the generation
# path hands kv.prefill host copies of its lengths, check=False)
set -u
OUT=$OUT timeout 500 bash bench/dbg/gpu_tests.sh 8 tests/test_runtime_gpu.py tests/test_h200_hf.py 2>&1 | tail -12
