"""Compile generated Triton variants for a GPU target without a GPU (one target per process).

    python -m tqgen.compile_check --target sm90 [--json out.json]
    python -m tqgen.compile_check --target sm90 --head-dim 256 --kernel tq_decode_split   # other head dims

For every variant of that target in the default matrix, compiles store, decode (split, merge) and
dequant with ``triton.compile(ASTSource(...), target=GPUTarget(...))`` and reports registers,
spills and scratch (cuobjdump -res-usage of the cubin on NVIDIA: LOCAL and STACK; the AMDGCN
metadata on AMD) and whether matrix
instructions (mma/wgmma, v_mfma) were emitted. Exit 1 on any compile error, spill or scratch use.
Triton reuses per-process state between targets, so call this once per target (TOOLCHAIN.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .ir import Target, Vendor
from .lower_triton import PREP_ROWS, dense_rotation, gqa_rows, layout_constexprs, rotates
from .variants import Variant

GPU_TARGETS = {
    Target.SM80: ("cuda", 80, 32), Target.SM86: ("cuda", 86, 32), Target.SM89: ("cuda", 89, 32),
    Target.SM90: ("cuda", 90, 32), Target.GFX90A: ("hip", "gfx90a", 64), Target.GFX942: ("hip", "gfx942", 64),
    Target.GFX950: ("hip", "gfx950", 64),
}
EXAMPLE_HK, EXAMPLE_GQA, EXAMPLE_SPLITS = 8, 4, 16
EXAMPLE_BATCH_P2 = 64  # a balanced decode's BP (a power of two >= the batch)
KERNELS = ("tq_store", "tq_prep_query", "tq_decode_split", "tq_decode_merge", "tq_decode_split:balanced",
           "tq_decode_merge:balanced", "tq_dequant")


@dataclass
class KernelReport:
    variant: str
    kernel: str
    ok: bool
    registers: int | None = None
    spills: int | None = None
    scratch: int | None = None
    matrix_ops: int = 0
    error: str = ""
    notes: list[str] = field(default_factory=list)


def kernel_signatures(v: Variant) -> dict[str, tuple[dict, dict]]:
    """(signature, constexprs) per kernel, with representative shapes (8 kv heads, GQA 4)."""
    lay = layout_constexprs(v.spec, EXAMPLE_HK)
    o = v.options
    dt = "bf16"
    g = EXAMPLE_GQA if v.kind == "generic" else 8
    rotated = rotates(v.spec)  # the decode reads tq_prep_query's queries
    prep = {"tq_prep_query": ({"q_ptr": f"*{dt}", "rot_ptr": "*fp32", "out_ptr": f"*{dt}", "n_rows": "i32", "qscale": "fp32"},
                              {"BLOCK_M": PREP_ROWS})} if rotated else {}
    split_sig = {"q_ptr": f"*{dt}", "cache_ptr": "*u8", "cache16_ptr": "*i16", "bt_ptr": "*i32", "seq_lens_ptr": "*i32",
                 "klut_ptr": f"*{dt}", "vlut_ptr": f"*{dt}", "acc_ptr": "*fp32", "lse_ptr": "*fp32", "stride_bt": "i32",
                 "window": "i32", "num_splits": "i32", "qscale": "fp32", "batch": "i32", "plan_ptr": "*i32"}
    merge_sig = {"acc_ptr": "*fp32", "lse_ptr": "*fp32", "sinks_ptr": "*fp32", "out_ptr": f"*{dt}", "num_splits": "i32",
                 "seq_lens_ptr": "*i32", "batch": "i32", "plan_ptr": "*i32"}
    return prep | {
        "tq_store": ({"key_ptr": f"*{dt}", "value_ptr": f"*{dt}", "cache_ptr": "*u8", "cache16_ptr": "*i16",
                      "slot_ptr": "*i32",
                      # the orthogonal rotation's store takes Pi^T as three bf16 parts (triton_launch.bf16_parts)
                      "rot_ptr": "*bf16" if dense_rotation(v.spec) else "*fp32",
                      "gcode_ptr": "*i32", "gmid_ptr": "*fp32", "cent_ptr": "*fp32",
                      "n_rows": "i32",
                      "stride_kn": "i32", "stride_kh": "i32", "stride_vn": "i32", "stride_vh": "i32"},
                     lay | {"BLOCK_M": o.store_block_m}),
        "tq_decode_split": (split_sig, lay | {"G": g, "GP": gqa_rows(g), "BLOCK_N": o.block_n}),
        "tq_decode_merge": (merge_sig, {"HQ": EXAMPLE_HK * g, "SP": EXAMPLE_SPLITS, "HAS_SINKS": True}),
        # the length-balanced decode (BALANCED: the deal of the batch's programs by the sequences' tiles)
        "tq_decode_split:balanced": (split_sig, lay | {"G": g, "GP": gqa_rows(g), "BLOCK_N": o.block_n,
                                                       "BALANCED": True, "BP": EXAMPLE_BATCH_P2}),
        "tq_decode_merge:balanced": (merge_sig, {"HQ": EXAMPLE_HK * g, "SP": EXAMPLE_SPLITS, "HAS_SINKS": True,
                                                 "BALANCED": True, "G": g}),
        "tq_dequant": ({"cache_ptr": "*u8", "cache16_ptr": "*i16", "bt_ptr": "*i32", "seq_lens_ptr": "*i32", "rot_ptr": "*fp32",
                        "cent_ptr": "*fp32", "k_out_ptr": f"*{dt}", "v_out_ptr": f"*{dt}", "stride_bt": "i32",
                        "max_len": "i32"}, lay | {"BLOCK_N": o.dequant_block_n}),
    }


def _cubin_report(cubin: bytes) -> tuple[int | None, int | None, int | None, str]:
    """Registers, spill bytes (LOCAL) and stack of the cubin Triton produced (cuobjdump -res-usage)."""
    cuobjdump = Path(__import__("triton").__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "k.cubin"
        p.write_bytes(cubin)
        r = subprocess.run([str(cuobjdump), "-res-usage", str(p)], capture_output=True, text=True)
    text = r.stdout + r.stderr
    regs = re.search(r"REG:(\d+)", text)
    local = re.search(r"LOCAL:(\d+)", text)
    stack = re.search(r"STACK:(\d+)", text)
    as_int = lambda m: int(m.group(1)) if m else None  # noqa: E731
    return as_int(regs), as_int(local), as_int(stack), text


def compile_kernel(v: Variant, module, name: str, divisible: tuple[str, ...] = ()):
    """Triton's compiled ``name`` ("kernel" or "kernel:mode", ``kernel_signatures``) of ``module`` for ``v``'s target, as
    its launcher builds it: the signature and constexprs, pointers 16-byte aligned, the kernel's launch options;
    ``divisible``: integer arguments compiled as multiples of 16 too (the launcher specialises them so where they
    are). Raises what triton.compile raises."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig, consts = kernel_signatures(v)[name]
    fn = getattr(module, name.split(":")[0])  # "kernel:mode": a second specialisation of one kernel
    attrs = {(fn.arg_names.index(k),): [["tt.divisibility", 16]] for k, t in sig.items()
             if t.startswith("*") or k in divisible}
    opts = v.options.launch_kwargs(v.target, decode=name.startswith("tq_decode_split"), dequant=name == "tq_dequant",
                                   store=name == "tq_store")
    if name.startswith("tq_decode_merge"):
        opts = dict(opts, num_warps=v.options.merge_num_warps)
    return triton.compile(ASTSource(fn, dict(sig) | {k: "constexpr" for k in consts}, constexprs=consts, attrs=attrs),
                          target=GPUTarget(*GPU_TARGETS[v.target]), options=opts)


