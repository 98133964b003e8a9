#!/usr/bin/env bash
# Session 25's device run 3: AoS 4-bit keys with pair_prmt (the pair table at a 256-byte entry stride, the pipeline
# in its holes; on by lower_cuda's override): the C++ decode and runtime GPU tests; a same-run A/B against
# pair_prmt=0 (bench/dbg/sweeps.sh, CUDA graphs, D=128 and 64); the split tables of AoS 4bit_nc re-tuned (merged
# into a copy under $OUT/tuned, used for the rest of the run); the decode targets with floors. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp $OUT/tuned && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
GRAPH=1 OUT=$OUT bash bench/dbg/sweeps.sh 'prmt128|0,8,12,16|aos|default,default+pair_prmt=0|4bit_nc' 2>&1 | tail -14
D=64 GRAPH=1 OUT=$OUT bash bench/dbg/sweeps.sh 'prmt64|0,12,16,22|aos|default,default+pair_prmt=0|4bit_nc' 2>&1 | tail -10
cp tqgen/tuned/nvidia-h200.json $OUT/tuned/
for d in 128 64; do timeout 240 python -m tqgen tune --preset 4bit_nc --layout aos --head-dim $d --out $OUT/tuned 2>&1 | tail -4; done
cp $OUT/tuned/nvidia-h200.json tqgen/tuned/nvidia-h200.json
T=h200-2026-12-03-targets-v33-floor
timeout 300 python -m tqgen bench --suite targets --op decode --backend cuda --out $OUT --tag $T --cuda-graph --l2-floor --no-plot 2>&1 | grep -v "case/s\]" | tail -2
grep -A12 "^| backend | preset" $OUT/$T.md | head -11
