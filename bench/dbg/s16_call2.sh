#!/bin/bash
# session 16, device call 2 (one-off): the Triton decode's split count vs time at the target shapes
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1; mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
for lay in soa aos; do
  SPLITS=0,2,3,4,5,6,7,11,12,17,22,34,45,64 LAYOUT=$lay timeout 280 python bench/dbg/triton_opts.py 1x16 k8v4,4bit_nc,k3v4_nc,3bit_nc > $OUT/splits-$lay.txt 2>&1
done
grep -h "^| " $OUT/splits-*.txt | sort -u | head -300
