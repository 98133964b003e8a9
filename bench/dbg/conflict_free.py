"""What the AoS decodes' bank conflicts cost (debug, session 25): the fragment reads of the staged tile (K quarters,
V eighths: aligned 4-byte words, funnel-shifted) hit 4-way bank conflicts by construction (every lane of an
instruction reads the same word of a 16-byte chunk, rows 16-byte aligned: 8 banks for 32 lanes; ncu: 25.5 M of 73.3 M
shared wavefronts of AoS 4bit_nc are conflicts, L1 at 82 %). Patch `cf` points the same reads at lane-consecutive
words of the stage (conflict-free, wrong values: timing only), the instruction stream otherwise unchanged; `asis` is
the variant as generated. Both compiled here, timed on the GPU (balanced entry point, CUDA graphs, best of 2).

    python bench/dbg/conflict_free.py compile DIR 4bit_nc:aos,k3v4_nc:aos,3bit_nc:aos     # CPU, nvcc
    python bench/dbg/conflict_free.py time DIR 4bit_nc:aos,k3v4_nc:aos,3bit_nc:aos [32x32768,128x8192]"""
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import make_variant, render_cuda  # noqa: E402
from cubins import compile_cubins  # noqa: E402

HQ, HK, D = 32, 8, 128
PATCHES = ("asis", "cf")
K_AT = "    ksh[j] = 8 * (b & 3);\n"
V_AT = "    vsh[i] = 8 * (b & 3);\n"


def patched(src: str, name: str) -> str:
    if name == "asis":
        return src
    assert src.count(K_AT) == 1 and src.count(V_AT) == 1
    src = src.replace(K_AT, K_AT + "    for (int x = 0; x < NRK; ++x) { ka[j][x] = TQ_PMAP(lw0_s + 4u * (unsigned int)((lane + 32 * (x + NRK * j)) % LW)); TQ_OPAQUE32(ka[j][x]); }\n")
    return src.replace(V_AT, V_AT + "    for (int x = 0; x < NRV; ++x) { va[i][x] = TQ_PMAP(lw0_s + 4u * (unsigned int)((lane + 32 * (2 * NRK + x + NRV * i)) % LW)); TQ_OPAQUE32(va[i][x]); }\n")


def spec_of(item):
    preset, layout = item.split(":")
    return dataclasses.replace(preset_spec_for_target(preset, Target.SM90, layout=layout), head_dim=D)


def cubin(dirpath: Path, item: str, name: str) -> Path:
    return dirpath / f"{item.replace(':', '-')}-{name}.cubin"


def main():
    mode, dirpath, items = sys.argv[1], Path(sys.argv[2]), sys.argv[3].split(",")
    if mode == "compile":
        dirpath.mkdir(parents=True, exist_ok=True)
        jobs = [(item, n, patched(render_cuda(make_variant(spec_of(item), Target.SM90)), n)) for item in items for n in PATCHES]
        return compile_cubins(jobs, lambda item, tag: cubin(dirpath, item, tag), 6)
    import torch
    from cuda_h200 import paged
    from tqgen.cuda_launch import kernels_from_image
    from tqgen.tuning import _graph_us
    dev = torch.device("cuda")
    shapes = [tuple(int(x) for x in s.split("x")) for s in (sys.argv[4] if len(sys.argv) > 4 else "32x32768,128x8192").split(",")]
    print("| variant | B x L | splits | as generated us | conflict-free reads us (wrong values) | ratio |")
    print("|---|---|---|---|---|---|")
    for item in items:
        v = make_variant(spec_of(item), Target.SM90)
        ks = {n: kernels_from_image(v, cubin(dirpath, item, n).read_bytes(), dev) for n in PATCHES}
        for b, L in shapes:
            c, bt, sl = paged(v.spec, b, L, HK, dev, ks["asis"])
            q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
            s = ks["asis"].num_splits_for(b, HK, bt.shape[1] * v.spec.block_size, dev)
            _graph_us(ks["asis"], q, c, [bt], sl, s, dev, balanced=True)  # warm-up
            t = {n: min(_graph_us(ks[n], q, c, [bt], sl, s, dev, balanced=True) for _ in range(2)) for n in PATCHES}
            print(f"| {item} D{D} | {b}x{L} | {s} | {t['asis']:.1f} | {t['cf']:.1f} | {t['cf'] / t['asis']:.3f} |", flush=True)
            del c
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
