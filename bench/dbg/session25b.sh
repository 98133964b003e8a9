#!/usr/bin/env bash
# Session 25's device run 2: (1) same-run A/B of 5c2a7af (before the balanced grid's own width; .xfer/base from
# `bash bench/dbg/ab_trees.sh prepare 5c2a7af`) and this tree on equal lengths (bench/dbg/ab_width.py: the targets'
# shapes for the four decodes whose B=128 grid widened), 2 rounds; (2) SoA k3v4_nc at B=128 one-long with and without
# pair_add at 2/3/4 splits (bench/dbg/opts_mixed.py). OUT must be set.
export PYTHONUNBUFFERED=1
cp bench/dbg/ab_width.py /tmp/abw.py
OUT=$OUT bash bench/dbg/ab_trees.sh run 'python /tmp/abw.py k8v4:soa,4bit_nc:soa,4bit_nc:aos,3bit_nc:soa' 2
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python bench/dbg/opts_mixed.py k3v4_nc:soa 'default;pair_add=0' 2,3,4 2>&1 | tee $OUT/k3v4-onelong.md | tail -12
