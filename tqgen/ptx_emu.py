"""A small emulator of the PTX the Triton decode's inline assembly uses (NVIDIA renderings), on numpy words.

Two users: tests/test_triton_ptx.py runs every ``asm`` block of the rendered sm90 kernels through it against the
codebook and the portable code's bit patterns, and tqgen.interpreter_fixes lets Triton's CPU interpreter execute
``tl.inline_asm_elementwise`` with it, so an NVIDIA rendering of a whole kernel runs on the CPU against the
reference (tests/test_triton_interp.py). Instructions: and.b32, or.b32, shr.b32, shl.b32, prmt.b32 in its default
mode, mov.b32 into 16-bit halves, cvt.rn.f16x2.e4m3x2; anything else fails loudly.
"""

from __future__ import annotations

import re

import numpy as np

M32 = np.uint64(0xFFFFFFFF)


def _prmt(a, b, c):
    """PTX prmt.b32 (default mode): byte i of the result is byte (nibble i of c) & 7 of b:a, or its sign
    replicated when bit 3 of the nibble is set."""
    src = [(a >> np.uint64(8 * k)) & np.uint64(0xFF) for k in range(4)] + \
          [(b >> np.uint64(8 * k)) & np.uint64(0xFF) for k in range(4)]
    r = np.zeros_like(a)
    for i in range(4):
        nib = (c >> np.uint64(4 * i)) & np.uint64(0xF)
        byte = np.choose((nib & np.uint64(7)).astype(np.int64), src)
        byte = np.where(nib & np.uint64(8), np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0)), byte)
        r |= byte << np.uint64(8 * i)
    return r


def e4m3_to_f16_bits(x):
    """Exact fp16 bits of e4m3fn bytes (NaN as 0x7e00 with the sign; e4m3fn has no infinities)."""
    x = x.astype(np.int64)
    s, e, m = (x >> 7) & 1, (x >> 3) & 0xF, x & 7
    val = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * 2.0 ** (e - 7.0)) * np.where(s == 1, -1.0, 1.0)
    bits = val.astype(np.float16).view(np.uint16).astype(np.uint64)
    return np.where((e == 15) & (m == 7), np.uint64(0x7E00) | (s.astype(np.uint64) << np.uint64(15)), bits)


def run_asm(body: str, n_out: int, args: list[np.ndarray]) -> list[np.ndarray]:
    """Execute one asm block on uint32 words (numpy uint64 arrays, one element a call); $0.. are the outputs."""
    regs: dict[str, np.ndarray] = {f"${n_out + i}": a.astype(np.uint64) for i, a in enumerate(args)}
    shape = args[0].shape

    def val(tok: str) -> np.ndarray:
        tok = tok.strip()
        if tok in regs:
            return regs[tok]
        if re.fullmatch(r"0x[0-9a-fA-F]+|\d+", tok):
            return np.full(shape, int(tok, 0), dtype=np.uint64)
        raise AssertionError(f"asm operand {tok!r} read before it is written")

    for line in body.split(";"):
        line = line.strip()
        if not line or line.startswith(".reg"):
            continue
        op, rest = line.split(None, 1)
        if op == "mov.b32" and rest.lstrip().startswith("{"):
            halves, src = re.fullmatch(r"\{\s*(\w+)\s*,\s*(\w+)\s*\}\s*,\s*(\S+)", rest.strip()).groups()[:2], \
                rest.split(",")[-1]
            w = val(src)
            regs[halves[0]], regs[halves[1]] = w & np.uint64(0xFFFF), w >> np.uint64(16)
            continue
        ops = [t.strip() for t in rest.split(",")]
        d, srcs = ops[0], ops[1:]
        if op == "and.b32":
            r = val(srcs[0]) & val(srcs[1])
        elif op == "or.b32":
            r = val(srcs[0]) | val(srcs[1])
        elif op == "shr.b32":
            r = val(srcs[0]) >> val(srcs[1])
        elif op == "shl.b32":
            r = (val(srcs[0]) << val(srcs[1])) & M32
        elif op == "prmt.b32":
            r = _prmt(val(srcs[0]), val(srcs[1]), val(srcs[2]))
        elif op == "cvt.rn.f16x2.e4m3x2":
            h = val(srcs[0])
            r = e4m3_to_f16_bits(h & np.uint64(0xFF)) | (e4m3_to_f16_bits(h >> np.uint64(8)) << np.uint64(16))
        else:
            raise AssertionError(f"the emulator does not know {op!r}: extend it with the new instruction")
        regs[d] = r & M32
    return [regs[f"${i}"] for i in range(n_out)]


def run_elementwise(asm: str, constraints: str, args: list[np.ndarray], out_bits: list[int], pack: int,
                    ) -> list[np.ndarray]:
    """``tl.inline_asm_elementwise`` on numpy arrays of one broadcast shape: ``pack`` consecutive elements (row-major)
    per asm instance, each input packed into 32-bit registers (elements narrower than 32 bits side by side, element k
    at bit k * width; 32-bit elements one register each), outputs unpacked the same way. Returns the outputs' raw
    bits as unsigned arrays of ``out_bits`` widths. The grouping is the CPU's, not a GPU thread's: only asm whose
    every output element depends on its own input elements alone (all of tqgen's) gives the GPU's results."""
    shape = args[0].shape
    n = int(np.prod(shape)) if shape else 1
    if n % pack:
        raise ValueError(f"inline asm with pack={pack} on {n} elements")
    regs: list[np.ndarray] = []
    for a in args:
        w = a.dtype.itemsize * 8
        u = np.ascontiguousarray(a).reshape(-1).view(f"u{w // 8}").astype(np.uint64).reshape(n // pack, pack)
        if w * pack <= 32:
            regs.append(sum(u[:, k] << np.uint64(k * w) for k in range(pack)))
        else:
            per = 32 // w
            regs += [sum(u[:, r * per + k] << np.uint64(k * w) for k in range(per)) for r in range(pack // per)]
    layout = []  # (registers, elements a register, width) per output
    for wo in out_bits:
        per = min(pack, 32 // wo)
        layout.append((pack // per, per, wo))
    n_out = sum(r for r, _, _ in layout)
    if constraints.count("=") != n_out or len(constraints.split(",")) != n_out + len(regs):
        raise ValueError(f"constraints {constraints!r}: expected {n_out} outputs and {len(regs)} inputs")
    body = asm.strip()
    body = body[1:-1] if body.startswith("{") and body.endswith("}") else body
    out_regs = run_asm(body, n_out, regs)
    outs, i = [], 0
    for r, per, wo in layout:
        mask = np.uint64((1 << wo) - 1)
        el = np.stack([(out_regs[i + k // per] >> np.uint64((k % per) * wo)) & mask for k in range(pack)], axis=1)
        outs.append(el.reshape(shape).astype(f"u{wo // 8}"))
        i += r
    return outs
