"""The warp-a-row merge with its rows strided across blocks (row = warp x blocks + block: one sequence's rows, a
balanced decode's long 128-split rows among them, land on different SMs instead of 8 to a block) against the merge as
generated (debug, session 29). Both renderings of each PRESET:LAYOUT compiled to sm_90 cubins on the CPU machine, then
on the GPU, for each B x L and mix (one-long: one sequence of L and B - 1 of L / 32; equal: B of L), by CUDA-graph
replay: the whole balanced call (ABBA rounds, median) and the rows merge alone on the plan the decode wrote, with the
outputs compared bit for bit.
    python bench/dbg/merge_stride.py compile DIR 4bit_nc:aos,...        # CPU machine
    SHAPES=32x32768,128x8192 python bench/dbg/merge_stride.py time DIR 4bit_nc:aos,...   # GPU
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
D = 128


def rendering(item: str, tag: str) -> str:
    src = render_cuda(make_variant(item_spec(item, D), Target.SM90))
    assert src.count(OLD) == 1, "the merge's row mapping moved: update OLD"
    return src if tag == "base" else src.replace(OLD, NEW)


if sys.argv[1] == "compile":
    dest = Path(sys.argv[2])
    dest.mkdir(parents=True, exist_ok=True)
    compile_cubins([(item, tag, rendering(item, tag)) for item in sys.argv[3].split(",") for tag in ("base", "stride")],
                   lambda item, tag: cubin_path(dest, item, D, tag), kernel="tq_decode_merge_rows_bf16")
    sys.exit(0)

import torch  # noqa: E402

from cuda_h200 import paged  # noqa: E402
from graphs import graph_us  # noqa: E402
from tqgen.cuda_launch import kernels_from_image  # noqa: E402

dev = torch.device("cuda")
DIR = Path(sys.argv[2])
SHAPES = [tuple(int(x) for x in s.split("x")) for s in os.environ.get("SHAPES", "32x32768,128x8192").split(",")]
HQ, HK = 32, 8
print("| variant | B x L | mix | most splits a row | call us base | call us strided | ratio | merge us base | strided "
      "| outputs |")
print("|---|---|---|---|---|---|---|---|---|---|")
for item in sys.argv[3].split(","):
    v = make_variant(item_spec(item, D), Target.SM90)
    ks = {t: kernels_from_image(v, cubin_path(DIR, item, D, t).read_bytes(), dev) for t in ("base", "stride")}
    for b, L in SHAPES:
        c, bt, _ = paged(v.spec, b, L, HK, dev, ks["base"])
        q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
        for mix, lens in (("one-long", [L] + [L // 32] * (b - 1)), ("equal", [L] * b)):
            sl = torch.tensor(lens, dtype=torch.int32, device=dev)
            splits = ks["base"].num_splits_for(b, HK, L, dev)
            ws = {t: ks[t].workspace(b, HQ, splits, dev, num_kv_heads=HK) for t in ks}
            outs = {t: torch.empty_like(q) for t in ks}
            t_call = {t: [] for t in ks}
            for rnd in range(4):  # ABBA
                for t in (("base", "stride") if rnd % 2 == 0 else ("stride", "base")):
                    t_call[t].append(graph_us(lambda t=t: ks[t].decode(q, c, bt, sl, num_splits=splits, workspace=ws[t],
                                                                       out=outs[t], check=False), dev))
            for t in ks:
                ks[t].decode(q, c, bt, sl, num_splits=splits, workspace=ws[t], out=outs[t], check=False)
            torch.cuda.synchronize()
            same = "identical" if torch.equal(outs["base"], outs["stride"]) else \
                f"max diff {(outs['base'].float() - outs['stride'].float()).abs().max().item():.1e}"
            most = int(ws["base"]["plan"][:b, 1].max()) if mix != "equal" else splits
            t_merge = {t: graph_us(lambda t=t: ks[t].merge(ws[t], None, outs[t], HQ, splits,
                                                            torch.cuda.current_stream(dev).cuda_stream, "rows",
                                                            plan=ws[t]["plan"], seq_lens=sl, window=0), dev)
                       for t in ks}
            a, s = statistics.median(t_call["base"]), statistics.median(t_call["stride"])
            print(f"| {item} | {b}x{L} | {mix} | {most} | {a:.1f} | {s:.1f} | {s / a:.3f} | {t_merge['base']:.1f} | "
                  f"{t_merge['stride']:.1f} | {same} |", flush=True)
        del c, bt
        torch.cuda.empty_cache()
