#!/usr/bin/env bash
# Session 24's device run 9: same-run A/B of b982293 (before pair_add; .xfer/base from `bench/dbg/ab_trees.sh prepare
# b982293`) and the final tree for SoA k3v4_nc: the mixed suite and the equal-length target shapes (balanced
# entry point, each tree's own split table), CUDA graphs, 2 rounds. OUT must be set.
cat > /tmp/abm.py <<'PY'
import json, subprocess, sys
for suite in ("mixed", "targets"):
    subprocess.run([sys.executable, "-m", "tqgen", "bench", "--suite", suite, "--op", "decode", "--backend", "cuda",
                    "--preset", "k3v4_nc", "--layout", "soa", "--cuda-graph", "--no-plot", "--no-check", "--out",
                    "/tmp/abo", "--tag", suite], capture_output=True)
    for r in json.load(open(f"/tmp/abo/{suite}.json"))["rows"]:
        print(suite, r["B"], r["L"], r["mix"], r["D"], r["splits"], round(r["time_us"], 1),
              r["classic_us"] and round(r["classic_us"], 1))
PY
OUT=$OUT bash bench/dbg/ab_trees.sh run 'python /tmp/abm.py' 2
