#!/usr/bin/env bash
# Session 24's device run 3: the balanced decode's cap on the 4-warp decodes (4bit_nc both layouts, 3bit_nc SoA at
# head_dim 128; 4bit_nc both layouts at 64) under the water-level deal: the mixed suite with 3/4 of a wave and a
# full wave, alternated twice in one run (bench/dbg/cap_bench.py), then bench/dbg/bal_cap.py at head_dim 64 twice.
# OUT must be set; cubins precompiled into bench/dbg/tqc.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=$PWD/bench/dbg/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
for run in 1 2; do for cap in 3q wave; do
  CAP=$cap python bench/dbg/cap_bench.py --suite mixed --backend cuda --preset 4bit_nc --preset 3bit_nc --out $OUT \
    --tag cap-$cap-$run --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -1
done; done
python - <<'PY'
import json, os
O = os.environ["OUT"]
runs = {(c, n): {(r["preset"], r["layout"], r["B"], r["mix"], r["D"]): r for r in json.load(open(f"{O}/cap-{c}-{n}.json"))["rows"]}
        for c in ("3q", "wave") for n in (1, 2)}
print("| variant | B | mix | D | classic us (min) | 3/4 wave us run 1 / 2 | full wave us run 1 / 2 | full / 3/4 (best of 2) |")
print("|---|---|---|---|---|---|---|---|")
for k in runs[("3q", 1)]:
    cl = min(runs[(c, n)][k]["classic_us"] for c in ("3q", "wave") for n in (1, 2))
    q = [runs[("3q", n)][k]["time_us"] for n in (1, 2)]; w = [runs[("wave", n)][k]["time_us"] for n in (1, 2)]
    print(f"| {k[0]} {k[1]} | {k[2]} | {k[3]} | {k[4]} | {cl:.1f} | {q[0]:.1f} / {q[1]:.1f} | {w[0]:.1f} / {w[1]:.1f} | {min(q) / min(w):.3f} |")
PY
for run in 1 2; do D=64 python bench/dbg/bal_cap.py 4bit_nc:soa,4bit_nc:aos 2>&1 | tail -10; done
# SoA k3v4_nc at B=128 L=8K (69.2 %, L2 floor 71.6 % in v29): its split count, by CUDA-graph replay
GRAPH=1 LAYOUT=soa python bench/dbg/splits.py k3v4_nc 2,3,4,5,6 2>&1 | tail -14
