"""SASS of the C++ decode's tile loop without a GPU: instructions per 16-token tile, with the opcode mix.

    prof = tile_profile(compile_cuda(src, "sm90", out).output, head_dim=128)
    prof.per_tile, prof.mix["LDS"]

The decode's time on the H200 follows its instructions per tile where the loop is issue-bound (the 3-bit
kernels; bench/results/h200-2026-12-01-ncu-session8.md), so the count is the CPU-side reading of what a
kernel change costs. ``tests/data/sass_tile_sm90.json`` holds the counts of every default sm90 decode and a
test compares them (a change that moves a count updates that file:
``python bench/dbg/sass_tile.py --write-snapshot``).

The loop is the backward branch whose range holds the most HMMAs and no EXIT (the out-of-line warp
divergence stubs branch back over the whole kernel), the shortest on ties; a tile is D/8 HMMAs (D/16
k-steps of Sᵀ = K·Qᵀ, D/16 m-tiles of Oᵀ += Vᵀ·Pᵀ). Static counts: ``per_tile`` counts the loop's every
instruction; ``hot_per_tile`` leaves out the blocks a warp vote branches over (``VOTE.ANY`` then a forward
``@!P BRA``: the softmax's new-maximum path, taken on the first tiles and rarely after them), the count a
tile costs in the steady state.

Needs ``cuobjdump`` and the ``nvdisasm`` it runs: ``$CUOBJDUMP`` / ``$NVDISASM_PATH``, else on PATH, else the
``nvidia-cuda-cuobjdump`` / ``nvidia-cuda-nvdisasm`` wheels' (``pip install nvidia-cuda-cuobjdump
nvidia-cuda-nvdisasm``: 7 MB, no CUDA install; .ci/run installs them). Imports neither torch nor triton.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .compile_cpp import ToolchainMissing

DECODE_KERNEL = "tq_decode_split_bf16"
_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)([^;]*);")


@dataclass(frozen=True)
class TileProfile:
    """``per_tile``: the loop's instructions (NOPs excluded) over its tiles; ``hot_per_tile``: the same without
    the blocks behind a warp vote (the rare path); ``mix``: per opcode (the name before the first dot) per tile;
    ``tiles``: tiles a trip (the unroll factor); ``loop``: its address range; ``total``: the kernel's
    instructions."""

    per_tile: float
    hot_per_tile: float
    mix: dict[str, float]
    tiles: float
    loop: tuple[int, int]
    total: int
    hot_mix: dict[str, float] = field(default_factory=dict)  # per opcode per tile, the hot path only

    def pipes(self) -> dict[str, float]:
        """The hot path's instructions per tile by the sm_90 issue pipe they occupy (``pipe_of``): the 3-bit decodes
        are bound by the integer/logic pipe (``alu``: 59 % of its peak in Nsight Compute, the FMA pipe ~13 %;
        bench/results/h200-2026-12-03-pair-tiles.md), so its count, not the total, is the one to watch there."""
        out: collections.Counter = collections.Counter()
        for op, n in self.hot_mix.items():
            out[pipe_of(op)] += n
        return {p: round(n, 2) for p, n in out.items()}


def _find_tool(name: str, env: str, wheel: str) -> Path:
    """``$env``, else ``name`` on PATH, else ``nvidia/cu*/bin/name`` of an installed ``wheel``."""
    given = os.environ.get(env)
    if given:
        exe = Path(given) / name if Path(given).is_dir() else Path(given)
        if not (exe.is_file() and os.access(exe, os.X_OK)):
            raise ToolchainMissing(f"{env}={given!r} is not an executable file (or a folder holding {name}); "
                                   f"point it at {name} or unset it")
        return exe
    found = shutil.which(name)
    if found:
        return Path(found)
    for root in map(Path, sys.path):
        for exe in sorted((root / "nvidia").glob(f"cu*/bin/{name}")) if (root / "nvidia").is_dir() else ():
            if os.access(exe, os.X_OK):
                return exe
    raise ToolchainMissing(f"{name} not found: not in ${env}, not on PATH, no {wheel} wheel installed; run "
                           f"`pip install {wheel}` (what .ci/run does) or set {env}")


def find_cuobjdump() -> Path:
    """``$CUOBJDUMP``, else ``cuobjdump`` on PATH, else the ``nvidia-cuda-cuobjdump`` wheel's."""
    return _find_tool("cuobjdump", "CUOBJDUMP", "nvidia-cuda-cuobjdump")


