#!/bin/bash
# Session 47: the head_dim-256 C++ decode's launch options (debug sweep, bench/dbg/sweep3.py with D=256, CUDA-graph
# replay, B=32 L=32K Hq 16 Hk 8, the launcher's split count): the session's defaults (2 warps x 4 blocks, dynamic
# shared memory, query fragments in shared memory) against the query fragments in registers, 2 / 4 pipeline stages,
# the loop rolled, 32 pair-table copies, 4 warps x 2 blocks; every preset, SoA then AoS. Output under $OUT.
. "$(dirname "$0")/device_env.sh"
C=default,default+q_in_smem=0,default+stages=2+tile_unroll=1,default+tile_unroll=1,w4b2d,again
for lay in soa aos; do
  D=256 GRAPH=1 SHAPES=32x32768 LAYOUT=$lay timeout ${EACH_S:-270} python bench/dbg/sweep3.py $C 4bit_nc,3bit_nc,k3v4_nc,k8v4 \
    > $OUT/sweep-d256-$lay.md 2> $OUT/sweep-d256-$lay.log; echo "$lay rc $? at $((SECONDS - t0)) s"
  grep "^|" $OUT/sweep-d256-$lay.log || tail -5 $OUT/sweep-d256-$lay.log
done
