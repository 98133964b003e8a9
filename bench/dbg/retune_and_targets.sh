#!/bin/bash
# After a decode change, on the GPU machine in one call: re-measure the split table, then issue 6's targets
# with it (decode eager and by CUDA graphs, store), then the GPU test suite (NO_TESTS=1 skips it). Everything
# lands in one archive, $OUT/retune-<TAG>.tgz (the device hands back only a few files): tuned/<device>.json,
# tune-d128.txt / tune-d64.txt, h200-<date>-targets-<TAG>-{decode,graph,store}.{md,json}, gpu-tests.txt and the
# shards' logs
#   bash bench/dbg/retune_and_targets.sh TAG        # e.g. v14 -> h200-<date>-targets-v14-*.md
set -u
R=$(cd "$(dirname "$0")/../.." && pwd); cd "$R"
TAG=${1:?a tag such as v14}; O=/tmp/retune-$TAG; rm -rf "$O"; mkdir -p "$O/tuned"
mkdir -p /tmp/pp && ln -sfn "$R/runtime" /tmp/pp/tqgen_runtime
export PYTHONPATH="$R:/tmp/pp" TQGEN_CACHE_DIR=${TQGEN_CACHE_DIR:-/tmp/tqc} PYTHONUNBUFFERED=1
python -m tqgen tune --head-dim 128 --out "$O/tuned" > "$O/tune-d128.txt" 2>&1
python -m tqgen tune --head-dim 64 --out "$O/tuned" > "$O/tune-d64.txt" 2>&1
export TQGEN_TUNING_DIR="$O/tuned"
P=h200-$(date +%Y-%m-%d)-targets-$TAG
python -m tqgen bench --suite targets --op decode --backend cuda --out "$O" --tag "$P-decode" --budget-s 90 --no-plot > /dev/null 2>&1
python -m tqgen bench --suite targets --op decode --backend cuda --out "$O" --tag "$P-graph" --budget-s 90 --cuda-graph --no-plot > /dev/null 2>&1
python -m tqgen bench --suite targets --op store --backend cuda --out "$O" --tag "$P-store" --budget-s 90 --no-plot > /dev/null 2>&1
[ "${NO_TESTS:-0}" = 1 ] || OUT="$O" bash bench/dbg/gpu_tests.sh 6 > "$O/gpu-tests.txt" 2>&1
tar czf "${OUT:-/tmp}/retune-$TAG.tgz" -C "$O" .
for f in "$O"/tune-d*.txt; do tail -n 2 "$f"; done
grep -h "^| cuda" "$O/$P-graph.md" | head -8; [ -f "$O/gpu-tests.txt" ] && tail -n 8 "$O/gpu-tests.txt"
