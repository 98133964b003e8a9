#!/usr/bin/env bash
# Session 23's device run 7: the decode targets on the landed code (94ade0b: floored count, cap by warps; equal
# lengths take the classic grid). OUT must be set; kernels compiled on the GPU machine.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python - <<'PY'
from concurrent.futures import ThreadPoolExecutor
from tqgen.build import preset_spec_for_target
from tqgen.cuda_launch import build_binary
from tqgen.ir import Target
from tqgen.lower_cuda import make_variant
t = Target.SM90
jobs = [make_variant(preset_spec_for_target(p, t, layout=lay, head_dim=d), t)
        for d in (128, 64) for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc") for lay in ("aos", "soa")]
with ThreadPoolExecutor(16) as ex:
    list(ex.map(lambda v: build_binary(v, "sm90"), jobs))
print(f"compiled {len(jobs)}")
PY
python -m tqgen bench --suite targets --op decode --backend cuda --out $OUT --tag h200-2026-12-03-targets-v27-graph --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -2
grep -A12 "^| backend | preset" $OUT/h200-2026-12-03-targets-v27-graph.md | head -11
