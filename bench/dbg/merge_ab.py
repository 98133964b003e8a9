"""Decode-merge variants against the merge as generated, same run (debug, session 29). Arms (ARMS, the first is the
baseline): ``base`` as generated; ``stride`` the warp-a-row merge with its rows strided across blocks (row = warp x
blocks + block: one sequence's rows, a balanced decode's long 128-split rows among them, on different SMs instead of 8
to a block); ``g4`` / ``g8`` the block-a-row merge launched with 4 / 8 groups of D threads whatever the splits
(cuda_launch.merge_groups forced; ``base`` takes its rule: 8 from 64 splits). (Run 10 of session 29, before the kernel
took its groups from the block's size, timed ``g8`` as a rendering with lower_cuda.MERGE_GROUPS = 8.) Each arm's
rendering of each PRESET:LAYOUT compiled to an sm_90 cubin on the CPU machine; on the GPU, for each B x L and mix
(one-long: one sequence of L and B - 1 of L / 32, from B=2; equal: B of L), by CUDA-graph replay: the whole call
(balanced where the launcher takes it; ABBA rounds, median) and the merge alone (the launcher's kind) on the
workspace the decode wrote, the outputs compared with the baseline's bit for bit.
    ARMS=base,stride python bench/dbg/merge_ab.py compile DIR 4bit_nc:aos,...                  # CPU machine
    ARMS=base,stride SHAPES=32x32768,128x8192 python bench/dbg/merge_ab.py time DIR 4bit_nc:aos,...   # GPU
(D=128: Hq 32, Hk 8.)"""
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from cubins import compile_cubins, cubin_path, item_spec  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import make_variant, render_cuda  # noqa: E402


OLD = "  const long long bh = (long long)blockIdx.x * TQ_MERGE_ROWS + (threadIdx.x >> 5);\n"
NEW = "  const long long bh = (long long)(threadIdx.x >> 5) * gridDim.x + blockIdx.x;\n"
GROUPS = {"g4": 4, "g8": 8}  # arms launching the block-a-row merge with that many groups (cuda_launch.merge_groups)
D = 128
ARMS = os.environ.get("ARMS", "base,stride").split(",")


def rendering(item: str, tag: str) -> str:
    src = render_cuda(make_variant(item_spec(item, D), Target.SM90))
    if tag == "stride":
        assert src.count(OLD) == 1, "the merge's row mapping moved: update OLD"
        return src.replace(OLD, NEW)
    return src


if sys.argv[1] == "compile":
    dest = Path(sys.argv[2])
    dest.mkdir(parents=True, exist_ok=True)
    compile_cubins([(item, tag, rendering(item, tag)) for item in sys.argv[3].split(",") for tag in ARMS],
                   lambda item, tag: cubin_path(dest, item, D, tag), kernel="tq_decode_merge_bf16")
    sys.exit(0)

import torch  # noqa: E402

import tqgen.cuda_launch as cl  # noqa: E402
from cuda_h200 import paged  # noqa: E402
from graphs import graph_us  # noqa: E402

dev = torch.device("cuda")
DIR = Path(sys.argv[2])
SHAPES = [tuple(int(x) for x in s.split("x")) for s in os.environ.get("SHAPES", "32x32768,128x8192").split(",")]
HQ, HK = 32, 8
BASE = ARMS[0]


RULE = cl.merge_groups


def as_arm(t: str, fn):
    """fn() with the launcher's block-a-row merge groups for arm t (cuda_launch.merge_groups forced, else its rule)."""
    cl.merge_groups = (lambda splits, n=GROUPS[t]: n) if t in GROUPS else RULE
    try:
        return fn()
    finally:
        cl.merge_groups = RULE


others = ARMS[1:]
print("| variant | B x L | mix | merge | most splits a row | call us " + " | ".join(ARMS) + " | ratios | merge us "
      + " | ".join(ARMS) + " | outputs |")
print("|---|---|---|---|---|---|" + "---|" * (2 * len(ARMS) + 1))
for item in sys.argv[3].split(","):
    v = make_variant(item_spec(item, D), Target.SM90)
    ks = {t: cl.kernels_from_image(v, cubin_path(DIR, item, D, t).read_bytes(), dev) for t in ARMS}
    for b, L in SHAPES:
        c, bt, _ = paged(v.spec, b, L, HK, dev, ks[BASE])
        q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
        mixes = (("one-long", [L] + [L // 32] * (b - 1)), ("equal", [L] * b)) if b > 1 else (("single", [L]),)
        for mix, lens in mixes:
            sl = torch.tensor(lens, dtype=torch.int32, device=dev)
            splits = ks[BASE].num_splits_for(b, HK, L, dev)
            ws = {t: ks[t].workspace(b, HQ, splits, dev, num_kv_heads=HK) for t in ARMS}
            outs = {t: torch.empty_like(q) for t in ARMS}
            t_call = {t: [] for t in ARMS}
            for rnd in range(4):  # ABBA
                for t in (ARMS if rnd % 2 == 0 else ARMS[::-1]):
                    t_call[t].append(graph_us(lambda t=t: as_arm(t, lambda: ks[t].decode(
                        q, c, bt, sl, num_splits=splits, workspace=ws[t], out=outs[t], check=False)), dev))
            for t in ARMS:
                as_arm(t, lambda t=t: ks[t].decode(q, c, bt, sl, num_splits=splits, workspace=ws[t], out=outs[t],
                                                    check=False))
            torch.cuda.synchronize()
            same = " / ".join("identical" if torch.equal(outs[BASE], outs[t]) else
                              f"max diff {(outs[BASE].float() - outs[t].float()).abs().max().item():.1e}" for t in others)
            balanced = b > 1  # the launcher's default (a workspace with the balanced grid's room)
            width = ks[BASE].balanced_grid_width(b, HK, HQ // HK, splits, dev, room=ws[BASE]["acc"].shape[2])
            step = v.options.split_step()
            kind = cl.merge_kind(b * HQ, width * step) if balanced else cl.merge_kind(b * HQ, splits)
            most = int(ws[BASE]["plan"][:b, 1].max()) if mix == "one-long" else splits
            t_merge = {t: graph_us(lambda t=t: as_arm(t, lambda: ks[t].merge(
                ws[t], None, outs[t], HQ, splits, torch.cuda.current_stream(dev).cuda_stream, kind,
                plan=ws[t]["plan"] if balanced else None, seq_lens=sl, window=0)), dev) for t in ARMS}
            med = {t: statistics.median(t_call[t]) for t in ARMS}
            print(f"| {item} | {b}x{L} | {mix} | {kind} | {most} | " + " | ".join(f"{med[t]:.1f}" for t in ARMS)
                  + " | " + " / ".join(f"{med[t] / med[BASE]:.3f}" for t in others) + " | "
                  + " | ".join(f"{t_merge[t]:.1f}" for t in ARMS) + f" | {same} |", flush=True)
        del c, bt
        torch.cuda.empty_cache()
