#!/usr/bin/env bash
# tqgen bench on the H200 (through the device tool, from the repository root): the issue-6 targets suite, then
# the decode-vs-L sweep, then the targets' decode shapes as CUDA-graph replays; each run is bounded by --budget-s
# (no new case starts after it): at most ~8 minutes in all, ~3-4 minutes expected.
#
#   bash bench/run_bench_h200.sh                         # every preset x layout x backend (cuda, triton)
#   bash bench/run_bench_h200.sh --preset 4bit_nc         # extra arguments go to every run
#
# Results: <device>-<date>-targets.{md,json}, <device>-<date>-sweep.{md,json,png} and
# <device>-<date>-targets-graph.{md,json} (decode as CUDA-graph replays) in $OUT (when set) and bench/results/.
# The repository is not installed there: tqgen comes from PYTHONPATH=$PWD and tqgen_runtime from a symlink to
# runtime/. `python -m tqgen.cli` would not see the verbs that register themselves
# (build, eval, bench: they register in tqgen.cli, not in __main__), so tqgen.cli.main is called directly.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
export PYTHONPATH="$PWD:/tmp/pp${PYTHONPATH:+:$PYTHONPATH}" TQGEN_CACHE_DIR="${TQGEN_CACHE_DIR:-/tmp/tqc}"
DEST="${OUT:-bench/results}"
mkdir -p "$DEST" bench/results
tqgen() { python -c 'import sys; from tqgen.cli import main; sys.exit(main(sys.argv[1:]))' "$@"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv 2>/dev/null || true
python -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'

t0=$SECONDS
tqgen bench --suite targets --out "$DEST" --budget-s "${TARGETS_BUDGET_S:-210}" "$@"; rc1=$?
echo "targets suite: rc=$rc1, $((SECONDS - t0)) s"
t1=$SECONDS
tqgen bench --suite sweep --out "$DEST" --budget-s "${SWEEP_BUDGET_S:-150}" "$@"; rc2=$?
echo "sweep suite: rc=$rc2, $((SECONDS - t1)) s; total $((SECONDS - t0)) s"

t2=$SECONDS
# decode of the targets' shapes again as CUDA-graph replays (no host launch overhead: the B=1 latency target)
tqgen bench --suite targets --op decode --cuda-graph --out "$DEST" --budget-s "${GRAPH_BUDGET_S:-80}" --no-plot "$@"; rc3=$?
echo "targets (CUDA graph) suite: rc=$rc3, $((SECONDS - t2)) s; total $((SECONDS - t0)) s"

if [ "$DEST" != "bench/results" ]; then
    cp "$DEST"/*.md "$DEST"/*.json bench/results/ 2>/dev/null
    cp "$DEST"/*.png bench/results/ 2>/dev/null
fi
exit $((rc1 | rc2 | rc3))
