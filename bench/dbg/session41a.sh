#!/bin/bash
# Session 41, device call: more resident warps for the failing (SM-bound) decodes, by their L2-resident floor (the
# SMs' time, comparable on an H100 and an H200) and CUDA-graph replay, the launcher's split counts for each combo:
# SoA 3bit_nc D128 at 5 blocks of 4 warps (b5: 96 registers, 104 bytes spilled, 344 hot SASS a tile vs 327 at 16
# warps); AoS 3bit_nc / k3v4_nc D128 at 7 / 8 blocks of 2 warps (128 registers, 28 bytes spilled; 12 -> 14 warps,
# shared memory allowing 7); head_dim 64: SoA 4bit_nc at 8 blocks of 4 (64 registers), the 3-bit-key decodes at 10
# blocks of 2 (96 registers, shared memory allowing 9). Two rounds.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1 GRAPH=1 L2FLOOR=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
R=/tmp/r41a && rm -rf $R && mkdir -p $R
trap 'tar czf "$OUT/results.tgz" -C $R .' EXIT
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
S1="LAYOUT=soa D=128 default,b5 3bit_nc"
S2="LAYOUT=aos D=128 default,b7,b8 3bit_nc,k3v4_nc"
S3="LAYOUT=soa D=64 default,b8 4bit_nc"
S4="LAYOUT=soa D=64 default,w2b10 3bit_nc,k3v4_nc"
S5="LAYOUT=aos D=64 default,w2b10 3bit_nc,k3v4_nc"
i=0
for s in "$S1" "$S2" "$S3" "$S4" "$S5"; do
  set -- $s; i=$((i+1))
  env BUILD_ONLY=1 $1 $2 timeout 200 python bench/dbg/sweep3.py $3 $4 > $R/build-$i.log 2>&1 &
done
wait
for round in 1 2; do
  i=0
  for s in "$S1" "$S2" "$S3" "$S4" "$S5"; do
    set -- $s; i=$((i+1))
    env $1 $2 timeout 100 python bench/dbg/sweep3.py $3 $4 2>$R/err-$i-$round.log | tee $R/s$i-$round.md | grep '^| [0-9k]'
  done
done
