"""Same-run A/B of the balanced decode's deal (debug, session 23): session 22's cut-and-share deal (X_b = 1 + a
share of the tiles past a cut; rendered from a checkout of that code), the water level (X_b = ceil(n_b / lam), the
plan in a called function: `new`) and the same inlined (`inl`), against the classic grid, at the shipped cap
(cuda_launch.balanced_cap; session 22's kernel took 3/4 of its cap argument: it is passed 4/3 of it).

    python bench/dbg/deal_ab.py compile DIR TAG PRESET:LAYOUT,...   # cubins of the tqgen first on PYTHONPATH:
                                                                    # TAG old (a checkout of ce94f93 with the floor
                                                                    # patch, or of 94ade0b) or new (a checkout with
                                                                    # bench/results/h200-2026-12-03-water-level-deal
                                                                    # .patch applied; writes new and inl)
    python bench/dbg/deal_ab.py time DIR PRESET:LAYOUT,...
D=64 in the environment: head_dim 64, Hq 9, Hk 3."""
import os
import sys
from pathlib import Path

from tqgen.ir import Target
from tqgen.lower_cuda import make_variant, render_cuda
from cubins import compile_cubins, cubin_path, item_spec

D = int(os.environ.get("D", "128"))
HQ, HK = (32, 8) if D == 128 else (9, 3)
NOINLINE = "__device__ __noinline__ TqBalBlock tq_bal_block("  # the CUDA rendering
# the old kernel's cap argument: 4/3 of balanced_cap for a checkout of ce94f93 + floor (it took 3/4 of it; run 6 of
# session 23), 1 for 94ade0b on (it takes the cap as given)
OLD_CAP_SCALE = float(os.environ.get("OLD_CAP_SCALE", str(4 / 3)))
SHAPES = [(32, 32768, "one-long"), (32, 32768, "ramp"), (32, 32768, "half"), (32, 32768, "tail"), (8, 32768, "ramp"),
          (128, 8192, "one-long")]


def lengths(b, L, mix):
    import math
    return {"one-long": [L] + [L // 32] * (b - 1), "ramp": [L * (i + 1) // b for i in range(b)],
            "half": [L // 2] * (b // 2) + [100] * (b - b // 2),
            "tail": [min(L, int(4096 * -math.log(1 - (i + 0.5) / b))) for i in range(b)]}[mix]


def spec_of(item):
    return item_spec(item, D)


def cubin(dirpath: Path, item: str, tag: str) -> Path:
    return cubin_path(dirpath, item, D, tag)


def compile_all(dirpath: Path, tag: str, items):
    dirpath.mkdir(parents=True, exist_ok=True)
    jobs = []
    for item in items:
        src = render_cuda(make_variant(spec_of(item), Target.SM90))
        if tag == "old":
            jobs.append((item, "old", src))
        else:
            assert src.count(NOINLINE) == 1
            jobs += [(item, "new", src), (item, "inl", src.replace(NOINLINE, NOINLINE.replace("noinline", "forceinline")))]

    compile_cubins(jobs, lambda item, tag: cubin(dirpath, item, tag), 4)


def main():
    mode, dirpath = sys.argv[1], Path(sys.argv[2])
    if mode == "compile":
        return compile_all(dirpath, sys.argv[3], sys.argv[4].split(","))
    import torch
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import tqgen.cuda_launch as cl
    from cuda_h200 import paged
    from tqgen.tuning import _graph_us
    dev = torch.device("cuda")
    torch.empty(1, device=dev)
    base_cap, scale = cl.balanced_cap, {"f": 1.0}
    cl.balanced_cap = lambda *a: int(base_cap(*a) * scale["f"])
    tags = ("old", "new", "inl")
    print("| variant | B | mix | classic us | " + " | ".join(f"{t} us" for t in tags) + " | "
          + " | ".join(f"x classic {t}" for t in tags) + " |")
    print("|---|---|---|---|" + "---|" * (2 * len(tags)))
    for item in sys.argv[3].split(","):
        v = make_variant(spec_of(item), Target.SM90)
        ks = {t: cl.kernels_from_image(v, cubin(dirpath, item, t).read_bytes(), dev) for t in tags}
        for b, L, mix in SHAPES:
            k = ks["new"]
            c, bt, _ = paged(k.spec, b, L, HK, dev, k)
            q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
            splits = k.num_splits_for(b, HK, bt.shape[1] * k.spec.block_size, dev)
            sl = torch.tensor(lengths(b, L, mix), dtype=torch.int32, device=dev)
            _graph_us(k, q, c, [bt], sl, splits, dev, balanced=False)  # warm-up
            t = {}
            for _ in range(2):
                t.setdefault("classic", []).append(_graph_us(k, q, c, [bt], sl, splits, dev, balanced=False))
                for tag in tags:
                    scale["f"] = OLD_CAP_SCALE if tag == "old" else 1.0
                    t.setdefault(tag, []).append(_graph_us(ks[tag], q, c, [bt], sl, splits, dev, balanced=True))
            m = {key: min(val) for key, val in t.items()}
            print(f"| {item} D{D} | {b} | {mix} | {m['classic']:.1f} | " + " | ".join(f"{m[x]:.1f}" for x in tags)
                  + " | " + " | ".join(f"{m['classic'] / m[x]:.2f}" for x in tags) + " |", flush=True)
            del c
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
