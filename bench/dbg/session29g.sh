#!/usr/bin/env bash
# Session 29, run 7: the README's main job from a fresh clone on the H200 with no CUDA toolkit in reach: a `git archive`
# of HEAD (.xfer/fresh.tar) unpacked into an empty folder, installed into the machine's Python next to its torch
# (pip install --no-deps --no-build-isolation -e .), PATH without nvcc and TQGEN_CUDA_COMPILER=nvrtc (the machine also
# has /usr/local/cuda/bin/nvcc, which find_nvcc would take), an empty kernel cache; then `tqgen build --all` and
# examples/demo.py on the GPU, whose C++ variants NVRTC now builds. OUT must be set.
set -u
unset PYTHONPATH
F=/tmp/fresh; rm -rf $F; mkdir -p $F; tar -xf .xfer/fresh.tar -C $F; cd $F
python -m pip install --no-deps --no-build-isolation -e . 2>&1 | tail -1
export PATH=$(dirname "$(command -v python)"):/usr/bin:/bin TQGEN_CUDA_COMPILER=nvrtc TQGEN_CACHE_DIR=/tmp/tqc_nvrtc
rm -rf /tmp/tqc_nvrtc
command -v nvcc || echo "no nvcc on PATH"
python -c "from tqgen import nvrtc; print('compiler:', nvrtc.cuda_compiler(), nvrtc.find_nvrtc(), nvrtc.Nvrtc.get().version)"
tqgen build --all 2>&1 | tail -1
python examples/demo.py 2>&1 | tail -16 | tee $OUT/demo-fresh-gpu-nvrtc.txt
echo "cubins built: $(find /tmp/tqc_nvrtc -name '*.cubin' | wc -l)"