def find_nvdisasm() -> Path:
    """``$NVDISASM_PATH``, else ``nvdisasm`` on PATH, else the ``nvidia-cuda-nvdisasm`` wheel's (cuobjdump -sass
    runs it)."""
    return _find_tool("nvdisasm", "NVDISASM_PATH", "nvidia-cuda-nvdisasm")


def disassemble(cubin: Path, kernel: str = DECODE_KERNEL) -> list[tuple[int, str, str]]:
    """(address, opcode, operands) of ``kernel``'s instructions in ``cubin``."""
    env = dict(os.environ, NVDISASM_PATH=str(find_nvdisasm().parent))
    r = subprocess.run([str(find_cuobjdump()), "-sass", "-fun", kernel, str(cubin)], capture_output=True, text=True,
                       env=env)
    if r.returncode != 0:
        raise RuntimeError(f"cuobjdump -sass -fun {kernel} {cubin} failed ({r.returncode}): {r.stderr.strip()[-500:]}")
    ins = [(int(m.group(1), 16), m.group(2), m.group(3).strip()) for m in map(_LINE.search, r.stdout.splitlines()) if m]
    if not ins:
        raise ValueError(f"{cubin} has no SASS for kernel {kernel!r} (an extern \"C\" name such as {DECODE_KERNEL!r})")
    return ins


_KPARAM = re.compile(r"Ordinal\s*:\s*0x([0-9a-f]+)\s+Offset\s*:\s*0x([0-9a-f]+)\s+Size\s*:\s*0x([0-9a-f]+)")


