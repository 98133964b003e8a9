#!/bin/bash
# Session 32, run 3: GPU tests after the TurboQuantCache changes (shared plan, sliding windows / sinks through the C++
# kernels on a tiny gpt-oss) and the launcher's raw stream handle (every C++ variant, the runtime)
set -u
OUT=$OUT timeout 520 bash bench/dbg/gpu_tests.sh 8 tests/test_hf_steps.py tests/test_runtime_gpu.py tests/test_cuda_gpu.py 2>&1 | tail -14
