#!/bin/bash
# Session 51, H200 only (exits 3 elsewhere): the H200 re-tune and decode targets (bench/dbg/session43a.sh, BUDGET
# seconds, default 540), then the H200's head_dim-96 split entries (tqgen tune --head-dim 96) if time is left.
. "$(dirname "$0")/device_env.sh"
case "$gpu" in *H200*) ;; *) echo "not an H200: nothing run"; exit 3;; esac
BUDGET=$(( ${BUDGET:-540} - 120 )) bash bench/dbg/session43a.sh
left=$(( ${BUDGET:-540} - (SECONDS - t0) ))
[ $left -gt 40 ] && timeout $left python -m tqgen tune --head-dim 96 --batch 1 --batch 8 --batch 32 --seq-len 4096 --seq-len 8192 --out $OUT/tuned > $OUT/tune96-log.txt 2>&1
echo "tune96 rc $? at $((SECONDS - t0)) s"; tail -2 $OUT/tune96-log.txt
