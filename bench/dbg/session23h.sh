#!/usr/bin/env bash
# Session 23's device run 8: the water level with one sequence a lane (slots bounded by the batch) and a float
# reciprocal of the level, against the landed cut-and-share deal (94ade0b; bench/dbg/deal_ab.py, OLD_CAP_SCALE=1),
# then run 9 (bench/dbg/session23i.sh: the GPU tests and the mixed suite on it), in the same call. OUT must be set; cubins compiled on the CPU machine into bench/dbg/dealx.
export PYTHONPATH=$PWD:/tmp/pp PYTHONUNBUFFERED=1 OLD_CAP_SCALE=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python bench/dbg/deal_ab.py time bench/dbg/dealx k8v4:soa,4bit_nc:soa,3bit_nc:soa,k3v4_nc:soa,k8v4:aos,4bit_nc:aos,k3v4_nc:aos 2>&1 | tee $OUT/deal128.md | tail -45
D=64 python bench/dbg/deal_ab.py time bench/dbg/dealx k8v4:soa,4bit_nc:soa,k3v4_nc:aos 2>&1 | tee $OUT/deal64.md | tail -18
export TQGEN_CACHE_DIR=$PWD/bench/dbg/tqc
bash bench/dbg/session23i.sh
