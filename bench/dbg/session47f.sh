#!/bin/bash
# Session 47, H200 only (exits 3 elsewhere): the head256 suite on the H200 (C++ and Triton beside bf16 SDPA, CUDA
# graphs), then the H200 re-tune and decode targets (bench/dbg/session43a.sh with what is left of BUDGET). Files under $OUT.
. "$(dirname "$0")/device_env.sh"
case "$gpu" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
timeout 150 python -m tqgen bench --suite head256 --cuda-graph --no-plot --out $OUT --tag h200-$day-head256-graph 2>&1 | tail -2
BUDGET=$(( ${BUDGET:-540} - (SECONDS - t0) )) bash bench/dbg/session43a.sh
