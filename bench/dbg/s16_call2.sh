#!/bin/bash
# session 16, device call 2 (one-off): (1) A/B of the Triton SoA 3-bit key parts (base 69d1070), (2) the Triton
# decode's split count vs time at the target shapes (0 = the launcher's choice: resident programs from the compiled
# kernel, tuning.decode_splits), (3) the GPU tests
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1; mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
timeout 150 bash bench/dbg/ab_trees.sh run 'LAYOUT=soa SPLITS=0,9 python bench/dbg/triton_opts.py 1x16 k3v4_nc,3bit_nc 2>&1 | grep "^| [k3]"' 1
python - <<'PY'
import torch
from tqgen.build import preset_spec_for_target
from tqgen.ir import Target
from tqgen.triton_launch import load_triton
dev = torch.device("cuda")
for lay in ("soa", "aos"):
    for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc"):
        k = load_triton(preset_spec_for_target(p, Target.SM90, layout=lay), "sm90")
        print(lay, p, "resident programs / SM", k.resident_programs(dev, torch.bfloat16, 4, 8),
              "splits B=32 L=32K", k.num_splits_for(32, 8, 32768, dev), "B=128 L=8K", k.num_splits_for(128, 8, 8192, dev),
              "B=1 L=4K", k.num_splits_for(1, 8, 4096, dev), flush=True)
PY
for lay in soa aos; do
  SPLITS=0,3,5,7,9,11,17,34 LAYOUT=$lay timeout 170 python bench/dbg/triton_opts.py 1x16 k8v4,4bit_nc,k3v4_nc,3bit_nc > $OUT/splits-$lay.txt 2>&1
done
grep -h "^| " $OUT/splits-*.txt | sort -u | head -300
# the GPU tests on this code (Triton, runtime, CUDA), 8 shards
timeout 200 bash bench/dbg/gpu_tests.sh 8 tests/test_triton_gpu.py tests/test_runtime_gpu.py tests/test_cuda_gpu.py 2>&1 | tail -15
