#!/usr/bin/env bash
# Session 23's device run 6: the deal A/B (bench/dbg/deal_ab.py: session 22's cut-and-share deal, the water level
# called and inlined, the classic grid), cubins compiled on the CPU machine into bench/dbg/dealx. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python bench/dbg/deal_ab.py time bench/dbg/dealx k8v4:soa,4bit_nc:soa,3bit_nc:soa,k3v4_nc:soa,k8v4:aos,4bit_nc:aos,k3v4_nc:aos 2>&1 | tee $OUT/deal128.md | tail -45
D=64 python bench/dbg/deal_ab.py time bench/dbg/dealx k8v4:soa,4bit_nc:soa,k3v4_nc:aos 2>&1 | tee $OUT/deal64.md | tail -18
