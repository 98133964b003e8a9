"""Device detection and variant selection: a per-device priority chain with every reason kept.

For each kernel (store, decode, dequant) the candidates of the device's chain are tried in order:

    NVIDIA smXY : cuda → triton → reference   (unrotated fp8 keys' store into AoS pages, and their store and
                  dequant at a head_dim no power of two, where a row's lanes take 32 elements: triton → cuda,
                  measured faster: _ordered)
    gfx950      : triton:gfx950_mfma (decode only) → hip → triton → reference
    other AMD   : hip → triton → reference
    CPU         : triton (only under TRITON_INTERPRET=1) → reference

A candidate is passed over when its backend does not exist yet, when its eligibility rules reject
the request, or when loading / compiling it raises — the failure becomes a reason and the next
candidate is tried. ``backend=`` (or ``TQGEN_BACKEND``) forces one backend; forcing an ineligible
one raises with every reason.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any, Callable

from tqgen.backends import backend_label, generated_chain
from tqgen.ir import Backend, Layout, LayoutSpec, Reason, Rotation, Target, Vendor, is_power_of_two
from tqgen.variants import Request

log = logging.getLogger("tqgen_runtime")

KERNELS = ("store", "decode", "dequant")
CUDA_ARCHS = {80: Target.SM80, 86: Target.SM86, 89: Target.SM89, 90: Target.SM90}
AMD_ARCHS = {"gfx90a": Target.GFX90A, "gfx942": Target.GFX942, "gfx950": Target.GFX950}


class SelectionError(RuntimeError):
    """No candidate (or the forced one) can serve the request; carries every candidate's reasons."""

    def __init__(self, message: str, rejected: list[tuple[str, list[str]]]):
        self.rejected = rejected
        lines = "\n".join(f"  - {cid}: {'; '.join(rs)}" for cid, rs in rejected)
        super().__init__(f"{message}\n{lines}" if rejected else message)


# --------------------------------------------------------------------------- devices
def target_from_capability(major: int, minor: int) -> tuple[Target, str]:
    """sm_XY → the closest target at or below it (Triton code is forward compatible)."""
    cc = 10 * major + minor
    known = [c for c in sorted(CUDA_ARCHS) if c <= cc]
    if not known:
        raise SelectionError(f"compute capability {major}.{minor} is older than sm80, the oldest target "
                             f"({', '.join(str(t) for t in CUDA_ARCHS.values())}); use device='cpu'", [])
    t = CUDA_ARCHS[known[-1]]
    note = "" if cc in CUDA_ARCHS else f"sm{cc} runs the {t} variants"
    return t, note


