#!/bin/bash
# Session 36, device call 3 of 3: the head_dim-64 C++ store and eager decode (4bit_nc SoA) with and without the GPU hold
# (the old timing beside the new, same run), then the full suite's head_dim-64 C++ decode by graph replay for what
# time is left (session34b.sh's run, under a budget).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
R=/tmp/r36 && rm -rf $R && mkdir -p $R  # the device returns 8 files at most: every table goes into one tarball
trap 'tar czf "$OUT/results.tgz" -C $R .' EXIT
B="timeout 100 python -m tqgen bench --out $R --budget-s 45 --no-plot"
for h in "" "--no-gpu-hold"; do
  t=$([ -n "$h" ] && echo nohold || echo hold)
  $B --suite full --op store --backend cuda --head-dim 64 $h --tag h200-hold-ab-store-d64-$t 2>&1 | tail -1
  $B --suite full --op decode --backend cuda --head-dim 64 --preset 4bit_nc --layout soa $h \
    --tag h200-hold-ab-decode-d64-$t 2>&1 | tail -1
done
timeout ${D64_S:-200} python -m tqgen bench --suite full --op decode --backend cuda --cuda-graph --head-dim 64 \
  --out "$R" --budget-s $(( ${D64_S:-200} - 40 )) --tag h200-full-cuda-decode-graph-d64 2>&1 | tail -3
