#!/usr/bin/env bash
# Session 23's device run 4: the water-level deal (X_b = ceil(n_b / lam)): the GPU tests of the C++ decode and runtime
# (the kernel's plan against cuda_launch.balanced_blocks), the mixed suite at the shipped cap rule, 3/4 of a wave and
# a full wave (bench/dbg/cap_bench.py), equal lengths classic vs balanced and the four mixes at both caps
# (bench/dbg/bal_cap.py), then the decode targets. OUT must be set; cubins precompiled into bench/dbg/tqc.
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=$PWD/bench/dbg/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT bash bench/dbg/gpu_tests.sh 8 tests/test_cuda_gpu.py tests/test_runtime_gpu.py 2>&1 | tail -12
for cap in rule 3q wave; do
  CAP=${cap#rule} python bench/dbg/cap_bench.py --suite mixed --backend cuda --out $OUT --tag h200-2026-12-03-mixed-lam-$cap --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -1
done
python - <<'PY'
import json, os
caps = ("rule", "3q", "wave")
rows = {c: {(r["preset"], r["layout"], r["B"], r["mix"], r["D"]): r for r in
            json.load(open(f"{os.environ['OUT']}/h200-2026-12-03-mixed-lam-{c}.json"))["rows"]} for c in caps}
print("| variant | B | mix | D | classic us | " + " | ".join(f"{c} us" for c in caps) + " | " + " | ".join(f"x classic {c}" for c in caps) + " |")
print("|---" * (5 + 2 * len(caps)) + "|")
for k, r in rows["rule"].items():
    cl = min(rows[c][k]["classic_us"] for c in caps)
    print(f"| {k[0]} {k[1]} | {k[2]} | {k[3]} | {k[4]} | {cl:.1f} | " + " | ".join(f"{rows[c][k]['time_us']:.1f}" for c in caps)
          + " | " + " | ".join(f"{cl / rows[c][k]['time_us']:.2f}" for c in caps) + " |")
PY
python bench/dbg/bal_cap.py k8v4:soa,4bit_nc:soa,k3v4_nc:soa,3bit_nc:soa,k8v4:aos,4bit_nc:aos,k3v4_nc:aos,3bit_nc:aos 2>&1 | tee $OUT/cap128.md | tail -42
D=64 python bench/dbg/bal_cap.py k8v4:soa,4bit_nc:soa,k3v4_nc:soa,3bit_nc:soa,k8v4:aos,4bit_nc:aos,k3v4_nc:aos,3bit_nc:aos 2>&1 | tee $OUT/cap64.md | tail -42
python -m tqgen bench --suite targets --op decode --backend cuda --out $OUT --tag h200-2026-12-03-targets-v27-graph --cuda-graph --no-plot 2>&1 | grep -v "case/s\]" | tail -2
grep -A12 "^| backend | preset" $OUT/h200-2026-12-03-targets-v27-graph.md | head -11
