"""SASS of the C++ decode's pipelined tile loop, per 16-token tile (tqgen.sass): a CPU-side check of how
many instructions a kernel change costs or saves before any GPU time is spent on it.

    python bench/dbg/sass_tile.py 3bit_nc soa [key=value ...]   # options as CudaOptions fields
    HEAD_DIM=64 python bench/dbg/sass_tile.py k3v4_nc aos decode_min_blocks=8
    python bench/dbg/sass_tile.py path/to/kernel.cu --head-dim 64  # a rendered source
    python bench/dbg/sass_tile.py --write-snapshot                # every default sm90 decode at D=128 and 64
                                                                  # -> tests/data/sass_tile_sm90.json
    python bench/dbg/sass_tile.py --pipes                         # every default sm90 decode: hot path by pipe

Needs nvcc (compile_cpp.find_nvcc), cuobjdump and nvdisasm (tqgen.sass: $CUOBJDUMP / $NVDISASM_PATH, PATH,
or `pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tqgen import sass  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.compile_cpp import compile_cuda  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import cuda_options, make_variant, render_cuda  # noqa: E402


def profile_source(src: Path, head_dim: int, target: str, out: Path) -> tuple[dict, sass.TileProfile]:
    r = compile_cuda(src, target, out)
    if not r.ok:
        sys.exit(r.log[-3000:])
    return r.kernels.get(sass.DECODE_KERNEL, {}), sass.tile_profile(r.output, head_dim)


def profile_variant(preset: str, layout: str, head_dim: int, target: str, out: Path, options=()):
    t = Target.parse(target, "target")
    spec = preset_spec_for_target(preset, t, layout=layout, head_dim=head_dim)
    o = cuda_options(spec, t).with_changes(options)
    out.mkdir(parents=True, exist_ok=True)
    src = out / "kernel.cu"
    src.write_text(render_cuda(make_variant(spec, t, options=o)))
    return profile_source(src, head_dim, target, out)


def show(label: str, k: dict, p: sass.TileProfile) -> None:
    print(f"{sass.DECODE_KERNEL}: {k.get('registers')} registers, {k.get('spill_stores', 0)} bytes spilled, "
          f"{k.get('smem')} B static smem")
    print(f"{label}: {p.total} instructions, loop {p.loop[0]:#x}-{p.loop[1]:#x} ({p.tiles:g} tiles a trip): "
          f"{p.per_tile:.1f} per tile, {p.hot_per_tile:.1f} without the rare path")
    print("  " + ", ".join(f"{op} {n:.1f}" for op, n in sorted(p.mix.items(), key=lambda x: -x[1])[:18]))
    print("  hot path by issue pipe: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(p.pipes().items(), key=lambda x: -x[1])))


def profile_defaults() -> list[tuple[tuple[str, str, int], sass.TileProfile]]:
    """Every default sm90 decode of the snapshot (presets x layouts x head dims) and its tile profile."""
    cases = [(p, lay, d) for d in sass.SNAPSHOT_HEAD_DIMS for p in sass.SNAPSHOT_PRESETS for lay in sass.SNAPSHOT_LAYOUTS]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        res = list(pool.map(lambda c: profile_variant(*c, "sm90", Path(tmp) / sass.snapshot_key(*c)), cases))
    return [(c, p) for c, (_, p) in zip(cases, res)]


def print_pipes() -> None:
    """The hot path of every default sm90 decode by issue pipe, a markdown table (instructions a 16-token tile)."""
    names = list(sass.PIPES) + ["other"]
    print("| variant | hot | " + " | ".join(names) + " | alu / hot |\n|---|---|" + "---|" * (len(names) + 1))
    for c, p in profile_defaults():
        pipes = p.pipes()
        print(f"| {sass.snapshot_key(*c)} | {p.hot_per_tile:.1f} | " + " | ".join(f"{pipes.get(n, 0.0):.1f}" for n in names)
              + f" | {pipes.get('alu', 0.0) / p.hot_per_tile:.2f} |")


def write_snapshot(path: Path) -> None:
    res = profile_defaults()
    data = {"nvcc": sass.nvcc_version(), "arch": "sm90", "kernel": sass.DECODE_KERNEL,
            "how": "python bench/dbg/sass_tile.py --write-snapshot (tqgen.sass.tile_profile of each default variant)",
            "per_tile": {sass.snapshot_key(*c): p.per_tile for c, p in res},
            "hot_per_tile": {sass.snapshot_key(*c): p.hot_per_tile for c, p in res}}
    path.write_text(json.dumps(data, indent=1) + "\n")
    for c, p in res:
        print(f"{sass.snapshot_key(*c):20s} {p.per_tile:7.1f} {p.hot_per_tile:7.1f}")
    print(f"wrote {path}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="?", help="a preset (4bit_nc, k3v4_nc, ...) or a rendered kernel.cu")
    ap.add_argument("layout", nargs="?", default="soa")
    ap.add_argument("options", nargs="*", help="CudaOptions overrides, field=value")
    ap.add_argument("--head-dim", type=int, default=int(os.environ.get("HEAD_DIM", 128)))
    ap.add_argument("--target", default="sm90")
    ap.add_argument("--pipes", action="store_true", help="every default sm90 decode's hot path by issue pipe (a table)")
    ap.add_argument("--write-snapshot", nargs="?", const=str(sass.SNAPSHOT), metavar="PATH",
                    help=f"profile every default sm90 decode and write the counts (default {sass.SNAPSHOT})")
    a = ap.parse_args(argv)
    if a.pipes:
        print_pipes()
        return 0
    if a.write_snapshot:
        write_snapshot(Path(a.write_snapshot))
        return 0
    if not a.what:
        ap.error("give a preset and layout, a kernel.cu, or --write-snapshot")
    with tempfile.TemporaryDirectory() as tmp:
        if a.what.endswith((".cu", ".cuh")):
            show(a.what, *profile_source(Path(a.what), a.head_dim, a.target, Path(tmp)))
        else:
            label = f"{a.what} {a.layout} D{a.head_dim} {' '.join(a.options)}".strip()
            show(label, *profile_variant(a.what, a.layout, a.head_dim, a.target, Path(tmp), a.options))
    return 0


if __name__ == "__main__":
    sys.exit(main())
