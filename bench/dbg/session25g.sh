#!/usr/bin/env bash
# Session 25's device run 7: AoS 4bit_nc after its re-tune (B=128 L=32K: 12 splits), balanced vs classic at several
# split counts (the balanced grid as wide as the count's blocks a unit) on a B=128 one-long batch and equal lengths;
# and at head_dim 64 (Hq 9 Hk 3, B=32 L=32K) the balanced entry point's equal-length cost. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python bench/dbg/opts_mixed.py 4bit_nc:aos default 4,8,12,24,36 2>&1 | tee $OUT/aos4-mixed.md | tail -8
D=64 B=32 python bench/dbg/opts_mixed.py 4bit_nc:aos default 12,16,24 2>&1 | tee $OUT/aos4-d64.md | tail -6
for v in 3bit_nc:soa k3v4_nc:aos 4bit_nc:soa; do D=64 B=32 python bench/dbg/opts_mixed.py $v default 16,24,32 2>default 16,22,32 2>&11 | tail -4; done
