#!/usr/bin/env bash
# Session 27's device run 4: CudaOptions.prefetch (each warp's first tiles prefetched into L2 at the decode's start,
# before the prologue), same-run option A/Bs by CUDA-graph replay (bench/dbg/sweeps.sh: the defaults against
# default+prefetch=1 at the tuned split counts; D=64 Hq 9 Hk 3 B=32 L=32K twice, D=128 B=32 L=32K and B=128 L=8K).
# OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
C=default,default+prefetch=1
for round in 1 2; do
  D=64 GRAPH=1 OUT=$OUT/r$round bash -c "mkdir -p \$OUT; bash bench/dbg/sweeps.sh 'pf64a|0|aos|$C|4bit_nc,k8v4,3bit_nc' 'pf64s|0|soa|$C|4bit_nc,3bit_nc,k8v4'" 2>&1 | grep "^| " | grep -v "preset\|---"
done
GRAPH=1 OUT=$OUT bash bench/dbg/sweeps.sh "pf128a|0|aos|$C|4bit_nc,k3v4_nc" "pf128s|0|soa|$C|3bit_nc,k8v4" 2>&1 | grep "^| " | grep -v "preset\|---"
