#!/bin/bash
# session 16, device call 1 (one-off): Triton decode prefetch depth A/B, then ncu of every C++ and Triton decode
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1; mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv
(python bench/dbg/precompile.py > $OUT/precompile.txt 2>&1 &)
for lay in soa aos; do
  LAYOUT=$lay timeout 170 python bench/dbg/triton_opts.py 1x16,1x16:decode_prefetch=2 k8v4,4bit_nc,k3v4_nc,3bit_nc > $OUT/ab-prefetch-$lay.txt 2>&1
  tail -20 $OUT/ab-prefetch-$lay.txt
done
ALL=k8v4:aos,k8v4:soa,4bit_nc:aos,4bit_nc:soa,k3v4_nc:aos,k3v4_nc:soa,3bit_nc:aos,3bit_nc:soa
NAME=-cuda timeout 150 bash bench/dbg/prof.sh $ALL > $OUT/sum-cuda.txt 2>&1
BACKEND=triton NAME=-triton timeout 150 bash bench/dbg/prof.sh $ALL > $OUT/sum-triton.txt 2>&1
cd $OUT && tar czf s16-call1.tgz *.txt && ls -la
