"""Variants: (backend, target, kind, spec, options) + eligibility rules as data, and their names.

A variant's id is made here and only here: fixed field order, then a content hash of everything
that shapes its bytes (spec, options, rules, template bytes, tqgen version).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from .ir import Backend, Layout, LayoutSpec, Reason, Target


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """What a caller asks for at run time (immutable, as in vLLM's selector)."""

    spec: LayoutSpec
    num_q_heads: int
    num_kv_heads: int
    dtype: str = "bfloat16"  # query / K,V input dtype: float16 | bfloat16
    sinks: bool = False
    sliding_window: bool = False

    @property
    def gqa(self) -> int:
        return self.num_q_heads // self.num_kv_heads


@dataclass(frozen=True, slots=True, kw_only=True)
class Rules:
    """Eligibility of a variant for a request; None = any value."""

    layouts: tuple[str, ...] | None = None
    presets: tuple[str, ...] | None = None
    head_dims: tuple[int, ...] | None = None
    block_sizes: tuple[int, ...] | None = None
    gqa: tuple[int, ...] | None = None
    max_gqa: int = 64
    dtypes: tuple[str, ...] = ("float16", "bfloat16")
    sinks: bool = True
    sliding_window: bool = True

    def reasons(self, req: Request) -> list[Reason]:
        s, r = req.spec, []
        if self.layouts is not None and str(s.layout) not in self.layouts:
            r.append(Reason("layout", str(s.layout), list(self.layouts)))
        if self.presets is not None and s.preset_name not in self.presets:
            r.append(Reason("preset", s.preset_name or s.token, list(self.presets)))
        if self.head_dims is not None and s.head_dim not in self.head_dims:
            r.append(Reason("head_dim", s.head_dim, list(self.head_dims)))
        if self.block_sizes is not None and s.block_size not in self.block_sizes:
            r.append(Reason("block_size", s.block_size, list(self.block_sizes)))
        if req.num_kv_heads < 1 or req.num_q_heads % req.num_kv_heads:
            r.append(Reason("num_q_heads", req.num_q_heads, f"a multiple of num_kv_heads={req.num_kv_heads}"))
        elif self.gqa is not None and req.gqa not in self.gqa:
            r.append(Reason("gqa", req.gqa, list(self.gqa)))
        elif req.gqa > self.max_gqa:
            r.append(Reason("gqa", req.gqa, f"at most {self.max_gqa}"))
        if req.dtype not in self.dtypes:
            r.append(Reason("dtype", req.dtype, list(self.dtypes)))
        if req.sinks and not self.sinks:
            r.append(Reason("sinks", True, [False], "this variant has no sink support; the generic one does"))
        if req.sliding_window and not self.sliding_window:
            r.append(Reason("sliding_window", True, [False], "this variant has no sliding window; the generic one does"))
        return r

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class Variant:
    backend: Backend
    target: Target
    kind: str  # "generic" or a specialised kernel family, e.g. "gfx950_mfma"
    spec: LayoutSpec
    options: Any  # frozen per-backend options dataclass with .to_dict()
    rules: Rules
    template_digest: str  # sha256 of the template/helper bytes this variant renders from
    version: str

    @property
    def content_hash(self) -> str:
        blob = json.dumps({"spec": self.spec.to_dict(), "options": self.options.to_dict(),
                           "rules": self.rules.to_dict(), "templates": self.template_digest,
                           "version": self.version, "backend": str(self.backend), "target": str(self.target),
                           "kind": self.kind}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:10]

    @property
    def id(self) -> str:
        return variant_id(self)

    @property
    def relpath(self) -> str:
        return f"{self.target}/{self.backend}/{self.id}"


def variant_id(v: Variant) -> str:
    """``<backend>-<target>-<kind>-<spec token>-<hash>``; the one place a name is made."""
    return f"{v.backend}-{v.target}-{v.kind}-{v.spec.token}-{v.content_hash}"


def generic_rules(spec: LayoutSpec) -> Rules:
    """A generic variant takes any request its spec matches (it is built per spec)."""
    return Rules(layouts=(str(spec.layout),), head_dims=(spec.head_dim,), block_sizes=(spec.block_size,))


GFX950_SPECIAL_RULES = Rules(layouts=(str(Layout.SOA),), presets=("4bit_nc",), head_dims=(128,), block_sizes=(16, 32),
                             gqa=(6, 8, 16), dtypes=("bfloat16",), sinks=False, sliding_window=False)
