"""`tqgen bench` with the balanced decode's cap on long blocks replaced (debug): CAP=3q (3/4 of a wave for every
decode), CAP=wave (a full wave for every decode) or unset (cuda_launch.balanced_cap, the shipped rule), so that the
mixed suite's methodology (L2 rotation/flush, CUDA graphs) measures the rule's alternatives.
Usage: CAP=wave python bench/dbg/cap_bench.py --suite mixed --backend cuda --cuda-graph --no-plot --out DIR --tag T"""
import os
import sys

import tqgen.cuda_launch as cl
from tqgen.cli import main

share = {"3q": 0.75, "wave": 1.0}.get(os.environ.get("CAP", ""))
if share is not None:
    cl.balanced_cap = lambda o, sms, gy: max(1, int(sms * o.decode_min_blocks // max(1, gy) * share))
sys.exit(main(["bench", *sys.argv[1:]]))
