#!/bin/bash
# Several sweep3.py runs on the GPU machine (debug): every run's combos compiled first, all runs in parallel
# (BUILD_ONLY=1: nvcc in subprocesses), then each timed in turn, its table printed last. One argument per run:
#   NAME|SPLITS|LAYOUT|COMBOS|PRESETS      e.g.  'aos-k8v4|4,6,8|aos|default,default+lazy_max=1|k8v4'
# Environment passes through to sweep3.py (GRAPH=1 for CUDA-graph timings, D=64 for the SmolLM2 shape, SHAPES=...).
#   GRAPH=1 bash bench/dbg/sweeps.sh 'soa|0,8|soa|default,qreg|3bit_nc' 'aos|0|aos|default,u3|k8v4'
set -u
R=$(cd "$(dirname "$0")/../.." && pwd); cd "$R"
export PYTHONPATH="$R:/tmp/pp" TQGEN_CACHE_DIR=${TQGEN_CACHE_DIR:-/tmp/tqc} PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$R/runtime" /tmp/pp/tqgen_runtime
O=${OUT:-/tmp}; t0=$(date +%s)
[ $# -gt 0 ] || { sed -n 2,6p "$0"; exit 2; }
for r in "$@"; do IFS='|' read -r name sp lay combos presets <<< "$r"
  BUILD_ONLY=1 LAYOUT=$lay timeout 300 python bench/dbg/sweep3.py "$combos" "$presets" > "$O/build-$name.txt" 2>&1 &
done
wait; echo "built in $(( $(date +%s) - t0 )) s"
for r in "$@"; do IFS='|' read -r name sp lay combos presets <<< "$r"
  SPLITS=$sp LAYOUT=$lay timeout 200 python bench/dbg/sweep3.py "$combos" "$presets" > "$O/$name.txt" 2>&1
  echo "$name done at $(( $(date +%s) - t0 )) s"
done
for r in "$@"; do name=${r%%|*}; echo "== $name"; grep -v "^| " "$O/$name.txt" | grep -v "^$" | tail -3
  grep "^| " "$O/$name.txt" | grep -v "^| preset\|---" | sort -u; done
