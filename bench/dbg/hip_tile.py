"""Static size of the HIP decode's tile loop for every default AMD decode variant (CPU only: clang-22, no AMD GPU), the
AMD counterpart of sass_tile.py: a kernel change's cost in instructions before any hardware sees it.

    python bench/dbg/hip_tile.py [ARCH,...] [HEAD_DIM,...] > table.tsv
    # A/B: run it in a worktree of the base commit too (git worktree add /tmp/base REV; cd /tmp/base;
    # PYTHONPATH=/tmp/base python /path/to/this/script.py) and paste the two tables side by side

Per variant: VGPRs and spills of tq_decode_split_bf16 (the linked code object's notes) and the instructions of its tile
loop in the assembly (every block of the outermost loop that holds inner loops; the inner loops at depth 2, the rolled
fragment products' rounds, counted HIP_TILE_TRIPS times: 3 since session 44 ran round 0 before the loop, 4 for a tree
before it): blocks taken rarely count as often as the hot ones, so the count is a proxy for a tile's work, comparable
between two trees, not a trace.
"""

from __future__ import annotations

import collections
import os
import re
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.compile_cpp import compile_hip  # noqa: E402
from tqgen.ir import SpecError, Target  # noqa: E402
from tqgen.lower_cuda import make_variant, render_cuda  # noqa: E402

KERNEL = "tq_decode_split_bf16"
# trips of the depth-2 loops (the fragment products' rolled rounds): 3 where round 0 runs before the loop
TRIPS = int(os.environ.get("HIP_TILE_TRIPS", "3"))


def loop_count(asm: str, fn: str = KERNEL, trips: int = TRIPS) -> tuple[int, collections.Counter]:
    """(instructions, per opcode) of ``fn``'s tile loop in an AMDGPU assembly listing (see the module docstring)."""
    lines = asm.splitlines()
    i0 = next(i for i, l in enumerate(lines) if l.startswith(fn + ":"))
    i1 = next(i for i in range(i0, len(lines)) if lines[i].startswith(".Lfunc_end"))
    body = lines[i0:i1]
    blocks, cur = [], ["entry", "", []]
    for i, line in enumerate(body):
        m = re.match(r"^(\.LBB\w+):(.*)$", line) or re.match(r"^; (%bb\.\d+):(.*)$", line)
        if m:
            blocks.append(cur)
            nxt = body[i + 1] if i + 1 < len(body) and body[i + 1].strip().startswith(";") else ""
            cur = [m.group(1), m.group(2) + nxt, []]
            continue
        t = line.strip()
        if t and not t.startswith((";", ".")):
            cur[2].append(t.split()[0])
    blocks.append(cur)
    members = collections.Counter()
    for _, ann, _ in blocks:
        m = re.search(r"(?:Header=|Parent Loop )(BB\w+) Depth=1", ann)
        if m:
            members[m.group(1)] += 1
    if not members:
        raise ValueError(f"{fn}: no loop in the listing")
    outer = max(members, key=members.get)
    ops: collections.Counter = collections.Counter()
    for name, ann, instrs in blocks:
        if name != f".L{outer}" and not re.search(r"(?:Header=|Parent Loop )" + outer + r" Depth=1", ann):
            continue
        for op in instrs:
            ops[op] += trips if "Depth=2" in ann else 1
    return sum(ops.values()), ops


def profile(arch: str, head_dim: int, layout: str, preset: str, out: Path) -> str:
    t = Target.parse(arch, "target")
    try:
        v = make_variant(preset_spec_for_target(preset, t, layout=layout, head_dim=head_dim), t)
    except SpecError as e:
        return f"{arch}\t{head_dim}\t{layout}\t{preset}\tskip: {str(e).splitlines()[-1].strip()}"
    d = out / f"{arch}-{head_dim}-{layout}-{preset}"
    d.mkdir(parents=True)
    (d / "kernel.hip").write_text(render_cuda(v))
    linked = compile_hip(d / "kernel.hip", arch, d)
    asm = compile_hip(d / "kernel.hip", arch, d / "s", link=False)
    if not (linked.ok and asm.ok):
        return f"{arch}\t{head_dim}\t{layout}\t{preset}\tcompile failed: {(linked.log + asm.log)[-300:]!r}"
    k = linked.kernels.get(KERNEL, {})
    n, ops = loop_count(asm.output.read_text())
    top = ", ".join(f"{op} {c}" for op, c in ops.most_common(6))
    return f"{arch}\t{head_dim}\t{layout}\t{preset}\t{k.get('vgpr')}\t{k.get('spill')}\t{n}\t{top}"


def main() -> None:
    archs = (sys.argv[1] if len(sys.argv) > 1 else "gfx90a,gfx942,gfx950").split(",")
    dims = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "128,64").split(",")]
    jobs = [(a, d, lay, p) for a in archs for d in dims for lay in ("soa", "aos")
            for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc")]
    print("arch\thead_dim\tlayout\tpreset\tvgpr\tspill\tloop instructions\ttop opcodes")
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(2) as pool:
        for line in pool.map(lambda j: profile(*j, Path(tmp)), jobs):
            print(line, flush=True)


if __name__ == "__main__":
    main()
