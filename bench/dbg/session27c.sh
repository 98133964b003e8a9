#!/usr/bin/env bash
# Session 27's device run 3: run 2's AoS half again (its AoS kernels did not compile: an unused constant under
# -Werror, fixed): the three AoS PRMT3 variants of tests/test_cuda_gpu.py against the reference, then same-run
# option A/Bs by CUDA-graph replay (bench/dbg/sweeps.sh: the AoS 3-bit defaults, 2 warps x 6-8 blocks, against
# w4b3d+pair_prmt=1, 4 warps x 3 blocks: the same 12 warps an SM at head_dim 128). OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python - > /tmp/prmt3_ids.txt <<'PY'
import sys; sys.path.insert(0, "tests")
import test_cuda_gpu as t
for v in t.PRMT3:
    if v.spec.layout.value == "aos": print(f"tests/test_cuda_gpu.py::test_variant_matches_reference[{v.id}]")
PY
for id in $(cat /tmp/prmt3_ids.txt); do python -m pytest -q -m gpu -p no:cacheprovider -rfE "$id" > /tmp/p3_$(echo $id | md5sum | cut -c1-8).txt 2>&1 & done; wait
for f in /tmp/p3_*.txt; do tail -n 2 $f | grep -v "^$" | cut -c1-200; done | tee $OUT/prmt3-tests-aos.txt
grep -h "Error\|error\|assert" /tmp/p3_*.txt | head -20 | cut -c1-300
P=w4b3d+pair_prmt=1
GRAPH=1 OUT=$OUT bash bench/dbg/sweeps.sh "p3aos|0,8,12|aos|default,$P|3bit_nc,k3v4_nc" 2>&1 | tail -30
D=64 GRAPH=1 OUT=$OUT bash bench/dbg/sweeps.sh "p3aos64|0,16,20,24|aos|default,$P|3bit_nc,k3v4_nc" 2>&1 | tail -20
