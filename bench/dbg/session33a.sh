#!/bin/bash
# Session 33, run 1: the bf16 paged-decode baseline (torch's compiled FlexAttention over a page pool,
# tqgen/baselines.py) checked on the GPU, then issue 6's decode targets with it (C++ and Triton decodes,
# CUDA-graph replay; the baseline eager like SDPA): v43.
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
python -m pytest -q -m gpu -p no:cacheprovider tests/test_baselines.py 2>&1 | tail -3
T=h200-2026-12-04-targets-v43
timeout 420 python -m tqgen bench --suite targets --op decode --backend cuda --backend triton --cuda-graph --no-plot --out $OUT --tag $T 2>&1 | grep -v "case/s\]" | tail -4
grep "paged" $OUT/$T.md | head -3
python - $OUT/$T.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rows = [x for x in r["rows"] if x.get("op") == "decode" and x.get("time_us")]
print("| backend | preset | layout | B | L | Hq/Hk/D | us | % ceil | SDPA us | x SDPA | paged us | x paged |")
for x in rows:
    f = lambda k, s: format(x[k], s) if x.get(k) is not None else "-"
    print(f"| {x['backend']} | {x['preset']} | {x['layout']} | {x['B']} | {x['L']} | {x['Hq']}/{x['Hk']}/{x['D']} | "
          f"{f('time_us','.1f')} | {f('pct_ceiling','.1f')} | {f('sdpa_us','.1f')} | {f('vs_sdpa','.2f')} | "
          f"{f('paged_us','.1f')} | {f('vs_paged','.2f')} |")
PY
