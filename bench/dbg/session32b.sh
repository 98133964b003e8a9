#!/bin/bash
# Session 32, run 2: transformers generate through TurboQuantCache, session 31's runtime (tmp_old/, a git archive of
# f491816) vs this session's (shared page tables and step plan, one store / decode call a layer, runtimes loaded once,
# memoised template digests, raw stream handles); the tokens of both compared; then eval/h200_hf.py --quick
set -u
export TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp /tmp/pp_old && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime && ln -sfn $PWD/tmp_old/runtime /tmp/pp_old/tqgen_runtime
for round in 1 2; do
  PYTHONPATH=$PWD/tmp_old:/tmp/pp_old timeout 250 python bench/dbg/hf_host.py --tag "old (round $round)" --profile 0 \
    --tokens-out $OUT/tokens-old.json 2>&1 | grep -v Warning | tee -a $OUT/hf-host-ab.txt
  PYTHONPATH=$PWD:/tmp/pp timeout 250 python bench/dbg/hf_host.py --tag "new (round $round)" --profile $((round == 2)) \
    --tokens-out $OUT/tokens-new.json 2>&1 | grep -v Warning | tee -a $OUT/hf-host-ab.txt
done
python - <<PY | tee -a $OUT/hf-host-ab.txt
import json
a, b = (json.load(open(f"$OUT/tokens-{t}.json")) for t in ("old", "new"))
same = [k for k in a if a[k] == b[k]]
print(f"tokens old == new: {len(same)} of {len(a)} generations", [k for k in a if a[k] != b[k]])
PY
PYTHONPATH=$PWD:/tmp/pp timeout 200 python eval/h200_hf.py --device cuda --quick --out $OUT/h200-2026-12-04-hf-quick-session32.md 2>&1 | grep -v Warning | tail -30
