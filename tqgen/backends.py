"""Eligibility of a spec per backend on a target, for ``tqgen check`` and the runtime."""

from __future__ import annotations

from .ir import LayoutSpec, Reason, Target
from .lower_triton import triton_reasons


def backend_reasons(spec: LayoutSpec, target: Target) -> dict[str, list[Reason]]:
    from .lower_cuda import backend_for, cuda_reasons

    out: dict[str, list[Reason]] = {}
    if target is not Target.CPU:
        out[str(backend_for(target))] = cuda_reasons(spec, target)
    if target is Target.GFX950:
        out["triton:gfx950_mfma"] = triton_reasons(spec, target, "gfx950_mfma")
    if target is not Target.CPU:
        out["triton"] = triton_reasons(spec, target)
    else:
        out["triton (interpreter)"] = triton_reasons(spec, target)
    out["reference"] = []  # the torch oracle holds every valid spec
    return out
