#!/bin/bash
# The GPU test files in N parallel pytest shards on the GPU machine (compiles dominate: nvcc and
# Triton per variant, ~10 s per test on a cold machine; the shards share one kernel cache).
#   bash bench/dbg/gpu_tests.sh [N] [TEST FILES...]   # default 6 shards, the four GPU test files
#   K='dequant_rows and portable' bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py   # only the tests -k selects
# Every shard's output goes to gpu-shard-<i>.txt, packed into $OUT/gpu-tests.tgz (the device tool returns a few
# files only); the summary lines and failures are printed last.
set -u
R=$(cd "$(dirname "$0")/../.." && pwd); cd "$R"
N=${1:-6}; shift || true
FILES=${*:-tests/test_cuda_gpu.py tests/test_runtime_gpu.py tests/test_triton_gpu.py tests/test_h200_hf.py}
O=$(mktemp -d)
mkdir -p /tmp/pp && ln -sfn "$R/runtime" /tmp/pp/tqgen_runtime
export PYTHONPATH="$R:/tmp/pp" TQGEN_CACHE_DIR=${TQGEN_CACHE_DIR:-/tmp/tqc} PYTHONUNBUFFERED=1
python -m pytest -q -m gpu --collect-only -p no:cacheprovider ${K:+-k "$K"} $FILES 2>/dev/null | grep '::' > /tmp/gpu_ids.txt
echo "$(wc -l < /tmp/gpu_ids.txt) GPU tests in $N shards"
for i in $(seq 0 $((N - 1))); do
  awk -v n="$N" -v i="$i" 'NR % n == i' /tmp/gpu_ids.txt > "/tmp/gpu_ids_$i.txt"
  python -m pytest -q -m gpu -p no:cacheprovider -rfE --durations=5 $(cat "/tmp/gpu_ids_$i.txt") \
    > "$O/gpu-shard-$i.txt" 2>&1 &
done
wait
for i in $(seq 0 $((N - 1))); do echo "shard $i: $(tail -1 "$O/gpu-shard-$i.txt")"; done
grep -h '^FAILED\|^ERROR' "$O"/gpu-shard-*.txt || echo "no failures"
tar czf "${OUT:-/tmp}/gpu-tests.tgz" -C "$O" .
