#!/bin/bash
# Session 34's change, to run in the next session with a device (session 34 was lent none): new prompts of different
# lengths or histories in one padded SDPA call (tqgen_runtime.api._pad_groups, _attend_groups).
#  1. the GPU tests it touches: tests/test_runtime_gpu.py (test_padded_prefill_groups_on_gpu, the varlen
#     batches), tests/test_hf_steps.py's GPU case (a tiny gpt-oss's sliding windows and sinks through the C++ kernels),
#     tests/test_h200_hf.py;
#  2. bench/dbg/mixed_fresh_prefill.py: one call a run of equal prompts (PREFILL_PAD_SCORES = 0) against the padded
#     groups, same process, two rounds, B = 8 / 32 prompts of n/2..n tokens, n = 128 / 512 / 2048.
# (the full suite's head_dim-64 decode, new in session 34: session34b.sh, its own device call: both would pass the
# 10-minute limit of one)
# Then: record the table as bench/results/h200-<date>-mixed-fresh-prefill.md and re-read PREFILL_PAD_SCORES (2^25, an
# estimate from session 32's numbers) against it.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
OUT=$OUT timeout 300 bash bench/dbg/gpu_tests.sh 6 tests/test_runtime_gpu.py tests/test_hf_steps.py tests/test_h200_hf.py 2>&1 | tail -12
timeout 240 python bench/dbg/mixed_fresh_prefill.py 2>&1 | tee "$OUT/mixed-fresh-prefill.md"
