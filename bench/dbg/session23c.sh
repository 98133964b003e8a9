#!/usr/bin/env bash
# Session 23's device run 3: the mixed suite at 3/4 of a wave and at a full wave for every decode, next to the shipped
# rule (balanced_cap: a wave at 2 warps, 3/4 at 4), same run. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=$PWD/bench/dbg/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
for cap in rule 3q wave rule2; do
  CAP=${cap%2} python bench/dbg/cap_bench.py --suite mixed --backend cuda --out $OUT --tag h200-2026-12-03-mixed-cap-$cap --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -1
done
python - <<'PY'
import json, os
caps = ("rule", "3q", "wave", "rule2")
rows = {c: {(r["preset"], r["layout"], r["B"], r["mix"], r["D"]): r for r in
            json.load(open(f"{os.environ['OUT']}/h200-2026-12-03-mixed-cap-{c}.json"))["rows"]} for c in caps}
print("| variant | B | mix | D | classic us | " + " | ".join(f"{c} us" for c in caps) + " | " + " | ".join(f"x classic {c}" for c in caps) + " |")
print("|---" * (5 + 2 * len(caps)) + "|")
for k, r in rows["rule"].items():
    cl = min(rows[c][k]["classic_us"] for c in caps)
    print(f"| {k[0]} {k[1]} | {k[2]} | {k[3]} | {k[4]} | {cl:.1f} | " + " | ".join(f"{rows[c][k]['time_us']:.1f}" for c in caps)
          + " | " + " | ".join(f"{cl / rows[c][k]['time_us']:.2f}" for c in caps) + " |")
PY