def compile_variant(v: Variant, module, kernels: tuple[str, ...] | None = None) -> list[KernelReport]:
    out = []
    for name in kernel_signatures(v):
        if (kernels and name not in kernels) or (name.endswith(":balanced") and not v.options.balanced_decode):
            continue
        rep = KernelReport(v.id, name, ok=False)
        try:
            ck = compile_kernel(v, module, name)
        except Exception as e:  # a compile failure is a finding, not a crash
            rep.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:500]
            out.append(rep)
            continue
        if v.target.info.vendor is Vendor.NVIDIA:
            ptx = ck.asm["ptx"]
            rep.registers, rep.spills, rep.scratch, text = _cubin_report(ck.asm["cubin"])
            rep.matrix_ops = len(re.findall(r"\b(?:wgmma\.mma_async|mma\.sync)", ptx))
            if rep.spills is None:
                rep.notes.append("cuobjdump printed no LOCAL field: " + text[-300:])
        else:
            gcn = ck.asm["amdgcn"]
            vs = re.search(r"\.vgpr_spill_count:\s*(\d+)", gcn)
            ss = re.search(r"\.sgpr_spill_count:\s*(\d+)", gcn)
            scratch = re.search(r"ScratchSize:\s*(\d+)", gcn)
            vgpr = re.search(r"\.vgpr_count:\s*(\d+)", gcn)
            rep.spills = (int(vs.group(1)) if vs else 0) + (int(ss.group(1)) if ss else 0)
            rep.scratch = int(scratch.group(1)) if scratch else None
            rep.registers = int(vgpr.group(1)) if vgpr else None
            rep.matrix_ops = len(re.findall(r"\bv_mfma_", gcn))
        rep.ok = rep.spills == 0 and rep.scratch == 0
        out.append(rep)
    return out


