#!/usr/bin/env bash
# Session 23's device run 1: the floored long-block count (GPU tests of the C++ decode and runtime), the 3/4-wave
# vs full-wave cap on all 16 C++ decodes (bench/dbg/bal_cap.py). OUT must be set; cubins precompiled into
# bench/dbg/tqc on the CPU machine (carried).
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=$PWD/bench/dbg/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
python bench/dbg/bal_cap.py k8v4:soa,4bit_nc:soa,k3v4_nc:soa,3bit_nc:soa,k8v4:aos,4bit_nc:aos,k3v4_nc:aos,3bit_nc:aos 2>&1 | tee $OUT/cap128.md | tail -40
D=64 python bench/dbg/bal_cap.py k8v4:soa,4bit_nc:soa,k3v4_nc:soa,3bit_nc:soa,k8v4:aos,4bit_nc:aos,k3v4_nc:aos,3bit_nc:aos 2>&1 | tee $OUT/cap64.md | tail -40
