#!/usr/bin/env bash
# Session 27's device run 6: the pipeline's depth for AoS 4bit_nc at head_dim 64 (its pair table's holes hold 4
# stages there; session 11's deeper-pipeline sweep was SoA only): same-run option A/B by CUDA-graph replay
# (bench/dbg/sweeps.sh, D=64 Hq 9 Hk 3 B=32 L=32K, twice). OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
for round in 1 2; do
  D=64 GRAPH=1 OUT=$OUT/r$round bash -c "mkdir -p \$OUT; bash bench/dbg/sweeps.sh 'st64|16,22|aos|default,default+stages=4+tile_unroll=4,default+stages=2+tile_unroll=2|4bit_nc'" 2>&1 | grep "^| " | grep -v "preset\|---"
done
