#!/bin/bash
# Session 31, run 7: the prefill's checks read back with its lengths in one transfer: host cost of one eager call
# (bench/dbg/prefill_host.py), and the runtime GPU tests on that code
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
echo "== this tree (one read back)"; timeout 150 python bench/dbg/prefill_host.py
# the previous commit's prefill (aef6fdf: the tables, the store's slots and the lengths read back one by one) in a second
# tree; tmp_prev/ of the working copy, not committed: git show aef6fdf:runtime/api.py > tmp_prev/api.py, and
# tqgen/reference.py
rm -rf /tmp/prev && mkdir /tmp/prev && cp -r tqgen runtime pyproject.toml bench /tmp/prev/ && cp tmp_prev/api.py /tmp/prev/runtime/api.py \
  && cp tmp_prev/reference.py /tmp/prev/tqgen/reference.py && mkdir -p /tmp/ppp && ln -sfn /tmp/prev/runtime /tmp/ppp/tqgen_runtime
echo "== aef6fdf (three reads)"; (cd /tmp/prev && PYTHONPATH=/tmp/prev:/tmp/ppp timeout 150 python bench/dbg/prefill_host.py)
OUT=$OUT timeout 200 bash bench/dbg/gpu_tests.sh 8 tests/test_runtime_gpu.py 2>&1 | tail -10
