#!/usr/bin/env bash
# Session 25's device run 6: what the AoS decodes' fragment-read bank conflicts cost: bench/dbg/conflict_free.py (the
# variants as generated vs the same reads at conflict-free addresses, cubins compiled on the CPU machine into
# bench/dbg/cf_cubins). OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python bench/dbg/conflict_free.py time bench/dbg/cf_cubins 4bit_nc:aos,k3v4_nc:aos,3bit_nc:aos 2>&1 | tee $OUT/conflict-free.md | tail -10
