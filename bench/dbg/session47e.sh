#!/bin/bash
# Session 47: split counts at head_dim 256 on this GPU (`tqgen tune --head-dim 256` into a copy of the package's table
# for it), then the head256 suite's C++ decode with the merged table against the package's (same run), then the
# runtime's head_dim-256 GPU tests (the AoS fp8-key store stays Triton). Files under $OUT.
. "$(dirname "$0")/device_env.sh"
table=$(echo "$gpu" | tr 'A-Z ' 'a-z-')  # tuning.device_slug of the name
mkdir -p $OUT/tuned && cp tqgen/tuned/$table.json $OUT/tuned/ 2>/dev/null
timeout 200 python -m tqgen tune --head-dim 256 --out $OUT/tuned > $OUT/tune-d256-log.txt 2>&1; echo "tune rc $? at $((SECONDS - t0)) s"
grep -c "splits" $OUT/tune-d256-log.txt
for t in tuned table; do
  [ $t = tuned ] && export TQGEN_TUNING_DIR=$OUT/tuned || unset TQGEN_TUNING_DIR
  timeout 100 python -m tqgen bench --suite head256 --op decode --backend cuda --cuda-graph --no-plot --out $OUT \
    --tag $slug-$day-head256-$t-graph 2>&1 | tail -1
done
echo "bench at $((SECONDS - t0)) s"
K='256' timeout 150 bash bench/dbg/gpu_tests.sh 4 tests/test_runtime_gpu.py 2>&1 | tail -6
echo "done at $((SECONDS - t0)) s"
