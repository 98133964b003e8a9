#!/usr/bin/env bash
# Session 27's device run 2: 3-bit keys' pair lookups by one byte permute (CudaOptions.pair_prmt for 3-bit keys:
# a 256-entry table repeating its 64 pairs, the pipeline in its holes; SoA records copied as slots; 4 warps x 3
# blocks). The five PRMT3 variants of tests/test_cuda_gpu.py against the reference, then same-run option A/Bs by
# CUDA-graph replay (bench/dbg/sweeps.sh: the defaults against w4b3d+pair_prmt=1 at several split counts; D=128 B=32
# L=32K and B=128 L=8K, D=64 Hq 9 Hk 3 B=32 L=32K). OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python - > /tmp/prmt3_ids.txt <<'PY'
import sys; sys.path.insert(0, "tests")
import test_cuda_gpu as t
for v in t.PRMT3: print(f"tests/test_cuda_gpu.py::test_variant_matches_reference[{v.id}]")
PY
for id in $(cat /tmp/prmt3_ids.txt); do python -m pytest -q -m gpu -p no:cacheprovider -rfE "$id" > /tmp/p3_$(echo $id | md5sum | cut -c1-8).txt 2>&1 & done; wait
tail -q -n 3 /tmp/p3_*.txt | grep -v "^$" | tee $OUT/prmt3-tests.txt
P=w4b3d+pair_prmt=1
GRAPH=1 OUT=$OUT bash bench/dbg/sweeps.sh "p3soa|0,4,8,12|soa|default,$P|3bit_nc" "p3aos|0,4,8,12|aos|default,$P|3bit_nc,k3v4_nc" 2>&1 | tail -40
D=64 GRAPH=1 OUT=$OUT bash bench/dbg/sweeps.sh "p3soa64|0,16,20,24|soa|default,$P|3bit_nc" "p3aos64|0,16,20,24|aos|default,$P|3bit_nc,k3v4_nc" 2>&1 | tail -30
