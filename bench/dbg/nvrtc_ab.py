"""NVRTC-built vs nvcc-built C++ kernels on the GPU, same run (session 29): each default sm90 variant compiled both ways
(tqgen.compile_cpp.compile_cuda, tqgen.nvrtc.compile_cuda_nvrtc) from the same rendering, loaded side by side
(cuda_launch.kernels_from_image), its decode timed by CUDA-graph replay over page sets L2 cannot hold (tuning._graph_us,
ABBA rounds, the tuned split count) at each shape, the outputs of one call compared bit for bit, registers and spills of
both builds printed.
    python bench/dbg/nvrtc_ab.py 32x32768,128x8192 [64:32x32768]   # head_dim 128 shapes, then head_dim-64 ones
(D=128: Hq 32, Hk 8; D=64: Hq 9, Hk 3.)"""
import statistics
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from cubins import item_spec  # noqa: E402
from tqgen import nvrtc, tuning  # noqa: E402
from tqgen import reference as ref  # noqa: E402
from tqgen.compile_cpp import compile_cuda  # noqa: E402
from tqgen.cuda_launch import kernels_from_image  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import make_variant, render_cuda  # noqa: E402

dev = torch.device("cuda")
shapes = {128: [tuple(map(int, s.split("x"))) for s in sys.argv[1].split(",")], 64: []}
if len(sys.argv) > 2:
    shapes[64] = [tuple(map(int, s.split("x"))) for s in sys.argv[2].split(":", 1)[1].split(",")]
print(f"NVRTC {nvrtc.Nvrtc.get().version} at {nvrtc.find_nvrtc()}", flush=True)
print("| variant | B x L | splits | nvcc us | NVRTC us | NVRTC / nvcc | outputs | regs nvcc / NVRTC (decode) "
      "| spills |")
print("|---|---|---|---|---|---|---|---|---|")
ratios = []
for d in (128, 64):
    hq, hk = (32, 8) if d == 128 else (9, 3)
    for item in [f"{p}:{lay}" for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc") for lay in ("aos", "soa")]:
        if not shapes[d]:
            continue
        v = make_variant(item_spec(item, d), Target.SM90)
        with tempfile.TemporaryDirectory() as td:
            src = Path(td) / "kernel.cu"
            src.write_text(render_cuda(v))
            builds = {"nvcc": compile_cuda(src, "sm90", Path(td) / "a"),
                      "nvrtc": nvrtc.compile_cuda_nvrtc(src, "sm90", Path(td) / "b")}
            bad = [k for k, r in builds.items() if not r.ok or "tq_decode_split_bf16" not in r.kernels]
            if bad:
                for k in bad:
                    print(f"{item} D{d}: the {k} build failed or has no decode report:\n{builds[k].log[-2500:]}")
                continue
            kerns = {k: kernels_from_image(v, r.output.read_bytes(), dev) for k, r in builds.items()}
        regs = " / ".join(str(builds[k].kernels["tq_decode_split_bf16"]["registers"]) for k in ("nvcc", "nvrtc"))
        spills = " / ".join(str(builds[k].spills) for k in ("nvcc", "nvrtc"))
        for b, L in shapes[d]:
            per = L // 16
            sets = 2  # two disjoint page sets of >= 0.2 GB each: L2 (50 MB) never holds the next call's
            cache = ref.allocate(v.spec, b * per * sets, hk, dev)
            tuning._fill(kerns["nvcc"], cache, hk, d, dev)
            perm = torch.randperm(b * per * sets, device=dev).to(torch.int32)
            tables = list(perm.view(sets, b, per))
            q = torch.randn(b, hq, d, device=dev, dtype=torch.bfloat16)
            sl = torch.full((b,), L, dtype=torch.int32, device=dev)
            splits = kerns["nvcc"].num_splits_for(b, hk, L, dev)
            t = {"nvcc": [], "nvrtc": []}
            for rnd in range(4):
                for k in (("nvcc", "nvrtc") if rnd % 2 == 0 else ("nvrtc", "nvcc")):
                    t[k].append(tuning._graph_us(kerns[k], q, cache, tables, sl, splits, dev))
            outs = {k: kerns[k].decode(q, cache, tables[0], sl, num_splits=splits) for k in kerns}
            same = "identical" if torch.equal(outs["nvcc"], outs["nvrtc"]) else \
                f"max diff {(outs['nvcc'].float() - outs['nvrtc'].float()).abs().max().item():.1e}"
            a, c = statistics.median(t["nvcc"]), statistics.median(t["nvrtc"])
            ratios.append(c / a)
            print(f"| {item} D{d} | {b}x{L} | {splits} | {a:.1f} | {c:.1f} | {c / a:.3f} | {same} | {regs} "
                  f"| {spills} |", flush=True)
            del cache, tables, perm
            torch.cuda.empty_cache()
print(f"\nNVRTC / nvcc time: median {statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f} "
      f"over {len(ratios)} rows")
