"""Where does a decode call's fixed latency go? (debug, session 28.) Patched renderings of the classic decode
(`tq_decode_split_*`), each timed by CUDA-graph replay over page sets that L2 cannot hold together (as
`tqgen.tuning._graph_us`), the whole call (decode + merge) and the decode alone (the merge not launched):
  base      the kernel as generated
  exit0     returns at entry (the grid's launch and its blocks' start only)
  prologue  returns after the query prologue (rotation, fp16 scales, pair table; no tile, no partial rows)
  early     the sequence's length, its tile range and the first block-table window loaded before the prologue
            (those two dependent global loads overlapping the query's: no gain, session 28)
  new       the working tree's rendering (base: cubins compiled from another tree into the same DIR)
  merge, merge2, fill, rows   (time mode only: cubins of those names copied into DIR) later trees' renderings
  noq / norot / nopair / noall   timing only (wrong values): the whole kernel without the query's global load, its
            rotation, the pair table's fill, or all three; pro-min: "prologue" without all three
ROUNDS=n: each patch timed n times, in turn, the order reversed every other round (best of the n).
and the merge alone. Patches are string replacements of the rendered source; each asserts its anchor once.

    python bench/dbg/fixed_cost.py compile DIR PRESET:LAYOUT,...          # cubins (local nvcc)
    python bench/dbg/fixed_cost.py time DIR PRESET:LAYOUT,... [BxL,...]   # on the GPU
D=64 in the environment: head_dim 64, Hq 9, Hk 3."""
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tqgen.ir import Target  # noqa: E402
from tqgen.layout import derive_layout  # noqa: E402
from tqgen.lower_cuda import make_variant, render_cuda  # noqa: E402
from cubins import compile_cubins, cubin_path, item_spec  # noqa: E402

D = int(os.environ.get("D", "128"))
HQ, HK = (32, 8) if D == 128 else (9, 3)
PATCHES = tuple(os.environ.get("PATCHES", "base,exit0,prologue,early").split(","))
ROUNDS = int(os.environ.get("ROUNDS", "1"))

ENTRY = "  const int G = hq / hk, QH = (G + 7) / 8;\n"
SPLIT = "  const int split = TQ_HEAD_GROUPS ? bx : bx * TQ_DEC_WARPS + warp;\n  if (split >= n_split) return;\n"
RANGE = ("  const int len = seq_lens[b];\n"
         "  const int start = (window > 0 && len > window) ? len - window : 0;\n"
         "  const int tile_lo = start / 16, tile_hi = (len + 15) / 16;\n"
         "  const int per = (tile_hi - tile_lo + n_split - 1) / n_split;\n"
         "  const int t_begin = tile_lo + split * per;\n"
         "  const int t_end = min(tile_hi, t_begin + per);\n"
         "  const int* bt = block_table + (long long)b * bt_stride;\n")
NQ = "  const int nq = min(8, G - q0);\n"
PARTS = {  # the prologue's parts, each left out by one replacement
    "noq": ("      float x = tq_t2f<BF16>(query[((long long)b * hq + (long long)qh * G + q0 + qrow) * D + d]);\n",
            "      float x = (float)(d - 3 * qrow) + (float)(qh + hq);  // no query load\n"),
    "norot": ("  for (int hstep = 1; hstep < D; hstep <<= 1) {\n", "  for (int hstep = D; hstep < D; hstep <<= 1) {\n"),
    "nopair": ("  for (int v = threadIdx.x; v < PAIRS; v += blockDim.x) {\n", "  for (int v = threadIdx.x; v < 0; v += blockDim.x) {\n"),
}
WIN_START = "#if TQ_TILE_IN_BLOCK\n  // block ids, 32 at a time on the lanes"
WIN_END = "    return (long long)TQ_SHFL(bw_cur, bi - bw_base);\n  };\n#endif\n"


def timing_only(name: str) -> bool:
    """A patch whose values are wrong by construction (it leaves work out): timed, not compared with base."""
    return name in ("exit0", "prologue", "pro-min") or name in PARTS or name == "noall"


def patched(src: str, name: str) -> str:
    def rep(s, old, new):
        assert s.count(old) == 1, (name, old[:60], s.count(old))
        return s.replace(old, new)
    if name in ("base", "new"):  # new: the working tree's rendering, unpatched (base: compiled from the tree before)
        return src
    if name == "exit0":
        return rep(src, ENTRY, "  if (hq > 0) return;  // (always: the compiler cannot know)\n" + ENTRY)
    if name == "prologue":
        return rep(src, SPLIT, "  if (hq > 0) return;\n" + SPLIT)
    if name in PARTS or name == "pro-min" or name.startswith("no"):
        # timing only (wrong values): parts of the prologue left out, of the whole kernel or of "prologue"
        parts = PARTS if name in ("pro-min", "noall") else (name,)
        s = src if name.startswith("no") else patched(src, "prologue")
        for part in parts:
            old, new = PARTS[part]
            if s.count(old) == 1:  # (no pair table: fp8 keys)
                s = s.replace(old, new)
        return s
    assert name == "early", name
    s = rep(src, SPLIT + RANGE, "  if (split >= n_split) return;\n")
    i = s.index(WIN_START)
    j = s.index(WIN_END, i) + len(WIN_END)
    window = s[i:j]
    s = s[:i] + s[j:]
    early = ("  // (early) the split's tile range and its first block-table window, before the prologue\n"
             "  const int split = TQ_HEAD_GROUPS ? bx : bx * TQ_DEC_WARPS + warp;\n" + RANGE + window)
    return rep(s, NQ, NQ + early)


