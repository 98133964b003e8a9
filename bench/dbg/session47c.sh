#!/bin/bash
# Session 47: AoS 4bit_nc at head_dim 256 with 2 pipeline stages unrolled by 2 (no spills) against the defaults
# (3 stages, 12 bytes spilled), the defaults timed first and last (bench/dbg/sweep3.py, CUDA graphs). Files under $OUT.
. "$(dirname "$0")/device_env.sh"
D=256 GRAPH=1 SHAPES=32x8192,32x32768 LAYOUT=aos timeout 150 python bench/dbg/sweep3.py \
  default,default+stages=2+tile_unroll=2,again 4bit_nc > $OUT/sweep-d256-aos4.md 2> $OUT/sweep-d256-aos4.log
grep "^|" $OUT/sweep-d256-aos4.log || tail -5 $OUT/sweep-d256-aos4.log
