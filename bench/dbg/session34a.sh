#!/bin/bash
# Session 34's change, to run in the next session with a device (session 34 was lent none): new prompts of different
# lengths or histories in one padded SDPA call (tqgen_runtime.api._pad_groups, _attend_groups).
#  1. the GPU tests it touches: tests/test_runtime_gpu.py (test_padded_prefill_groups_on_gpu, the varlen
#     batches), tests/test_hf_steps.py's GPU case (a tiny gpt-oss's sliding windows and sinks through the C++ kernels),
#     tests/test_h200_hf.py;
#  2. bench/dbg/mixed_fresh_prefill.py: one call a run of equal prompts (PREFILL_PAD_SCORES = 0) against the padded
#     groups, same process, two rounds, B = 8 / 32 prompts of n/2..n tokens, n = 128 / 512 / 2048.
#  3. the full suite's decode at head_dim 64 (its GQA 1 / 4 / 8 shapes are new in session 34), C++ by CUDA graph.
# Then: record the table as bench/results/h200-<date>-mixed-fresh-prefill.md and re-read PREFILL_PAD_SCORES (2^25, an
# estimate from session 32's numbers) against it.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
OUT=$OUT timeout 300 bash bench/dbg/gpu_tests.sh 6 tests/test_runtime_gpu.py tests/test_hf_steps.py tests/test_h200_hf.py 2>&1 | tail -12
timeout 240 python bench/dbg/mixed_fresh_prefill.py 2>&1 | tee "$OUT/mixed-fresh-prefill.md"
timeout 420 python -m tqgen bench --suite full --op decode --backend cuda --cuda-graph --head-dim 64 --out "$OUT" \
  --tag h200-full-cuda-decode-graph-d64 2>&1 | tail -5
