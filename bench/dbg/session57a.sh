#!/bin/bash
# Session 57: the dense rotation's store of Lloyd-Max keys from two of Πᵀ's bf16 parts (q2) against three (base), same
# run, bf16 and fp16 inputs, head_dims 80 and 96 (bench/dbg/dense_store_ab.py: every arm's cache checked against the
# reference by compare_store's rule). Files under $OUT.
. "$(dirname "$0")/device_env.sh"
ARMS=base,q2 CASES=4bit_nc:soa:80,4bit_nc:aos:80,3bit_nc:aos:80,k3v4_nc:soa:80,4bit_nc:soa:96,3bit_nc:aos:96 \
  timeout 240 python bench/dbg/dense_store_ab.py > $OUT/q2-bf16.txt 2>&1; echo "bf16 rc $? at $((SECONDS - t0)) s"
DT=f16 ARMS=base,q2 CASES=4bit_nc:soa:80,3bit_nc:aos:80,4bit_nc:soa:96 \
  timeout 200 python bench/dbg/dense_store_ab.py > $OUT/q2-f16.txt 2>&1; echo "f16 rc $? at $((SECONDS - t0)) s"
grep -A20 '^| case' $OUT/q2-bf16.txt; grep -A20 '^| case' $OUT/q2-f16.txt; tail -3 $OUT/q2-*.txt
