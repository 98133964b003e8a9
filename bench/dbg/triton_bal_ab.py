"""The Triton decode's length-balanced splits against its classic grid, same run, by CUDA-graph replay (session 30):
equal lengths (the deal then is the classic splits: what the deal itself costs) and mixed batches (one-long: one
sequence of L and B - 1 of L/32; ramp: L·i/B), each PRESET:LAYOUT's sm90 Triton variant at the launcher's split count,
calls rotating over page sets L2 cannot hold (tqgen.tuning._graph_us).
    python bench/dbg/triton_bal_ab.py 4bit_nc:soa,... [HEAD_DIM]"""
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_h200 import paged  # noqa: E402
from tqgen.bench import mixed_lengths  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.layout import derive_layout  # noqa: E402
from tqgen.triton_launch import load_triton  # noqa: E402
from tqgen.tuning import _graph_us  # noqa: E402

dev = torch.device("cuda")
items = sys.argv[1].split(",")
D = int(sys.argv[2]) if len(sys.argv) > 2 else 128
HQ, HK = (32, 8) if D == 128 else (9, 3)
SHAPES = [(32, 32768, ""), (128, 8192, ""), (8, 4096, ""), (4, 1024, ""), (32, 32768, "one-long"),
          (32, 32768, "ramp"), (8, 32768, "one-long"), (128, 32768, "one-long")]
print(f"D={D} Hq={HQ} Hk={HK}")
print("| variant | B x L | mix | splits | classic us | balanced us | classic / balanced |")
print("|---|---|---|---|---|---|---|")
for item in items:
    preset, layout = item.split(":")
    spec = preset_spec_for_target(preset, Target.SM90, layout=layout, head_dim=D)
    kern = load_triton(spec, "sm90")
    if not kern.variant.options.balanced_decode:
        print(f"| {item} | - | - | - | - | - | no balanced decode (TritonOptions.balanced_decode) |")
        continue
    for b, L, mix in SHAPES:
        lens = mixed_lengths(mix, b, L)
        sets = max(1, min(16, math.ceil((256 << 20) / (sum(lens) * HK * derive_layout(spec).slot_bytes))))
        c, bt, _ = paged(spec, b * sets, L, HK, dev, kern)
        tables = [bt[i * b:(i + 1) * b] for i in range(sets)]
        sl = torch.tensor(lens, dtype=torch.int32, device=dev)
        q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
        ns = kern.num_splits_for(b, HK, L, dev)
        t = {}
        for bal in (False, True, False, True):  # twice each, interleaved: the better of two
            us = _graph_us(kern, q, c, tables, sl, ns, dev, balanced=bal)
            t[bal] = min(t.get(bal, 1e30), us)
        print(f"| {item} | {b}x{L} | {mix or 'equal'} | {ns} | {t[False]:.1f} | {t[True]:.1f} | {t[False] / t[True]:.2f} |",
              flush=True)
        del c, tables
        torch.cuda.empty_cache()
