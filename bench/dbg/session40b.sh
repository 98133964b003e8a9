#!/bin/bash
# Session 40, device call: two independent score-mma chains (CudaOptions.score_chains=2: even / odd key chunks, added
# after the last) against one, for the failing decodes, by their L2-resident floor (the SMs' time: on an H100, whose
# SMs are the H200's, the failing H200 rows ran at 0.94-1.03x this floor, session 39) and CUDA-graph replay.
# Two rounds; B=32 L=32K and B=128 L=8K at head_dim 128; the launcher's split counts.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1 GRAPH=1 L2FLOOR=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
R=/tmp/r40b && rm -rf $R && mkdir -p $R
trap 'tar czf "$OUT/results.tgz" -C $R .' EXIT
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
BUILD_ONLY=1 LAYOUT=soa timeout 150 python bench/dbg/sweep3.py default,default+score_chains=2 3bit_nc,k3v4_nc >/dev/null 2>&1 &
BUILD_ONLY=1 LAYOUT=aos timeout 150 python bench/dbg/sweep3.py default,default+score_chains=2 4bit_nc,k3v4_nc,3bit_nc >/dev/null 2>&1 &
wait
for round in 1 2; do
  LAYOUT=soa timeout 120 python bench/dbg/sweep3.py default,default+score_chains=2 3bit_nc,k3v4_nc 2>/dev/null | tee $R/soa-$round.md | tail -9
  LAYOUT=aos timeout 150 python bench/dbg/sweep3.py default,default+score_chains=2 4bit_nc,k3v4_nc,3bit_nc 2>/dev/null | tee $R/aos-$round.md | tail -13
done
