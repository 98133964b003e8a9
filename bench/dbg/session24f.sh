#!/usr/bin/env bash
# Session 24's device run 6: SoA k3v4_nc at head_dim 128 with pair_add (lower_cuda's override): its split table
# re-tuned (merged into a copy of tqgen/tuned/nvidia-h200.json under $OUT/tuned), then, with that table, the C++
# decode and runtime GPU tests and the decode targets with floors. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp $OUT/tuned && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
cp tqgen/tuned/nvidia-h200.json $OUT/tuned/
python -m tqgen tune --preset k3v4_nc --layout soa --head-dim 128 --out $OUT/tuned 2>&1 | tail -30
cp $OUT/tuned/nvidia-h200.json tqgen/tuned/nvidia-h200.json
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
T=h200-2026-12-03-targets-v31-floor
python -m tqgen bench --suite targets --op decode --backend cuda --out $OUT --tag $T --cuda-graph --l2-floor --no-plot 2>&1 | grep -v "case/s\]" | tail -2
grep -A12 "^| backend | preset" $OUT/$T.md | head -11
