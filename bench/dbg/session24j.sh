#!/usr/bin/env bash
# Session 24's device run 10 (refused three times: not run yet; the next session's first balanced-width step): the balanced decode at 1-4x the tuned split count (bench/dbg/bal_width.py), B=128 L=32K
# one-long and equal lengths, the four C++ decodes whose B=128 grid has one block a unit and SoA k3v4_nc, head_dim 128. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python bench/dbg/bal_width.py k8v4:soa,4bit_nc:soa,3bit_nc:soa,4bit_nc:aos,k3v4_nc:soa 2>&1 | tee $OUT/bal-width.md | tail -12