def spec_of(item):
    return item_spec(item, D)


def cubin(dirpath: Path, item: str, tag: str) -> Path:
    return cubin_path(dirpath, item, D, tag)


def compile_all(dirpath: Path, items):
    dirpath.mkdir(parents=True, exist_ok=True)
    jobs = [(item, n, patched(render_cuda(make_variant(spec_of(item), Target.SM90)), n)) for item in items for n in PATCHES]
    compile_cubins(jobs, lambda item, tag: cubin(dirpath, item, tag), 8, kernel="tq_decode_split_bf16")


def main():
    mode, dirpath, items = sys.argv[1], Path(sys.argv[2]), sys.argv[3].split(",")
    if mode == "compile":
        return compile_all(dirpath, items)
    import torch
    from cuda_h200 import paged
    from tqgen.cuda_launch import kernels_from_image
    from tqgen.tuning import _graph_us
    dev = torch.device("cuda")
    torch.empty(1, device=dev)
    shapes = [tuple(int(x) for x in s.split("x")) for s in (sys.argv[4] if len(sys.argv) > 4 else "1x4096,32x512").split(",")]
    cols = [f"{n} call / decode" for n in PATCHES]
    print(f"| variant D{D} | B x L | splits | page sets | " + " | ".join(cols) + " | merge alone |")
    print("|---|---|---|---|" + "---|" * (len(cols) + 1))
    for item in items:
        v = make_variant(spec_of(item), Target.SM90)
        ks = {n: kernels_from_image(v, cubin(dirpath, item, n).read_bytes(), dev) for n in PATCHES}
        base = ks[PATCHES[0]]
        for b, L in shapes:
            slot = derive_layout(base.spec).slot_bytes
            set_bytes = b * L * HK * slot
            sets = max(1, min(64, math.ceil((256 << 20) / set_bytes)))
            c, bt, sl = paged(base.spec, b * sets, L, HK, dev, base)
            tables = [bt[i * b:(i + 1) * b] for i in range(sets)]
            sl = sl[:b]
            q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
            splits = base.num_splits_for(b, HK, bt.shape[1] * base.spec.block_size, dev)
            _graph_us(base, q, c, tables, sl, splits, dev, balanced=False)  # warm-up, dropped
            calls, decs = {n: [] for n in PATCHES}, {n: [] for n in PATCHES}
            for rnd in range(ROUNDS):  # the patches in turn, the order reversed every other round; best of the rounds
                for n in (PATCHES if rnd % 2 == 0 else PATCHES[::-1]):
                    k = ks[n]
                    calls[n].append(_graph_us(k, q, c, tables, sl, splits, dev, balanced=False))
                    merge = k.merge
                    k.merge = lambda *a, **kw: None
                    decs[n].append(_graph_us(k, q, c, tables, sl, splits, dev, balanced=False))
                    k.merge = merge
            t = {n: f"{min(calls[n]):.1f} / {min(decs[n]):.1f}" for n in PATCHES}
            ws = base.workspace(b, HQ, splits, dev)
            out = torch.empty_like(q)
            base.decode(q, c, tables[0], sl, num_splits=splits, workspace=ws, out=out, check=False, balanced=False)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(20):
                    base.merge(ws, None, out, HQ, splits, torch.cuda.current_stream(dev).cuda_stream)
            g.replay()
            torch.cuda.synchronize()
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
            ms = []
            for _ in range(5):
                ev[0].record()
                g.replay()
                ev[1].record()
                ev[1].synchronize()
                ms.append(ev[0].elapsed_time(ev[1]) * 1e3 / 20)
            outs = {}
            for n in PATCHES:
                if not timing_only(n):
                    o = torch.empty_like(q)
                    ks[n].decode(q, c, tables[0], sl, num_splits=splits, workspace=ks[n].workspace(b, HQ, splits, dev),
                                 out=o, check=False, balanced=False)
                    outs[n] = o.float()
            same = "".join(f" ({n} - base: max abs diff {(outs[n] - outs['base']).abs().max().item():.1e})"
                           for n in outs if n != "base" and "base" in outs)
            print(f"| {item} | {b}x{L} | {splits} | {sets} | " + " | ".join(t[n] for n in PATCHES)
                  + f" | {sorted(ms)[2]:.1f}{same} |", flush=True)
            del c, tables
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
