#!/bin/bash
# Session 45 (any H100 / H200): the balanced decode's per-SM ticket. The GPU tests of the balanced decode and the
# CUDA-graph replay, then the ticket A/B (bench/dbg/ticket_ab.py: ticket / no ticket / classic in one run). Ran at
# 6acd7f5a; the ticket was reverted after it (bench/results/h100-2026-12-06-balanced-ticket.md).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
K='balanced or graph' timeout 240 bash bench/dbg/gpu_tests.sh 7 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
timeout 300 python bench/dbg/ticket_ab.py 3bit_nc:soa,4bit_nc:aos,4bit_nc:soa,k8v4:soa,4bit_nc:soa:64 \
  32x32768,128x8192,one-long t,4 2>&1 | tee $OUT/ticket-ab.md | tail -32
