#!/bin/bash
# Session 35's change, to run in a session with a device (session 35 was lent none): tqgen bench's GPU hold (each timed
# call queued behind a spin kernel longer than the host takes to issue it; tqgen.bench.Timer).
#  1. tests/test_bench.py's GPU test: a call of 300 us host work + one small kernel timed as its kernel behind the hold,
#     as >= 300 us without it; a GPU-bound call the same either way;
#  2. the full suite's store, C++ and Triton, with the hold (the head_dim-64 rows at 64K tokens read 23-48 % before,
#     h200-2026-12-02-full-store.md, the rotated ones at the host's 64-71 us);
#  3. the same run's head_dim-64 C++ store and eager C++ decode (4bit_nc SoA) with and without the hold
#     (--no-gpu-hold): the old timing next to the new on the same rows;
#  4. the prefill suite for 4bit_nc SoA (C++), with its new batches of mixed lengths: padded groups vs classic.
# Then: record them as bench/results/h200-<date>-full-store-v2.md (+ .json), -hold-ab-*.md and -prefill-v5.md, the
# README's "store at other shapes" and prefill lines, HISTORY; re-read PREFILL_PAD_SCORES against the x classic column.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
timeout 120 python -m pytest -q -m gpu -p no:cacheprovider -rfE tests/test_bench.py 2>&1 | tail -4
B="timeout 200 python -m tqgen bench --out $OUT"
$B --suite full --op store --backend cuda --backend triton --tag h200-full-store-v2 2>&1 | tail -3
for h in "" "--no-gpu-hold"; do
  t=$([ -n "$h" ] && echo nohold || echo hold)
  $B --suite full --op store --backend cuda --head-dim 64 $h --no-plot --tag h200-hold-ab-store-d64-$t 2>&1 | tail -2
  $B --suite full --op decode --backend cuda --head-dim 64 --preset 4bit_nc --layout soa $h --no-plot \
    --tag h200-hold-ab-decode-d64-$t 2>&1 | tail -2
done
$B --suite prefill --backend cuda --preset 4bit_nc --layout soa --no-plot --tag h200-prefill-v5 2>&1 | tail -2
