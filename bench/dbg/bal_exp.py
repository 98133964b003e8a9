"""Where does the balanced decode's equal-length cost come from? Patched renderings of the balanced kernel, timed
against the classic one of the same module (same-run A/B by CUDA-graph replay, equal lengths: the plan deals the
classic grid). Patches (cumulative where named so):
  bal     the balanced kernel as generated
  vals    the plan computed, but the block's (b, y, x, n_split) taken from blockIdx after the barrier
  noplan  no tq_bal_block: lane 0 writes the classic block's plan; barrier and shared-memory read-back kept
  nobar   noplan without the barrier (every thread takes blockIdx; the epilogue reads the plan as before)
  nobar+ep  nobar with the classic epilogue (rows from blockIdx): all but the kernel's parameters as classic
  nowrite bal without the plan's write (the first blocks' 16 bytes to ws_plan; the merge then reads stale rows)
  swap    the balanced entry point runs the classic body (the launch's name and arguments, the classic code)

    python bench/dbg/bal_exp.py compile DIR PRESET:LAYOUT,...     # cubins (local nvcc)
    python bench/dbg/bal_exp.py time DIR PRESET:LAYOUT,... [BxL,...]
    python bench/dbg/bal_exp.py ncu DIR PRESET:LAYOUT BxL PATCH    # one classic and one patched launch (under ncu)
D=64 in the environment: head_dim 64, Hq 9, Hk 3.   (debug)"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import make_variant, render_cuda  # noqa: E402
from cubins import compile_cubins, cubin_path, item_spec  # noqa: E402

D = int(os.environ.get("D", "128"))
HQ, HK = (32, 8) if D == 128 else (9, 3)

CALL = ("      const TqBalBlock pb = tq_bal_block(seq_lens, (int)gridDim.z, window, (int)gridDim.x, num_splits / STEP,\n"
        "                                         (int)gridDim.y, bal_cap,\n"
        "                                         ((long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x, lane);\n")
CLASSIC_PB = ("      const TqBalBlock pb{(int)blockIdx.z, (int)blockIdx.y, (int)blockIdx.x, (int)gridDim.x, "
              "(long long)blockIdx.z * gridDim.x};\n")
READBACK = ("    __syncthreads();\n    if (plan_i[3] < 0) return;  // a block past the dealt ones\n"
            "    by = (unsigned int)plan_i[0]; bx = (unsigned int)plan_i[1]; n_split = plan_i[2]; b = plan_i[3];\n")
FROM_IDX = "    b = blockIdx.z; by = blockIdx.y; bx = blockIdx.x; n_split = num_splits;\n"
EPI = "  if constexpr (BAL) {  // the plan's"
WRITE = "        if (pb.b >= 0 && pb.y == 0 && pb.x == 0) {"
ENTRY = "  tq_decode_impl<true, true>(query"


def patched(src: str, name: str) -> str:
    def rep(s, old, new):
        assert s.count(old) == 1, (name, old[:60], s.count(old))
        return s.replace(old, new)
    if name == "bal":
        return src
    if name == "nowrite":  # the plan's global write only
        return rep(src, WRITE, "        if (false) {")
    if name == "swap":
        return rep(src, ENTRY, "  tq_decode_impl<true, false>(query")
    if name == "vals":
        return rep(src, READBACK, READBACK + FROM_IDX)
    s = rep(src, CALL, CLASSIC_PB)
    if name == "noplan":
        return s
    s = rep(s, READBACK, FROM_IDX)
    if name == "nobar":
        return s
    assert name == "nobar+ep", name
    return rep(s, EPI, "  if constexpr (false) {  // the plan's")


PATCHES = tuple(os.environ.get("PATCHES", "bal,vals,noplan,nobar,nobar+ep,nowrite,swap").split(","))


def spec_of(item):
    return item_spec(item, D)


def cubin(dirpath: Path, item: str, tag: str) -> Path:
    return cubin_path(dirpath, item, D, tag)


def compile_all(dirpath: Path, items):
    dirpath.mkdir(parents=True, exist_ok=True)
    jobs = []
    for item in items:
        src = render_cuda(make_variant(spec_of(item), Target.SM90))
        for name in PATCHES:
            jobs.append((item, name, patched(src, name)))

    compile_cubins(jobs, lambda item, tag: cubin(dirpath, item, tag), 8)


def kernels_of(dirpath: Path, item: str, name: str):
    import torch
    from tqgen.cuda_launch import kernels_from_image
    v = make_variant(spec_of(item), Target.SM90)
    return kernels_from_image(v, cubin(dirpath, item, name).read_bytes(), torch.device("cuda", 0))


def main():
    mode, dirpath, items = sys.argv[1], Path(sys.argv[2]), sys.argv[3].split(",")
    if mode == "compile":
        return compile_all(dirpath, items)
    import torch
    from cuda_h200 import paged
    from tqgen.tuning import _graph_us
    dev = torch.device("cuda")
    torch.empty(1, device=dev)
    shapes = [tuple(int(x) for x in s.split("x")) for s in (sys.argv[4] if len(sys.argv) > 4 else "32x32768").split(",")]
    if mode == "ncu":
        (b, L), item = shapes[0], items[0]
        k = kernels_of(dirpath, item, sys.argv[5] if len(sys.argv) > 5 else "bal")
        c, bt, sl = paged(k.spec, b, L, HK, dev, k)
        q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
        splits = k.num_splits_for(b, HK, bt.shape[1] * k.spec.block_size, dev)
        ws = k.workspace(b, HQ, splits, dev)
        for bal in (False, True, False, True):  # launches 3 and 4 profiled (--launch-skip 2)
            k.decode(q, c, bt, sl, num_splits=splits, workspace=ws, check=False, balanced=bal)
        torch.cuda.synchronize()
        print("splits", splits)
        return
    print("| variant | B x L | splits | " + " | ".join(f"{n} us" for n in ("classic",) + PATCHES) + " |")
    print("|---|---|---|" + "---|" * (1 + len(PATCHES)))
    for item in items:
        ks = {n: kernels_of(dirpath, item, n) for n in PATCHES}
        base = ks["bal"]
        for b, L in shapes:
            c, bt, sl = paged(base.spec, b, L, HK, dev, base)
            q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
            splits = base.num_splits_for(b, HK, bt.shape[1] * base.spec.block_size, dev)
            runs = [("classic", base, False)] + [(n, ks[n], True) for n in PATCHES]
            _graph_us(base, q, c, [bt], sl, splits, dev, balanced=False)  # warm-up, dropped
            t = {n: [] for n, _, _ in runs}
            for _ in range(2):
                for n, k, bal in runs:
                    t[n].append(_graph_us(k, q, c, [bt], sl, splits, dev, balanced=bal))
            cells = " | ".join(f"{min(t[n]):.1f} ({max(t[n]):.1f})" for n, _, _ in runs)
            print(f"| {item} D{D} | {b}x{L} | {splits} | {cells} |", flush=True)
            del c
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
