"""SASS of the Triton decode's tile loop on the CPU (debug): compiles one sm_90 Triton decode variant as
tqgen.compile_check does (no GPU) and counts the instructions of its loop per warp and per 16 tokens, with the
registers and the stack frame, so a template or option change can be read before any device time.

    python bench/dbg/triton_sass.py 4bit_nc soa                         # the variant's own options
    python bench/dbg/triton_sass.py k8v4 aos decode_num_warps=2 block_n=16
    HEAD_DIM=64 python bench/dbg/triton_sass.py 3bit_nc soa --mix       # + the opcode mix
    python bench/dbg/triton_sass.py k3v4_nc aos --balanced              # the length-balanced specialisation

Needs cuobjdump and nvdisasm (tqgen.sass). Session 14's counts: bench/results/h200-2026-12-02-ab20-triton-ptx.md.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tqgen import compile_check, sass  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_triton import make_variant, render_triton, triton_options  # noqa: E402
from tqgen.triton_launch import import_kernel_module  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("preset")
    ap.add_argument("layout", nargs="?", default="soa")
    ap.add_argument("options", nargs="*", help="TritonOptions overrides, field=value (ints)")
    ap.add_argument("--mix", action="store_true", help="print the loop's opcode mix")
    ap.add_argument("--balanced", action="store_true", help="the decode's length-balanced specialisation")
    a = ap.parse_args(argv)
    hd = int(os.environ.get("HEAD_DIM", "128"))
    spec = dataclasses.replace(preset_spec_for_target(a.preset, Target.SM90, layout=a.layout), head_dim=hd)
    changes = {k: int(v) for k, v in (o.split("=", 1) for o in a.options)}
    v = make_variant(spec, Target.SM90, options=dataclasses.replace(triton_options(spec, Target.SM90), **changes))
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / v.id / "kernel.py"
        p.parent.mkdir()
        p.write_text(render_triton(v))
        ck = compile_check.compile_kernel(v, import_kernel_module(p), "tq_decode_split" + (":balanced" if a.balanced else ""))
        opts = v.options.launch_kwargs(v.target, decode=True)
        cubin = Path(tmp) / "k.cubin"
        cubin.write_bytes(ck.asm["cubin"])
        regs, spill, stack, _ = compile_check._cubin_report(ck.asm["cubin"])
        ins = sass.disassemble(cubin, "tq_decode_split")
    lo, hi = sass.tile_loop(ins)
    loop = [op for addr, op, _ in ins if lo <= addr <= hi and not op.startswith("NOP")]
    warps, bn = opts["num_warps"], v.options.block_n
    print(f"{a.preset} {a.layout} D{hd} {warps} warp(s) x {bn} tokens: {regs} registers, {spill} B spilled, {stack} B "
          f"stack, {ck.metadata.shared} B shared; loop {len(loop)} instructions a warp a tile = {len(loop) * warps * 16 / bn:.0f} warp instructions "
          f"per 16 tokens")
    fwd = []  # forward branches inside the loop: (from, to, instructions skipped)
    for addr, op, args in ins:
        m = re.search(r"0x([0-9a-f]+)", args)
        if lo <= addr <= hi and op.startswith("BRA") and not op.startswith("BRA.DIV") and m and int(m.group(1), 16) > addr:
            to = int(m.group(1), 16)
            fwd.append((addr, to, sum(1 for x, o, _ in ins if addr < x < to and not o.startswith("NOP"))))
    if fwd:
        big = max(fwd, key=lambda f: f[2])
        print(f"  forward branches in the loop (from, to, skipped): {[(hex(f), hex(t), n) for f, t, n in fwd]}; without the "
              f"largest (the rescale when a maximum grew): {(len(loop) - big[2]) * warps * 16 / bn:.0f} per 16 tokens")
    if a.mix:
        mix = collections.Counter(op.split(".")[0] for op in loop)
        print("  " + ", ".join(f"{k} {n}" for k, n in mix.most_common(24)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
