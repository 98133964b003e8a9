"""SASS of the C++ decode's pipelined tile loop, per 16-token tile: a CPU-side check of how many
instructions a kernel change costs or saves before any GPU time is spent on it.

    python bench/dbg/sass_tile.py 3bit_nc soa [key=value ...]   # options as CudaOptions fields
    HEAD_DIM=64 python bench/dbg/sass_tile.py k3v4_nc aos decode_min_blocks=8
    python bench/dbg/sass_tile.py path/to/kernel.cu --head-dim 64  # a rendered source

Needs nvcc (compile_cpp.find_nvcc) and cuobjdump: on PATH, or $CUOBJDUMP, or from PyPI's
``nvidia-cuda-cuobjdump`` wheel (``pip download --no-deps nvidia-cuda-cuobjdump``, unzip; the binary is
``nvidia/cu13/bin/cuobjdump``, chmod +x). The loop is the backward branch whose body holds the most HMMAs
(and no EXIT); its instructions (NOPs excluded) over its tiles (D/8 HMMAs a tile) give instructions per
tile, with the opcode mix.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.compile_cpp import compile_cuda  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import cuda_options, make_variant, render_cuda  # noqa: E402

KERNEL = "tq_decode_split_bf16"
LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)([^;]*);")


def cuobjdump() -> str:
    exe = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if not exe:
        sys.exit("sass_tile: no cuobjdump: set $CUOBJDUMP or put it on PATH (pip download --no-deps "
                 "nvidia-cuda-cuobjdump; unzip the wheel; nvidia/cu13/bin/cuobjdump)")
    return exe


def sass(cubin: Path, kernel: str = KERNEL) -> list[tuple[int, str, str]]:
    """(address, opcode, operands) of ``kernel``'s instructions."""
    out = subprocess.run([cuobjdump(), "-sass", "-fun", kernel, str(cubin)], check=True, capture_output=True,
                         text=True).stdout
    return [(int(m.group(1), 16), m.group(3), m.group(4).strip()) for m in map(LINE.search, out.splitlines()) if m]


def tile_loop(ins: list[tuple[int, str, str]]) -> tuple[int, int]:
    """(start, end) addresses of the tile loop: the backward branch whose range holds the most HMMAs and
    no EXIT (the out-of-line divergence stubs branch back over the whole kernel), the shortest on ties."""
    best, key = None, None
    for addr, op, args in ins:
        m = re.search(r"0x([0-9a-f]+)", args)
        if not op.startswith("BRA") or op.startswith("BRA.DIV") or not m or int(m.group(1), 16) >= addr:
            continue
        lo = int(m.group(1), 16)
        body = [o for a, o, _ in ins if lo <= a <= addr]
        if any(o.startswith("EXIT") for o in body):
            continue
        k = (sum(o.startswith("HMMA") for o in body), -len(body))
        if key is None or k > key:
            best, key = (lo, addr), k
    if best is None or key[0] == 0:
        sys.exit("sass_tile: no backward branch over HMMAs in the decode kernel")
    return best


def report(cubin: Path, head_dim: int, label: str) -> dict:
    """Instructions per tile of the loop: a tile is D/8 HMMAs (D/16 k-steps of Q.K^T, D/16 m-tiles of P.V)."""
    ins = sass(cubin)
    lo, hi = tile_loop(ins)
    body = [op for a, op, _ in ins if lo <= a <= hi and not op.startswith("NOP")]
    mix = collections.Counter(op.split(".")[0] for op in body)
    tiles = mix["HMMA"] / (head_dim // 8)
    per = len(body) / tiles
    print(f"{label}: {len(ins)} instructions, loop {lo:#x}-{hi:#x} ({tiles:g} tiles a trip): {len(body)} = "
          f"{per:.1f} per tile")
    print("  " + ", ".join(f"{k} {v / tiles:.1f}" for k, v in mix.most_common(18)))
    return dict(per_tile=per, mix={k: v / tiles for k, v in mix.items()})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", help="a preset (4bit_nc, k3v4_nc, ...) or a rendered kernel.cu")
    ap.add_argument("layout", nargs="?", default="soa")
    ap.add_argument("options", nargs="*", help="CudaOptions overrides, field=value")
    ap.add_argument("--head-dim", type=int, default=int(os.environ.get("HEAD_DIM", 128)))
    ap.add_argument("--target", default="sm90")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if a.what.endswith((".cu", ".cuh")):
            src, label = Path(a.what), a.what
        else:
            t = Target.parse(a.target, "target")
            spec = preset_spec_for_target(a.what, t, layout=a.layout, head_dim=a.head_dim)
            o = cuda_options(spec, t)
            for kv in a.options:
                k, v = kv.split("=", 1)
                cur = getattr(o, k)
                o = dataclasses.replace(o, **{k: (v.lower() in ("1", "true")) if isinstance(cur, bool) else type(cur)(v)})
            src = tmp / "kernel.cu"
            src.write_text(render_cuda(make_variant(spec, t, options=o)))
            label = f"{a.what} {a.layout} D{spec.head_dim} {' '.join(a.options)}"
        r = compile_cuda(src, a.target, tmp)
        if not r.ok:
            sys.exit(r.log[-3000:])
        k = r.kernels.get(KERNEL, {})
        print(f"{KERNEL}: {k.get('registers')} registers, {r.spills} spills, {k.get('smem')} B static smem")
        report(r.output, a.head_dim, label.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
