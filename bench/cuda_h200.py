"""CUDA C++ vs Triton on the H200: quick correctness per variant, then decode/store timings side by
side with bf16 SDPA decode and the device copy ceiling, all in one run.

    PYTHONPATH=$PWD TQGEN_CACHE_DIR=/tmp/tqc python bench/cuda_h200.py [--quick] [--splits 4,8,16] > out.md
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

from tqgen import reference as ref
from tqgen.bench import GpuHold, hold_us
from tqgen.build import preset_spec_for_target
from tqgen.cuda_launch import load_cuda
from tqgen.ir import PRESETS, Target
from tqgen.layout import derive_layout
from tqgen.testing import DECODE_TOL, Case, compare_store, rel_err
from tqgen.triton_launch import load_triton


def bench(fn, reps=20, warm=3):
    """Median us of ``fn`` on the GPU: events around each call, queued back to back (no sync between reps), each
    call behind a GPU hold longer than the host takes to issue it (tqgen.bench.Timer's ``GpuHold``), so the interval
    is its GPU work even where the host's launches take longer (before the hold, a call shorter on the GPU than on
    the host was timed as its host time); a sync after each call would add the host's launch to every rep."""
    issue = []
    for _ in range(warm):
        t = time.perf_counter()
        fn()
        issue.append(time.perf_counter() - t)
    torch.cuda.synchronize()
    hold, us = GpuHold(torch.device("cuda", torch.cuda.current_device())), hold_us(issue[1:] or issue)
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in ev:
        hold(us)
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    ts = sorted(a.elapsed_time(b) * 1e3 for a, b in ev)
    return ts[len(ts) // 2]


def kernels_from_source(v, src: str, dev, arch: str = "sm90"):
    """The kernels of a C++ source other than ``v``'s rendering (an older template's, a patched one), built as the
    runtime builds (``compile_cuda_any``: nvcc, else NVRTC) and launched with variant ``v``'s options: the debug
    A/B scripts' old arm."""
    import tempfile
    from pathlib import Path

    from tqgen.cuda_launch import kernels_from_image
    from tqgen.nvrtc import compile_cuda_any

    d = Path(tempfile.mkdtemp())
    (d / "k.cu").write_text(src)
    r = compile_cuda_any(d / "k.cu", arch, d)
    assert r.ok, r.log[-2000:]
    return kernels_from_image(v, Path(r.output).read_bytes(), dev)


def wall_us(fn, reps=20, warm=3):
    """Wall-clock us a call of ``fn``, back to back with one sync at the end: the host's work and the GPU's together,
    what an eager caller waits for (``bench`` times the GPU's alone)."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps * 1e6


def target_shapes(head_dim: int):
    """The debug sweeps' decode shapes: (Hq, Hk, [(B, L), ...]) of the issue-6 targets at head_dim 128,
    the SmolLM2 shape (Hq 9, Hk 3, B=32 L=32K) at 64, Gemma's (Hq 16, Hk 8, B=32 L=8K / 32K) at 256; SHAPES=BxL,... replaces the
    (B, L) list (e.g. SHAPES=1x32768,1x131072)."""
    hq, hk, shapes = {128: (32, 8, ((32, 32768), (128, 8192))), 256: (16, 8, ((32, 8192), (32, 32768)))}.get(
        head_dim, (9, 3, ((32, 32768),)))
    if os.environ.get("SHAPES"):
        shapes = tuple(tuple(int(x) for x in s.split("x")) for s in os.environ["SHAPES"].split(","))
    return hq, hk, shapes


def split_rows(label, kern, q, cache, bt, sl, hk, nbytes, ceil, err):
    """Debug-sweep table rows of one decode kernel on one shape: each split count of $SPLITS (comma list, 0 =
    the launcher's own choice; default 0) timed by ``bench`` (eager launches back to back), or with GRAPH=1 in
    the environment by CUDA-graph replay as ``tqgen tune`` and ``tqgen bench --cuda-graph`` time it
    (tqgen.tuning._graph_us), with % of the copy ceiling and ``err``. The first count is timed once more
    before its row and that timing dropped: session 13's sweeps read the first row of a shape 12-17 % slow
    (h200-2026-12-02-sweep-aos-k8v4-session13.md)."""
    from tqgen.tuning import _graph_us
    b, hq = q.shape[0], q.shape[1]

    def time_it(sp):
        if os.environ.get("GRAPH") == "1":
            return _graph_us(kern, q, cache, [bt], sl, sp, q.device)
        ws = kern.workspace(b, hq, sp, q.device)
        out = torch.empty_like(q)
        return bench(lambda: kern.decode(q, cache, bt, sl, num_splits=sp, workspace=ws, out=out, check=False))

    rows = []
    counts = [int(x) or kern.num_splits_for(b, hk, bt.shape[1] * kern.spec.block_size, q.device)
              for x in os.environ.get("SPLITS", "0").split(",")]
    time_it(counts[0])  # warm-up, dropped
    for sp in counts:
        t = time_it(sp)
        rows.append(f"| {label} | {sp} | {t:.0f} | {100 * nbytes / (t * 1e-6) / ceil:.1f} | {err:.1e} |")
        print(rows[-1], flush=True, file=sys.stderr)
    return rows


def copy_ceiling():
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    t = bench(lambda: y.copy_(x), reps=10)
    return 2 * x.numel() / (t * 1e-6)


def paged(spec, b, L, hk, dev, kern):
    bs = spec.block_size
    nb = b * math.ceil(L / bs)
    cache = ref.allocate(spec, nb + 1, hk, dev)
    perm = torch.randperm(nb, device=dev).to(torch.int32)
    bt = perm.view(b, -1)
    # fill with real packed data: store random K/V through the kernel in chunks
    n = nb * bs
    slots = torch.arange(n, device=dev, dtype=torch.int64)
    for s in range(0, n, 1 << 20):
        m = min(1 << 20, n - s)
        k = torch.randn(m, hk, spec.head_dim, device=dev, dtype=torch.bfloat16)
        v = torch.randn(m, hk, spec.head_dim, device=dev, dtype=torch.bfloat16)
        kern.store(k, v, cache, slots[s:s + m], check=False)
    return cache, bt, torch.full((b,), L, dtype=torch.int32, device=dev)


def option_sweep(dev, ceil) -> None:
    """Decode B=32 L=32K per compile option (warps per block × min resident blocks), 4bit_nc + k8v4 SoA."""
    import dataclasses
    from tqgen.cuda_launch import load_variant
    from tqgen.lower_cuda import CUDA_OPTIONS, make_variant
    b, L, hq, hk = 32, 32768, 32, 8
    q = torch.randn(b, hq, 128, device=dev, dtype=torch.bfloat16)
    print("\n## decode option sweep (B=32, L=32K; best split count per option)\n")
    print("| preset | layout | decode_warps | min_blocks | stages | q_in_smem | µs | % ceiling | splits |")
    print("|---|---|---|---|---|---|---|---|---|")
    for preset, layout in (("4bit_nc", "soa"), ("k8v4", "soa"), ("k3v4_nc", "soa"), ("4bit_nc", "aos")):
        spec = preset_spec_for_target(preset, Target.SM90, layout=layout)
        base = load_cuda(spec, "sm90")
        cache, bt, sl = paged(spec, b, L, hk, dev, base)
        nbytes = b * L * hk * derive_layout(spec).slot_bytes
        for w, mb, st, qsm in [(2, 6, 4, True), (2, 8, 3, True), (2, 8, 3, False), (2, 8, 0, True), (4, 4, 3, True), (2, 7, 3, True)]:
            if True:
                opts = dataclasses.replace(CUDA_OPTIONS[Target.SM90], decode_warps=w, decode_min_blocks=mb, stages=st,
                                           q_in_smem=qsm)
                try:
                    kern = load_variant(make_variant(spec, Target.SM90, options=opts))
                except Exception as e:
                    print(f"| {preset} | {layout} | {w} | {mb} | {st} | {qsm} | build failed: {str(e)[:80]} | | |")
                    continue
                best = None
                for s in (8, 16, 32):
                    ws = kern.workspace(b, hq, s, dev)
                    try:
                        t = bench(lambda: kern.decode(q, cache, bt, sl, num_splits=s, workspace=ws, check=False))
                    except RuntimeError as e:
                        print(f"| {preset} | {layout} | {w} | {mb} | {st} | {qsm} | launch failed: {str(e)[:80]} | | {s} |")
                        break
                    if best is None or t < best[0]:
                        best = (t, s)
                if best is None:
                    continue
                print(f"| {preset} | {layout} | {w} | {mb} | {st} | {qsm} | {best[0]:.0f} | {100 * nbytes / (best[0] * 1e-6) / ceil:.1f} | {best[1]} |")
                sys.stdout.flush()
        del cache


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--splits", default="")
    ap.add_argument("--shapes", default="32x32768,128x8192,1x4096")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--opt-sweep", action="store_true")
    ap.add_argument("--no-store", action="store_true")
    a = ap.parse_args()
    dev = torch.device("cuda")
    print(f"# CUDA C++ vs Triton — {torch.cuda.get_device_name()} — torch {torch.__version__}\n")
    print(f"command: `{' '.join(sys.argv)}`\n")
    # ---------------------------------------------------------------- correctness
    print("## correctness (store vs reference bytes, decode vs reference and vs triton)\n")
    print("| variant | store | decode err (sinks+window) | vs triton | dequant |")
    print("|---|---|---|---|---|")
    specs = []
    for preset in PRESETS:
        for layout in ("aos", "soa"):
            for tgt in ("sm90", "sm80"):
                specs.append((preset_spec_for_target(preset, Target(tgt), layout=layout), tgt))
    kinds = ["generic", "portable"]
    if a.no_check:
        specs = []
    fails = 0
    for spec, tgt in specs:
        for kind in kinds:
            if kind == "portable" and tgt == "sm80":
                continue
            t0 = time.time()
            try:
                kern = load_cuda(spec, tgt, kind)
                tri = load_triton(spec, "sm90")
                lens = [4099, 17, 1000, 1] if kind == "generic" else [600, 17]
                case = Case(spec, lens, 8, 4, seed=1).build(dev)
                got = ref.allocate(spec, case["num_blocks"], 8, dev)
                want = ref.allocate(spec, case["num_blocks"], 8, dev)
                kern.store(case["key"], case["value"], got, case["slot_mapping"])
                ref.store(spec, case["key"], case["value"], want, case["slot_mapping"])
                d = compare_store(spec, got, want, case["key"], case["slot_mapping"])
                errs, terrs = [], []
                for sinks, win in ((None, None), (case["sinks"], 300)):
                    out = kern.decode(case["query"], want, case["block_table"], case["seq_lens"], sinks=sinks,
                                      sliding_window=win)
                    exp = ref.decode(spec, case["query"], want, case["block_table"], case["seq_lens"], sinks=sinks,
                                     sliding_window=win)
                    tout = tri.decode(case["query"], want, case["block_table"], case["seq_lens"], sinks=sinks,
                                      sliding_window=win)
                    errs.append(rel_err(out, exp))
                    terrs.append(rel_err(out, tout))
                k, v = kern.dequant(want, case["block_table"], case["seq_lens"], dtype=torch.float32)
                ek, ev = ref.dequant(spec, want, case["block_table"], case["seq_lens"])
                dq = max(rel_err(k, ek), rel_err(v, ev))
                ok = d.ok and max(errs) <= DECODE_TOL[torch.bfloat16] and dq < 1e-5
                fails += not ok
                print(f"| {kern.variant.id} | {'OK' if d.ok else 'FAIL'} {d.summary()[:60]} | "
                      f"{max(errs):.2e} {'OK' if max(errs) <= DECODE_TOL[torch.bfloat16] else 'FAIL'} | "
                      f"{max(terrs):.2e} | {dq:.1e} | {time.time() - t0:.1f}s")
            except Exception as e:  # report and go on: one broken variant must not hide the others
                fails += 1
                print(f"| {spec.token} {tgt} {kind} | ERROR {type(e).__name__}: {str(e)[:300]} | | | |")
            sys.stdout.flush()
            if a.quick and kind == "generic" and tgt == "sm90":
                pass
    print(f"\ncorrectness failures: {fails}\n")
    # ---------------------------------------------------------------- timing
    ceil = copy_ceiling()
    print(f"copy ceiling: {ceil / 1e12:.2f} TB/s\n")
    hq, hk, dd = 32, 8, 128
    print("## decode (µs; % of copy ceiling in packed bytes; × bf16 SDPA)\n")
    print("| preset | layout | B | L | SDPA µs | triton µs | triton % | triton × | cuda µs | cuda % | cuda × | cuda splits | cuda graph µs | graph % | graph × |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    shapes = [tuple(int(x) for x in s.split("x")) for s in a.shapes.split(",") if s]
    sweep = [int(x) for x in a.splits.split(",") if x]
    for b, L in shapes:
        q = torch.randn(b, hq, dd, device=dev, dtype=torch.bfloat16)
        kk = torch.randn(b, hk, L, dd, device=dev, dtype=torch.bfloat16)
        vv = torch.randn(b, hk, L, dd, device=dev, dtype=torch.bfloat16)
        t_sdpa = bench(lambda: F.scaled_dot_product_attention(q[:, :, None], kk, vv, enable_gqa=True))
        del kk, vv
        for preset in PRESETS:
            for layout in ("aos", "soa"):
                spec = preset_spec_for_target(preset, Target.SM90, layout=layout)
                kern = load_cuda(spec, "sm90")
                tri = load_triton(spec, "sm90")
                cache, bt, sl = paged(spec, b, L, hk, dev, kern)
                nbytes = b * L * hk * derive_layout(spec).slot_bytes
                t_tri = bench(lambda: tri.decode(q, cache, bt, sl, check=False))
                best = None
                for s in (sweep or [None]):
                    splits = s or kern.num_splits_for(b, hk, L, dev)
                    ws = kern.workspace(b, hq, splits, dev)
                    t = bench(lambda: kern.decode(q, cache, bt, sl, num_splits=splits, workspace=ws, check=False))
                    if best is None or t < best[0]:
                        best = (t, splits)
                t_cu, sp = best
                ws = kern.workspace(b, hq, sp, dev)
                out = torch.empty_like(q)
                kern.decode(q, cache, bt, sl, num_splits=sp, workspace=ws, out=out, check=False)
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    kern.decode(q, cache, bt, sl, num_splits=sp, workspace=ws, out=out, check=False)
                t_graph = bench(graph.replay)
                print(f"| {preset} | {layout} | {b} | {L} | {t_sdpa:.0f} | {t_tri:.0f} | "
                      f"{100 * nbytes / (t_tri * 1e-6) / ceil:.1f} | {t_sdpa / t_tri:.2f} | {t_cu:.0f} | "
                      f"{100 * nbytes / (t_cu * 1e-6) / ceil:.1f} | {t_sdpa / t_cu:.2f} | {sp} | {t_graph:.0f} | "
                      f"{100 * nbytes / (t_graph * 1e-6) / ceil:.1f} | {t_sdpa / t_graph:.2f} |")
                sys.stdout.flush()
                del cache
    if a.opt_sweep:
        option_sweep(dev, ceil)
    if a.no_store:
        return
    print("\n## store (N tokens × 8 heads, bf16 in; % of copy ceiling in bytes read + written)\n")
    print("| preset | layout | N | triton µs | triton % | cuda µs | cuda % |")
    print("|---|---|---|---|---|---|---|")
    n = 65536 * 4
    for preset in PRESETS:
        for layout in ("aos", "soa"):
            spec = preset_spec_for_target(preset, Target.SM90, layout=layout)
            kern, tri = load_cuda(spec, "sm90"), load_triton(spec, "sm90")
            cache = ref.allocate(spec, n // spec.block_size, hk, dev)
            k = torch.randn(n, hk, dd, device=dev, dtype=torch.bfloat16)
            v = torch.randn_like(k)
            slots = torch.randperm(n, device=dev).to(torch.int32)
            nbytes = 2 * k.numel() * 2 + n * hk * derive_layout(spec).slot_bytes
            t_tri = bench(lambda: tri.store(k, v, cache, slots, check=False))
            t_cu = bench(lambda: kern.store(k, v, cache, slots, check=False))
            print(f"| {preset} | {layout} | {n} | {t_tri:.0f} | {100 * nbytes / (t_tri * 1e-6) / ceil:.1f} | "
                  f"{t_cu:.0f} | {100 * nbytes / (t_cu * 1e-6) / ceil:.1f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
