"""Eligibility of a spec per backend on a target, for ``tqgen check`` and the runtime."""

from __future__ import annotations

from .ir import LayoutSpec, Reason, Target
from .lower_triton import triton_reasons


def backend_label(backend: str, kind: str) -> str:
    """How a kernel family is named to users (``tqgen check``, ``tqgen build``'s skips, the runtime's candidates):
    ``triton``, ``cuda``, or ``triton:gfx950_mfma`` for a kind other than generic."""
    return str(backend) if kind == "generic" else f"{backend}:{kind}"


def generated_chain(target: Target) -> list[tuple[str, str]]:
    """(backend, kind) of each generated kernel family the runtime tries on a target, in its priority order
    (``tqgen_runtime.select.chain`` adds the reference, and the Triton interpreter on the CPU); what ``tqgen
    build`` renders when no backend is named."""
    from .lower_cuda import backend_for

    if target is Target.CPU:
        return []
    native = (str(backend_for(target)), "generic")
    if target is Target.GFX950:  # the matrix-core Triton decode first (decode only: the runtime's candidate says so)
        return [("triton", "gfx950_mfma"), native, ("triton", "generic")]
    return [native, ("triton", "generic")]


def backend_reasons(spec: LayoutSpec, target: Target) -> dict[str, list[Reason]]:
    """Why each backend the runtime tries on the target cannot run the spec (empty list = eligible), in the
    runtime's order."""
    from .lower_cuda import cuda_reasons

    out: dict[str, list[Reason]] = {}
    for backend, kind in generated_chain(target):
        out[backend_label(backend, kind)] = triton_reasons(spec, target, kind) if backend == "triton" else cuda_reasons(spec, target, kind)
    if target is Target.CPU:
        out["triton (interpreter)"] = triton_reasons(spec, target)
    out["reference"] = []  # the torch oracle holds every valid spec
    return out
