"""Fixes for Triton's CPU interpreter (TRITON_INTERPRET=1), applied when the interpreter is used.

1. Scalars are 1-element arrays there; NumPy ≥ 2.4 refuses ``int()`` on them, which breaks
   ``range(lo, hi, step)`` over runtime bounds. ``__index__`` reads the single element instead.
2. Its ``dtype.to_ir`` forgets fp8e4b8 (the fnuz format); it is added back.
3. ``tl.dot`` with bf16 operands multiplies their raw uint16 storage; bf16 operands are widened to
   fp32 first (exact).
4. Its float→fp8 conversion produces wrong bits (TOOLCHAIN.md: 3–5 % of values). fp8 casts go
   through torch's fp8 dtypes (e4b15 through tqgen.reference's encoder), saturating to the largest
   finite value as the GPU's satfinite conversion does.
5. It cannot run ``tl.inline_asm_elementwise``; tqgen.ptx_emu executes the PTX the NVIDIA renderings
   use, so their whole kernels run on the CPU too (tests/test_triton_interp.py).
6. Its fp32/fp16 → bf16 conversion truncates the mantissa (half of all values one unit low in magnitude); the
   GPU rounds to nearest even (``cvt.rn.bf16.f32``), as torch does: such casts go through torch (an explicit
   round-toward-zero request keeps the interpreter's own path).
7. Its ``tl.fma`` computes ``x * y + z`` in the operands' type, rounding twice; the GPU's fma rounds once (the
   Triton store's value codes rely on it: an exact residual, Markstein's correction). fp32 / fp16 fmas are
   computed exactly in float64 (the product of two fp32 values is exact there) with the sum rounded to odd,
   then rounded once to the operands' type: round-to-odd at 53 bits then to nearest at <= 24 bits is the
   correctly rounded fma.
8. Its ``tl.minimum`` / ``tl.maximum`` (and so ``tl.min`` / ``tl.max``) propagate NaN at the default
   ``propagate_nan=NONE`` (NumPy's minimum / maximum), where the GPU's min.f32 / max.f32 (IEEE minNum / maxNum) return
   the other operand: NaN-ignoring like the GPU (np.fmin / np.fmax); ``PropagateNan.ALL`` keeps propagating.
9. It refuses ``tl.dot``'s ``input_precision="bf16x3"`` / ``"bf16x6"`` (the NVIDIA and AMD backends take them: the
   NVIDIA renderings rotate by orthogonal matrices in bf16x6 dots, fp32-accurate); they are accepted and computed as
   its fp32 dots are (NumPy's matmul: at least as accurate).
"""

from __future__ import annotations

import dataclasses

import numpy as np

_APPLIED = False