def detect_target(device: Any = None) -> tuple[Target, Any, str]:
    """(target, torch device, note) for a torch device, a device string, or a target name.

    A target name ("sm90", "gfx950", ...) names a device without needing one (planning and tests)."""
    import torch

    if isinstance(device, Target) and device is not Target.CPU:
        return device, None, "named target"
    if isinstance(device, str) and device in {t.value for t in Target} - {"cpu"}:
        return Target(device), None, "named target"
    if device is Target.CPU:
        device = "cpu"
    dev = torch.device(device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu"))
    if dev.type == "cpu":
        return Target.CPU, dev, ""
    if dev.type != "cuda":
        raise SelectionError(f"device {dev} not supported: one of cpu, cuda (NVIDIA or ROCm), or a target name "
                             f"({', '.join(t.value for t in Target)})", [])
    if not torch.cuda.is_available():
        raise SelectionError(f"device {dev} asked for, but torch sees no GPU; use device='cpu'", [])
    if getattr(torch.version, "hip", None):
        arch = torch.cuda.get_device_properties(dev).gcnArchName.split(":")[0]
        if arch not in AMD_ARCHS:
            raise SelectionError(f"AMD {arch} not supported: one of {', '.join(AMD_ARCHS)}", [])
        return AMD_ARCHS[arch], dev, ""
    t, note = target_from_capability(*torch.cuda.get_device_capability(dev))
    return t, dev, note


# --------------------------------------------------------------------------- candidates
@dataclass(frozen=True)
class Candidate:
    backend: Backend
    kind: str = "generic"  # "generic" or a specialised family ("gfx950_mfma")
    kernels: tuple[str, ...] = KERNELS

    @property
    def name(self) -> str:
        return backend_label(self.backend, self.kind)


def chain(target: Target, interpret: bool | None = None) -> list[Candidate]:
    """The priority list of a device (see the module docstring)."""
    if interpret is None:
        interpret = os.environ.get("TRITON_INTERPRET") == "1"
    if target is Target.CPU:
        return ([Candidate(Backend.TRITON)] if interpret else []) + [Candidate(Backend.REFERENCE)]
    return [Candidate(Backend(b), k, ("decode",) if k == "gfx950_mfma" else KERNELS)
            for b, k in generated_chain(target)] + [Candidate(Backend.REFERENCE)]


def candidate_reasons(c: Candidate, req: Request, target: Target, kernel: str) -> list[str]:
    """Static reasons (no loading): missing backend, wrong kernel, eligibility rules."""
    from tqgen.lower_triton import make_variant, triton_reasons

    if kernel not in c.kernels:
        return [f"{c.name} implements {', '.join(c.kernels)} only"]
    if c.backend in (Backend.CUDA, Backend.HIP):
        from tqgen.lower_cuda import backend_for, cuda_reasons, cuda_rules
        if target is Target.CPU or backend_for(target) is not c.backend:
            return [f"{c.backend} kernels need {'an NVIDIA' if c.backend is Backend.CUDA else 'an AMD'} GPU; "
                    f"this device is {target}"]
        reasons = [str(r) for r in cuda_reasons(req.spec, target, c.kind)]
        return reasons or [str(r) for r in cuda_rules(req.spec).reasons(req)]
    if c.backend is Backend.REFERENCE:
        return []
    reasons = [str(r) for r in triton_reasons(req.spec, target, c.kind)]
    if not reasons:
        v = make_variant(req.spec, target, c.kind)
        reasons = [str(r) for r in v.rules.reasons(req)]
    if target is Target.CPU and os.environ.get("TRITON_INTERPRET") != "1":
        reasons.append("Triton on the CPU needs TRITON_INTERPRET=1 (set before importing triton)")
    return reasons


def request_reasons(req: Request) -> list[str]:
    r: list[Reason] = []
    if req.num_kv_heads < 1 or req.num_q_heads < 1 or req.num_q_heads % req.num_kv_heads:
        r.append(Reason("num_q_heads", req.num_q_heads, f"a positive multiple of num_kv_heads={req.num_kv_heads}",
                        "GQA groups must be whole"))
    if req.dtype not in ("float16", "bfloat16"):
        r.append(Reason("dtype", req.dtype, ["float16", "bfloat16"], "pass dtype=torch.bfloat16"))
    return [str(x) for x in r]


@dataclass
class Plan:
    """The ordered candidates per kernel with their reasons; ``chosen`` is None where nothing fits."""

    target: Target
    request: Request
    candidates: dict[str, list[tuple[Candidate, list[str]]]] = field(default_factory=dict)

    def chosen(self, kernel: str) -> Candidate | None:
        for c, reasons in self.candidates[kernel]:
            if not reasons:
                return c
        return None

    def __str__(self) -> str:
        lines = [f"{self.request.spec.token} on {self.target} (Hq={self.request.num_q_heads}, "
                 f"Hk={self.request.num_kv_heads}, {self.request.dtype}):"]
        for k, cands in self.candidates.items():
            lines.append(f"  {k}:")
            for c, reasons in cands:
                lines.append(f"    {'OK ' if not reasons else '-- '}{c.name}" + (f": {'; '.join(reasons)}" if reasons else ""))
        return "\n".join(lines)


def make_plan(req: Request, target: Target, backend: str | None = None) -> Plan:
    bad = request_reasons(req)
    if bad:
        raise SelectionError("invalid request", [("request", bad)])
    plan = Plan(target, req)
    cands = chain(target)
    if backend:
        names = {c.name for c in cands} | {c.name for c in chain(target, interpret=True)} | {b.value for b in Backend}
        if backend not in names:
            raise SelectionError(f"backend={backend!r} unknown: one of {', '.join(sorted(names))}", [])
        pool = chain(target, interpret=True) + [Candidate(Backend(backend.split(':')[0]))]
        cands = [c for c in pool if c.name == backend][:1]
    for k in KERNELS:
        ks = _ordered(cands, k, req, target)
        plan.candidates[k] = [(c, candidate_reasons(c, req, target, k)) for c in ks]
    return plan


#: measured exceptions to a chain's order (bench/results/h200-2026-12-01-store-v4.md): on NVIDIA the
#: Triton store of fp8 keys into AoS pages runs at 55-57 % of the copy ceiling, the CUDA one at 49-51 %
#: (4-byte aligned slots: 4-byte stores); everywhere else the CUDA store is faster (SoA fp8 keys
#: 65-91 % vs 67-70 %, Lloyd-Max keys 56-65 % vs 7-24 %), but at head_dim 96 (3 lanes a row in the C++ store):
#: SoA fp8 keys 85.4 % (Triton) vs 65.6 % (bench/results/h100-2026-12-06-head96-cpp-graph.md). The dense
#: (orthogonal) rotation's C++ store and dequant (m16n8k16 products, session 52) beat Triton's dots: store at 64K
#: tokens 37.8-39.4 % vs 11.2-14.6 %, dequant 26.9-31.6 % vs 6.2-7.6 %; the same run's dequant of unrotated fp8 keys at
#: 96: Triton 85.8-86.6 %, C++ 67.0-67.6 % (bench/results/h100-2026-12-07-head96-dense-store.md); fp8 keys rotated by
#: Πᵀ at 96: the C++ store 2.0-2.4x Triton's (h100-2026-12-07-session52.md). At a head_dim no multiple of 32 (Phi-2's
#: 80: rows of 5 lanes of 16 elements, session 55) every C++ store and dequant is faster, unrotated fp8 keys included:
#: store at 64K tokens 88.5-88.9 % vs 68.9-70.7 % (fp8 keys), 31.5-34.9 % vs 9.6-12.7 % (dense rotation); dequant
#: 85.3-88.4 % vs 74.8-76.7 %, 26.0-28.1 % vs 5.2-6.2 % (bench/results/h100-2026-12-07-head80-store-dequant.md)
def _ordered(cands: list[Candidate], kernel: str, req: Request, target: Target) -> list[Candidate]:
    s = req.spec
    # (fp8 keys rotated by Πᵀ, or in rows of 16-element lanes at head_dim 80: the C++ kernels win)
    fp8 = s.key_codec.is_fp8 and s.rotation is not Rotation.ORTHOGONAL and s.head_dim % 32 == 0
    odd = not is_power_of_two(s.head_dim)
    if target.info.vendor is Vendor.NVIDIA and fp8 and (
            (kernel == "store" and (s.layout is Layout.AOS or odd)) or (kernel == "dequant" and odd)):
        return sorted(cands, key=lambda c: {Backend.TRITON: 0, Backend.CUDA: 1}.get(c.backend, 2))
    return cands


def select(plan: Plan, loader: Callable[[Candidate, str], Any], forced: bool = False,
           ) -> tuple[dict[str, tuple[Candidate, Any]], list[tuple[str, list[str]]]]:
    """Load the first working candidate per kernel; a load failure becomes a reason."""
    chosen: dict[str, tuple[Candidate, Any]] = {}
    rejected: list[tuple[str, list[str]]] = []
    for k, cands in plan.candidates.items():
        for c, reasons in cands:
            if reasons:
                rejected.append((f"{k}:{c.name}", reasons))
                continue
            try:
                impl = loader(c, k)
            except Exception as e:  # a broken variant is a reason to fall back, not a crash
                rejected.append((f"{k}:{c.name}", [f"load failed: {type(e).__name__}: {e}"]))
                continue
            chosen[k] = (c, impl)
            break
        if k not in chosen:
            what = "the forced backend cannot serve" if forced else "no candidate can serve"
            raise SelectionError(f"{what} {k} for {plan.request.spec.token} on {plan.target}",
                                 [r for r in rejected if r[0].startswith(f"{k}:")])
    return chosen, rejected