def _at_head_dim(spec, head_dim: int | None, rotation: str | None = None):
    """``spec`` at ``head_dim`` (None: its own) with a Hadamard-type rotation replaced by ``rotation``, or by the
    orthogonal one where head_dim is no power of two (the rotation such heads take; the IR refuses a Hadamard one)."""
    import dataclasses

    from .ir import Rotation, rotation_at
    head_dim = spec.head_dim if head_dim is None else head_dim
    rot = rotation_at(spec.rotation, head_dim)
    if rotation and spec.rotation in (Rotation.HADAMARD, Rotation.RHT):
        rot = Rotation.parse(rotation, "rotation")
    return dataclasses.replace(spec, head_dim=head_dim, rotation=rot)


def check_target(target: Target, variants: list[Variant] | None = None, head_dim: int | None = None,
                 kernels: tuple[str, ...] | None = None, rotation: str | None = None) -> list[KernelReport]:
    """Compile every default-matrix Triton variant of ``target`` (or ``variants``); ``head_dim`` / ``rotation``: the
    same specs at that head_dim / with that rotation for their Hadamard-type one (re-lowered with their own options);
    ``kernels``: only these kernels."""

    from .build import default_matrix, render_files
    from .lower_triton import make_variant
    from .triton_launch import import_kernel_module

    if variants is None:
        variants = [v for v in default_matrix()[0] if v.target is target and str(v.backend) == "triton"]
    if head_dim is not None or rotation is not None:
        variants = [make_variant(_at_head_dim(v.spec, head_dim, rotation), v.target, v.kind) for v in variants
                    if v.kind == "generic"]
    reports = []
    with tempfile.TemporaryDirectory() as d:
        for v in variants:
            p = Path(d) / v.id / "kernel.py"
            p.parent.mkdir(parents=True)
            p.write_text(render_files(v)["kernel.py"])
            reports += compile_variant(v, import_kernel_module(p), kernels)
    return reports


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", required=True)
    ap.add_argument("--json", default=None)
    ap.add_argument("--head-dim", type=int, default=None,
                    help="the default matrix's specs at this head_dim instead (each with its own options; where it is "
                         "no power of two, rotated ones take the orthogonal rotation)")
    ap.add_argument("--rotation", default=None, choices=["hadamard", "rht", "orthogonal"],
                    help="the default matrix's rotated specs with this rotation instead")
    ap.add_argument("--kernel", action="append", choices=KERNELS, help="only these kernels (repeatable)")
    a = ap.parse_args(argv)
    target = Target.parse(a.target, "target")
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("unset TRITON_INTERPRET to compile", file=sys.stderr)
        return 2
    reports = check_target(target, head_dim=a.head_dim, kernels=tuple(a.kernel) if a.kernel else None,
                           rotation=a.rotation)
    bad = [r for r in reports if not r.ok]
    for r in reports:
        status = "ok " if r.ok else "BAD"
        print(f"{status} {r.kernel:<16} regs={r.registers} spills={r.spills} scratch={r.scratch} "
              f"matrix_ops={r.matrix_ops} {r.variant} {r.error}")
    if a.json:
        Path(a.json).write_text(json.dumps([asdict(r) for r in reports], indent=1))
    print(f"{target}: {len(reports) - len(bad)}/{len(reports)} kernels compiled without spills or scratch")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
