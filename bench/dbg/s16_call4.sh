#!/bin/bash
# session 16, device call 4 (one-off): the Triton decode's split count at head_dim 64 (Hq 9, Hk 3, B=32 L=32K)
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1; mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
for lay in soa aos; do
  echo "== $lay"
  D=64 SPLITS=0,11,22,33,44,64 LAYOUT=$lay GRAPH=1 timeout 140 python bench/dbg/triton_opts.py 1x16 k8v4,4bit_nc,k3v4_nc,3bit_nc 2>/dev/null | grep "^| [k34]"
done
