#!/bin/bash
# Session 31, run 3: tqgen bench --suite prefill (prefill of 4 and 512 new tokens after 4K / 32K of history, B = 1, 8,
# 32, and the dequant) on the final code, C++ kernels (every preset x layout) and Triton (two); then the session-30
# runtime prefill and C++ dequant (runtime/api.py, the kernel template, lower_cuda, cuda_launch and reference of
# HEAD ac20441 in a second tree; tmp_old/ of the working copy, not committed: for f in runtime/api.py
# tqgen/templates/gpu/kernels.cu.j2 tqgen/lower_cuda.py tqgen/cuda_launch.py tqgen/reference.py; do
# git show ac20441:$f > tmp_old/$(basename $f); done) on two
# presets, same machine; GPU tests first
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT timeout 200 bash bench/dbg/gpu_tests.sh 8 tests/test_runtime_gpu.py tests/test_cuda_gpu.py::test_variant_matches_reference 2>&1 | tail -10
T=h200-2026-12-04-prefill-v2
timeout 260 python -m tqgen bench --suite prefill --backend cuda --budget-s 240 --out $OUT --tag $T 2>&1 | grep -v "case/s\]" | tail -2
timeout 120 python -m tqgen bench --suite prefill --backend triton --preset 4bit_nc --preset k3v4_nc --budget-s 100 \
  --no-plot --out $OUT --tag $T-triton 2>&1 | grep -v "case/s\]" | tail -2
rm -rf /tmp/old && mkdir /tmp/old && cp -r tqgen runtime pyproject.toml /tmp/old/ && cp tmp_old/api.py /tmp/old/runtime/api.py \
  && cp tmp_old/kernels.cu.j2 /tmp/old/tqgen/templates/gpu/kernels.cu.j2 \
  && cp tmp_old/lower_cuda.py tmp_old/cuda_launch.py tmp_old/reference.py /tmp/old/tqgen/
mkdir -p /tmp/ppo && ln -sfn /tmp/old/runtime /tmp/ppo/tqgen_runtime
(cd /tmp/old && PYTHONPATH=/tmp/old:/tmp/ppo TQGEN_CACHE_DIR=/tmp/tqco timeout 200 python -m tqgen bench --suite prefill \
  --backend cuda --preset 4bit_nc --preset k3v4_nc --budget-s 180 --no-plot --out $OUT --tag $T-before 2>&1 | grep -v "case/s\]" | tail -2)
for f in $T $T-triton $T-before; do echo "== $f"; grep "^| cuda\|^| triton" $OUT/$f.md | cut -d'|' -f2-19 | head -150; done