def apply() -> None:
    global _APPLIED
    if _APPLIED:
        return
    import torch
    import triton.language as tl
    from triton.runtime import interpreter as I

    from .ir import KeyCodec
    from .reference import _fp8_decode, _fp8_encode

    orig_patch = I._patch_lang_tensor

    def patch_lang_tensor(tensor, scope):
        orig_patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))

    I._patch_lang_tensor = patch_lang_tensor

    orig_core = I._patch_lang_core

    def patch_lang_core(lang, scope):  # the interpreter's dtype.to_ir forgets fp8e4b8 (fnuz)
        orig_core(lang, scope)
        patched = lang.dtype.to_ir

        def to_ir(self, builder):
            return builder.get_fp8e4b8_ty() if self.name == "fp8e4b8" else patched(self, builder)

        scope.set_attr(lang.dtype, "to_ir", to_ir)

    I._patch_lang_core = patch_lang_core

    fp8 = {tl.float8e4nv: KeyCodec.FP8_E4M3FN, tl.float8e4b8: KeyCodec.FP8_E4M3FNUZ,
           tl.float8e4b15: KeyCodec.FP8_E4B15}
    wide = {tl.float32: torch.float32, tl.float16: torch.float16, tl.bfloat16: torch.bfloat16}
    orig_convert = I._convert_float

    def to_torch(data: np.ndarray, dtype) -> torch.Tensor:
        t = torch.from_numpy(np.ascontiguousarray(data))
        return t.view(wide[dtype]) if dtype is tl.bfloat16 else t.to(wide[dtype])

    def convert_float(input, input_dtype, output_dtype, rounding_mode):
        if output_dtype in fp8 and input_dtype in wide:
            x = to_torch(input, input_dtype).float()
            return _fp8_encode(x, fp8[output_dtype]).numpy()
        if input_dtype in fp8 and output_dtype in wide:
            codes = torch.from_numpy(np.ascontiguousarray(input).view(np.uint8))
            y = _fp8_decode(codes, fp8[input_dtype]).to(wide[output_dtype])
            bits = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}[y.dtype]
            out = y.view(bits).numpy()
            return out.view(np.uint32 if bits is torch.int32 else np.uint16)
        if output_dtype is tl.bfloat16 and input_dtype in (tl.float32, tl.float16) and "RTZ" not in str(rounding_mode).upper():
            y = to_torch(input, input_dtype).float().to(torch.bfloat16)  # round to nearest even, as the GPU
            return y.view(torch.int16).numpy().view(np.uint16)
        return orig_convert(input, input_dtype, output_dtype, rounding_mode)

    I._convert_float = convert_float

    orig_dot = I.InterpreterBuilder.create_dot

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        def widen(x):
            if x.dtype.scalar == tl.bfloat16:
                data = orig_convert(x.data, tl.bfloat16, tl.float32, None).view(np.float32)
                return I.TensorHandle(data, tl.float32)
            return x
        return orig_dot(self, widen(a), widen(b), d, input_precision, max_num_imprecise_acc)

    I.InterpreterBuilder.create_dot = create_dot

    orig_init = I.InterpreterBuilder.__init__

    def allow_bf16_splits(builder):  # item 9: the bf16 splits of an fp32 dot
        extra = tuple(p for p in ("bf16x3", "bf16x6") if p not in builder.options.allowed_dot_input_precisions)
        builder.options = dataclasses.replace(
            builder.options, allowed_dot_input_precisions=builder.options.allowed_dot_input_precisions + extra)

    def builder_init(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        allow_bf16_splits(self)

    I.InterpreterBuilder.__init__ = builder_init
    allow_bf16_splits(I.interpreter_builder)  # the module's own, made at import

    def create_inline_asm(self, asm, constraints, values, types, is_pure, pack):
        from .ptx_emu import run_elementwise

        scalars = [t.scalar if hasattr(t, "scalar") else t for t in types]
        outs = run_elementwise(asm, constraints, [v.data for v in values], [t.primitive_bitwidth for t in scalars],
                               pack)
        handles = [I.TensorHandle(o.view(I._get_np_dtype(t)), t) for o, t in zip(outs, scalars)]
        return _AsmCall(handles)

    I.InterpreterBuilder.create_inline_asm = create_inline_asm

    orig_fma = I.InterpreterBuilder.create_fma

    def create_fma(self, x, y, z):
        out = z.dtype.scalar
        if out not in (tl.float32, tl.float16):
            return orig_fma(self, x, y, z)
        return I.TensorHandle(exact_fma(x.data, y.data, z.data).astype(I._get_np_dtype(out)), out)

    I.InterpreterBuilder.create_fma = create_fma
    I.InterpreterBuilder.create_minnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmin)
    I.InterpreterBuilder.create_maxnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmax)
    _APPLIED = True


def exact_fma(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """x * y + z for fp32 / fp16 arrays, in float64 with the sum rounded to odd: cast the result to fp32 or fp16
    (round to nearest) and it is the correctly rounded fma. The float64 product is exact (<= 48 significant bits);
    TwoSum gives the sum's exact error; an inexact sum with an even last bit moves one ulp toward the error."""
    p = np.asarray(x, np.float64) * np.asarray(y, np.float64)
    c = np.asarray(z, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        s = p + c
        bb = s - p
        err = (p - (s - bb)) + (c - bb)
        even = (s.view(np.int64) & 1) == 0
        fix = np.isfinite(s) & (err != 0) & even
        return np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)


class _AsmCall:
    """What ``tl.inline_asm_elementwise`` reads its results from (``get_result(i)``)."""

    def __init__(self, handles):
        self._handles = handles

    def get_result(self, i):
        return self._handles[i]