def kernel_params(cubin: Path) -> dict[str, list[tuple[int, int]]]:
    """Each kernel's parameters in ``cubin`` as (offset, size) bytes in their order: its EIATTR_KPARAM_INFO entries
    (``cuobjdump -elf``, the ``.nv.info.<kernel>`` sections), what the driver copies ``kernelParams[i]`` into."""
    r = subprocess.run([str(find_cuobjdump()), "-elf", str(cubin)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"cuobjdump -elf {cubin} failed ({r.returncode}): {r.stderr.strip()[-500:]}")
    out: dict[str, dict[int, tuple[int, int]]] = {}
    kernel = None
    for line in r.stdout.splitlines():
        if line.startswith(".nv.info."):
            kernel = line.split()[0][len(".nv.info."):]
        elif line.startswith(".") or not line.strip():
            kernel = None if line.startswith(".") else kernel
        elif kernel and (m := _KPARAM.search(line)):
            out.setdefault(kernel, {})[int(m.group(1), 16)] = (int(m.group(2), 16), int(m.group(3), 16))
    return {k: [v[i] for i in sorted(v)] for k, v in out.items()}


def tile_loop(ins: list[tuple[int, str, str]]) -> tuple[int, int]:
    """(start, end) addresses of the tile loop (see the module docstring)."""
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
        raise ValueError("no backward branch over HMMA instructions: not a tqgen decode kernel's SASS")
    return best


def tile_profile(cubin: Path, head_dim: int, kernel: str = DECODE_KERNEL) -> TileProfile:
    """Instructions per 16-token tile of ``kernel``'s loop in ``cubin`` (compiled for sm_80+)."""
    ins = disassemble(cubin, kernel)
    lo, hi = tile_loop(ins)
    loop = [(a, op, args) for a, op, args in ins if lo <= a <= hi and not op.startswith("NOP")]
    body = [op for _, op, _ in loop]
    mix = collections.Counter(op.split(".")[0] for op in body)
    tiles = mix["HMMA"] / (head_dim // 8)
    hot = _hot(loop)
    hot_mix = collections.Counter(op.split(".")[0] for _, op, _ in hot)
    return TileProfile(per_tile=round(len(body) / tiles, 2), hot_per_tile=round(len(hot) / tiles, 2),
                       mix={k: round(v / tiles, 2) for k, v in mix.items()}, tiles=tiles, loop=(lo, hi),
                       total=len(ins), hot_mix={k: round(v / tiles, 2) for k, v in hot_mix.items()})


#: opcodes (the name before the first dot) by the sm_90 issue pipe they take, as Nsight Compute's per-pipe
#: counters group them: ``alu`` integer/logic/compare/select/min-max (16 lanes a cycle a sub-partition, half the
#: FMA pipe's float rate), ``fma`` float arithmetic and the integer multiply-adds (IMAD runs on the FMA pipe), ``lsu``
#: memory, ``tensor`` the mma; everything else (branches, barriers, shuffles, special functions, conversions) ``other``
PIPES: dict[str, frozenset[str]] = {
    "alu": frozenset({"LOP3", "LOP", "PLOP3", "SHF", "PRMT", "ISETP", "IADD3", "LEA", "SEL", "FSEL", "FMNMX", "FSETP",
                      "VIADD", "VIMNMX", "VIADDMNMX", "IMNMX", "MOV", "IABS", "SGXT", "BMSK", "POPC", "FLO", "BREV"}),
    "fma": frozenset({"IMAD", "FMUL", "FADD", "FFMA", "HADD2", "HFMA2", "HMUL2", "HMNMX2", "FMUL2", "FADD2", "FFMA2"}),
    "lsu": frozenset({"LDS", "STS", "LDG", "STG", "LDGSTS", "LD", "ST", "LDC", "LDSM", "ATOMS", "RED", "ATOM"}),
    "tensor": frozenset({"HMMA", "IMMA", "DMMA", "HGMMA"}),
}


def pipe_of(op: str) -> str:
    """``alu``, ``fma``, ``lsu``, ``tensor`` or ``other`` for an opcode name (``PIPES``)."""
    base = op.split(".")[0]
    return next((p for p, ops in PIPES.items() if base in ops), "other")


def _hot(loop: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    """``loop`` without the instructions that the first branch after a ``VOTE.ANY`` (the compiler schedules
    independent work between them) jumps forward over."""
    skipped: list[tuple[int, int]] = []
    for i, (_, op, _) in enumerate(loop):
        if not op.startswith("VOTE.ANY"):
            continue
        for addr, nxt, args in loop[i + 1:]:
            if nxt.startswith("BRA"):
                m = re.search(r"0x([0-9a-f]+)", args)
                if not nxt.startswith("BRA.DIV") and m and int(m.group(1), 16) > addr:
                    skipped.append((addr, int(m.group(1), 16)))
                break
    return [x for x in loop if not any(b < x[0] < e for b, e in skipped)]


# ------------------------------------------------------------------ the committed snapshot of the defaults
SNAPSHOT = Path(__file__).resolve().parents[1] / "tests" / "data" / "sass_tile_sm90.json"
SNAPSHOT_PRESETS = ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc")
SNAPSHOT_LAYOUTS = ("soa", "aos")
SNAPSHOT_HEAD_DIMS = (128, 64)


def nvcc_version() -> str:
    """nvcc's release and build ("V13.0.88"): SASS counts are compared only under the same compiler."""
    from .compile_cpp import find_nvcc

    out = subprocess.run([str(find_nvcc()), "--version"], capture_output=True, text=True).stdout
    m = re.search(r"\bV(\d+\.\d+\.\d+)", out)
    if not m:
        raise RuntimeError(f"cannot read nvcc's version from: {out.strip()[-300:]}")
    return "V" + m.group(1)


def snapshot_key(preset: str, layout: str, head_dim: int) -> str:
    return f"d{head_dim}/{layout}/{preset}"
