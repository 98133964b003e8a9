#!/bin/bash
# Session 29, run 4: NVRTC builds on the H200. Where torch's libnvrtc is; the GPU tests on the working tree (the NVRTC
# runtime test among them); NVRTC-built vs nvcc-built decodes of every default sm90 variant, same run
# (bench/dbg/nvrtc_ab.py).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
python -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
find / -name "libnvrtc*.so*" 2>/dev/null | grep -v proc | head
python -c "from tqgen import nvrtc; print(nvrtc.find_nvrtc(), nvrtc.Nvrtc.get().version, nvrtc.cuda_compiler())"
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
python bench/dbg/nvrtc_ab.py 32x32768,128x8192 64:32x32768 2>&1 | tee $OUT/nvrtc-ab.md
