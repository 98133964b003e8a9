"""How much of a balanced decode on a one-long batch is its merge? (debug, session 26.) The balanced decode of each
PRESET:LAYOUT (the runtime's default entry, its tuned split count, a workspace with the balanced grid's room) on a
one-long batch (one sequence of L, B - 1 of L / 32) and equal lengths, then its merge alone on the plan the decode
wrote, as both kinds ("rows": a warp a row; "groups": a block a row), each by CUDA-graph replay (best of 3 medians).
The plan's most splits a row says how long the longest row's merge loop is.
    B=32 python bench/dbg/bal_merge.py 4bit_nc:aos,4bit_nc:soa
(B, L, D in the environment: 32, 32768, 128; Hq 32, Hk 8; D=64: Hq 9, Hk 3.)"""
import dataclasses
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import tqgen.cuda_launch as cl  # noqa: E402
from cuda_h200 import paged  # noqa: E402
from graphs import graph_us as _graph_us  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import make_variant  # noqa: E402

dev = torch.device("cuda")
B, L, D = int(os.environ.get("B", "32")), int(os.environ.get("L", "32768")), int(os.environ.get("D", "128"))
HQ, HK = (32, 8) if D == 128 else (9, 3)


def graph_us(fn, reps: int = 20) -> float:
    return _graph_us(fn, dev, reps)


print(f"| variant D{D} B={B} L={L} | mix | splits | grid splits | most splits a row | decode us | merge rows us "
      "| merge groups us | kind taken |")
print("|---|---|---|---|---|---|---|---|---|")
for item in sys.argv[1].split(","):
    preset, layout = item.split(":")
    spec = dataclasses.replace(preset_spec_for_target(preset, Target.SM90, layout=layout), head_dim=D)
    kern = cl.load_variant(make_variant(spec, Target.SM90))
    c, bt, _ = paged(kern.spec, B, L, HK, dev, kern)
    q = torch.randn(B, HQ, D, device=dev, dtype=torch.bfloat16)
    out = torch.empty_like(q)
    for mix, lens in (("one-long", [L] + [L // 32] * (B - 1)), ("equal", [L] * B)):
        sl = torch.tensor(lens, dtype=torch.int32, device=dev)
        splits = kern.num_splits_for(B, HK, L, dev)
        ws = kern.workspace(B, HQ, splits, dev, num_kv_heads=HK)
        step = kern.variant.options.split_step()
        width = kern.balanced_grid_width(B, HK, HQ // HK, splits, dev, room=ws["acc"].shape[2])
        dec = graph_us(lambda: kern.decode(q, c, bt, sl, num_splits=splits, workspace=ws, out=out, check=False))
        most = int(ws["plan"][:B, 1].max()) if mix != "equal" else splits
        taken = cl.merge_kind(B * HQ, width * step)
        m = {k: graph_us(lambda k=k: kern.merge(ws, None, out, HQ, splits, torch.cuda.current_stream(dev).cuda_stream,
                                                 k, plan=ws["plan"], seq_lens=sl, window=0))
             for k in ("rows", "groups")}
        print(f"| {item} | {mix} | {splits} | {width * step} | {most} | {dec:.1f} | {m['rows']:.1f} | "
              f"{m['groups']:.1f} | {taken} |", flush=True)
    del c
    torch.cuda.empty_cache()
