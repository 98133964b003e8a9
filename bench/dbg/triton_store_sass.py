"""SASS of the Triton store on the CPU (debug): compiles one sm_90 ``tq_store`` as tqgen.compile_check does (no GPU) and
counts its instructions a warp and a (token, head) row, with registers and the opcode mix, so a template or launch
change can be read before any device time.

    python bench/dbg/triton_store_sass.py 4bit_nc:soa 3bit_nc:aos            # the variants' own options
    python bench/dbg/triton_store_sass.py 4bit_nc:soa store_num_warps=1 store_block_m=8
    HEAD_DIM=64 python bench/dbg/triton_store_sass.py k3v4_nc:soa

The integer arguments (strides, row count) are compiled as multiples of 16, as Triton's launcher specialises them at the
benchmark's shapes (without it the key and value rows load as 2-byte elements and the counts run 1.3-2.1x high)."""

from __future__ import annotations

import collections
import dataclasses
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tqgen import compile_check, sass  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_triton import make_variant, render_triton, triton_options  # noqa: E402
from tqgen.triton_launch import import_kernel_module  # noqa: E402


def count(preset: str, layout: str, changes: dict) -> str:
    hd = int(os.environ.get("HEAD_DIM", "128"))
    spec = dataclasses.replace(preset_spec_for_target(preset, Target.SM90, layout=layout), head_dim=hd)
    v = make_variant(spec, Target.SM90, options=dataclasses.replace(triton_options(spec, Target.SM90), **changes))
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / v.id / "kernel.py"
        p.parent.mkdir()
        p.write_text(render_triton(v))
        ck = compile_check.compile_kernel(v, import_kernel_module(p), "tq_store",
                                          divisible=("stride_kn", "stride_kh", "stride_vn", "stride_vh", "n_rows"))
        opts = v.options.launch_kwargs(v.target, store=True)
        consts = compile_check.kernel_signatures(v)["tq_store"][1]
        cubin = Path(tmp) / "k.cubin"
        cubin.write_bytes(ck.asm["cubin"])
        regs, spill, stack, _ = compile_check._cubin_report(ck.asm["cubin"])
        ops = [op for _, op, _ in sass.disassemble(cubin, "tq_store") if not op.startswith("NOP")]
    w, bm = opts["num_warps"], consts["BLOCK_M"]
    mix = collections.Counter(op.split(".")[0] for op in ops)
    return (f"{preset} {layout} D{hd} {w} warp(s) x {bm} rows: {regs} registers, {spill} B spilled, {stack} B stack; "
            f"{len(ops)} instructions a warp = {len(ops) * w / bm:.0f} a row\n  "
            + ", ".join(f"{k} {n}" for k, n in mix.most_common(int(os.environ.get("TOP", "16")))))


def main(argv: list[str]) -> int:
    items = [a for a in argv if ":" in a]
    changes = {k: int(x) for k, x in (a.split("=", 1) for a in argv if "=" in a)}
    for it in items:
        print(count(*it.split(":"), changes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
