"""The public runtime API: ``tqgen_runtime.load`` → a :class:`TurboQuantKV` bound to chosen variants.

    kv = tqr.load("4bit_nc", layout="soa", head_dim=128, num_kv_heads=8, num_q_heads=32,
                  block_size=16, dtype=torch.bfloat16, device="cuda")
    cache = kv.allocate(num_blocks)
    kv.store(key, value, cache, slot_mapping)
    out = kv.decode(query, cache, block_table, seq_lens)
    out = kv.prefill(query, key, value, cache, slot_mapping, block_table, seq_lens, query_start_loc)
    k, v = kv.dequant(cache, block_table, seq_lens)
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from tqgen import LayoutSpec
from tqgen import reference as ref
from tqgen.ir import Backend, Target
from tqgen.variants import Request

from .select import Candidate, Plan, SelectionError, detect_target, make_plan, select

log = logging.getLogger("tqgen_runtime")

#: Continuation chunks of at most this many new tokens per sequence run through the decode kernel
#: (one query per token, per-token lengths); longer chunks dequantise the history once and run SDPA.
#: Measured on the H200 with bench/runtime_h200.py (bench/results/h200-2026-11-30-runtime.md): the
#: decode path wins up to 4 new tokens at 4K and 32K context (soa 4bit_nc), dequant + SDPA beyond.
PREFILL_DECODE_MAX_TOKENS = int(os.environ.get("TQGEN_PREFILL_DECODE_MAX_TOKENS", "4"))


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _spec(preset: str | LayoutSpec, layout, head_dim, block_size, target: Target, overrides) -> LayoutSpec:
    if isinstance(preset, LayoutSpec):
        return preset
    from tqgen.build import preset_spec_for_target
    from tqgen.ir import resolve_preset
    p = resolve_preset(preset)
    return preset_spec_for_target(p.name, target, layout=layout, head_dim=head_dim, block_size=block_size,
                                  **overrides)


def plan(preset: str | LayoutSpec = "4bit_nc", *, layout: str = "aos", head_dim: int = 128, num_kv_heads: int = 8,
         num_q_heads: int = 32, block_size: int = 16, dtype: torch.dtype = torch.bfloat16, device: Any = None,
         sinks: bool = False, sliding_window: bool = False, backend: str | None = None, **overrides) -> Plan:
    """The ordered candidates per kernel with every reason, without loading anything
    (``device`` may be a target name such as "gfx950": no hardware needed)."""
    target, _, _ = detect_target(device)
    spec = _spec(preset, layout, head_dim, block_size, target, overrides)
    req = Request(spec=spec, num_q_heads=num_q_heads, num_kv_heads=num_kv_heads, dtype=_dtype_name(dtype),
                  sinks=sinks, sliding_window=sliding_window)
    return make_plan(req, target, backend or os.environ.get("TQGEN_BACKEND") or None)


class _Reference:
    """The torch oracle as a backend (slow, always eligible)."""

    variant_id = "reference"

    def __init__(self, spec: LayoutSpec):
        self.spec = spec

    def store(self, key, value, cache, slot_mapping, *, check=True):
        ref.store(self.spec, key, value, cache, slot_mapping)

    def decode(self, query, cache, block_table, seq_lens, *, scale=None, sinks=None, sliding_window=None,
               workspace=None, check=True):
        return ref.decode(self.spec, query, cache, block_table, seq_lens, scale=scale, sinks=sinks,
                          sliding_window=sliding_window).to(query.dtype)

    def dequant(self, cache, block_table, seq_lens, max_len=None, dtype=torch.bfloat16, *, check=True):
        k, v = ref.dequant(self.spec, cache, block_table, seq_lens)
        if max_len is not None and max_len != k.shape[2]:
            pad = max_len - k.shape[2]
            k, v = (F.pad(x, (0, 0, 0, pad)) if pad > 0 else x[:, :, :max_len] for x in (k, v))
        return k.to(dtype), v.to(dtype)

    def workspace(self, *a, **k):
        return None


class _Kernels:
    """A generated variant (Triton or C++): both loaders expose the same call surface."""

    def __init__(self, kern):
        self.kern = kern
        self.variant_id = kern.variant.id

    def store(self, key, value, cache, slot_mapping, *, check=True):
        self.kern.store(key, value, cache, slot_mapping, check=check)

    def decode(self, query, cache, block_table, seq_lens, *, scale=None, sinks=None, sliding_window=None,
               workspace=None, check=True, balanced=None):
        # the workspace's split count ("num_splits": a C++ workspace can be wider, for a balanced decode's grid)
        splits = workspace.get("num_splits", workspace["acc"].shape[2]) if workspace is not None else None
        kw = {} if balanced is None else {"balanced": balanced}
        return self.kern.decode(query, cache, block_table, seq_lens, scale=scale, sinks=sinks,
                                sliding_window=sliding_window, num_splits=splits, workspace=workspace, check=check, **kw)

    def dequant(self, cache, block_table, seq_lens, max_len=None, dtype=torch.bfloat16, *, check=True):
        return self.kern.dequant(cache, block_table, seq_lens, max_len, dtype, check=check)


CPP_BACKENDS = (Backend.CUDA, Backend.HIP)  # the C++ kernels (cuda_launch)


@dataclass
class Workspace:
    """Decode scratch for up to ``max_batch`` sequences with a split count fixed at creation."""

    max_batch: int
    num_splits: int
    buffers: dict | None

    def for_batch(self, b: int) -> dict | None:
        if b > self.max_batch:
            raise ValueError(f"batch {b} exceeds the workspace's max_batch={self.max_batch}; "
                             "create kv.workspace(max_batch) large enough")
        if self.buffers is None:
            return None
        return {k: v[:b] if isinstance(v, torch.Tensor) else v for k, v in self.buffers.items()}


class TurboQuantKV:
    """A TurboQuant KV cache format bound to the variants chosen for one device and request."""

    def __init__(self, spec: LayoutSpec, request: Request, target: Target, device, plan: Plan,
                 chosen: dict[str, tuple[Candidate, Any]], rejected: list[tuple[str, list[str]]], note: str = ""):
        self.spec, self.request, self.target, self.device, self.plan = spec, request, target, device, plan
        self._impl = {k: impl for k, (c, impl) in chosen.items()}
        self.variants = {k: impl.variant_id for k, impl in self._impl.items()}
        self.rejected = rejected
        self.note = note
        self.dtype = getattr(torch, request.dtype)

    # ------------------------------------------------------------------ memory
    def allocate(self, num_blocks: int) -> torch.Tensor:
        return ref.allocate(self.spec, num_blocks, self.request.num_kv_heads, self.device)

    def workspace(self, max_batch: int, max_seq_len: int | None = None) -> Workspace:
        """Preallocated decode scratch (CUDA-graph safe): the split count is fixed here, by shapes only."""
        impl = self._impl["decode"]
        if not isinstance(impl, _Kernels):
            return Workspace(max_batch, 1, None)
        cap = max_seq_len or 1 << 20
        splits = impl.kern.num_splits_for(max_batch, self.request.num_kv_heads, cap, torch.device(self.device))
        # the C++ decode: room for its balanced grid's width too (cuda_launch.balanced_width)
        kw = {"num_kv_heads": self.request.num_kv_heads} if impl.kern.variant.backend in CPP_BACKENDS else {}
        bufs = impl.kern.workspace(max_batch, self.request.num_q_heads, splits, self.device, **kw)
        return Workspace(max_batch, splits, bufs)

    # ------------------------------------------------------------------ kernels
    def store(self, key, value, cache, slot_mapping, *, check: bool = True) -> None:
        self._impl["store"].store(key, value, cache, slot_mapping, check=check)

    @property
    def balanced_decode(self) -> bool:
        """Whether ``decode(balanced=True)`` runs here: the C++ decode (cuda/hip variants) and the Triton decode (where
        its options allow, ``TritonOptions.balanced_decode``) have length-balanced splits; the reference has none."""
        impl = self._impl["decode"]
        if not isinstance(impl, _Kernels):
            return False
        v = impl.kern.variant
        return v.backend in CPP_BACKENDS or (v.backend is Backend.TRITON and v.options.balanced_decode)

    def decode(self, query, cache, block_table, seq_lens, *, sinks=None, sliding_window=None, scale=None,
               workspace: Workspace | None = None, check: bool = True, balanced: bool | None = None) -> torch.Tensor:
        """``balanced``: length-balanced splits (the C++ and Triton decodes; see README): ``True`` for batches of
        mixed lengths, ``None`` the variant's default."""
        ws = workspace.for_batch(query.shape[0]) if workspace is not None else None
        impl = self._impl["decode"]
        can = self.balanced_decode
        if balanced and not can:
            raise ValueError(f"balanced=True needs a decode with length-balanced splits (cuda/hip, or triton where its "
                             f"options allow it); this request's decode is {self.variants['decode']}: pass "
                             "balanced=None (or False), or choose another variant")
        kw = {"balanced": balanced} if can and balanced is not None else {}
        return impl.decode(query, cache, block_table, seq_lens, scale=scale, sinks=sinks,
                           sliding_window=sliding_window, workspace=ws, check=check, **kw)

    def dequant(self, cache, block_table, seq_lens, max_len: int | None = None, dtype: torch.dtype | None = None):
        return self._impl["dequant"].dequant(cache, block_table, seq_lens, max_len, dtype or self.dtype)

    # ------------------------------------------------------------------ prefill
    def prefill(self, query, key, value, cache, slot_mapping, block_table, seq_lens, query_start_loc, *,
                sinks=None, sliding_window=None, scale=None, decode_max_tokens: int | None = None,
                stored: bool = False) -> torch.Tensor:
        """Attention for a varlen batch of new tokens, storing their K/V first.

        query [T, Hq, D], key/value [T, Hk, D] (the new tokens of every sequence, concatenated),
        query_start_loc [B+1] (cumulative), seq_lens [B] = context + new tokens. A sequence without
        history attends its raw K/V (SDPA, causal); a continuation chunk of at most
        ``decode_max_tokens`` new tokens runs the decode kernel with one query per token and per-token
        lengths; a longer one dequantises its history once and runs SDPA. Either way the work per
        chunk is linear in the context. ``stored=True``: the new K/V are already in the cache (key,
        value and slot_mapping are then unused, and a sequence without history is an error)."""
        t, hq, d = query.shape
        if (not stored and key.shape[0] != t) or query_start_loc.shape[0] != seq_lens.shape[0] + 1:
            raise ValueError(f"prefill: got query {tuple(query.shape)}, key "
                             f"{tuple(key.shape) if key is not None else None}, query_start_loc "
                             f"{tuple(query_start_loc.shape)}, seq_lens {tuple(seq_lens.shape)}; expected the same "
                             "number of new tokens in query and key and len(query_start_loc) == len(seq_lens) + 1")
        limit = PREFILL_DECODE_MAX_TOKENS if decode_max_tokens is None else decode_max_tokens
        scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
        if not stored:
            self.store(key, value, cache, slot_mapping)
        out = torch.empty_like(query)
        qsl = query_start_loc.tolist()
        lens = seq_lens.tolist()
        for i in range(len(lens)):
            a, b = qsl[i], qsl[i + 1]
            n_new = b - a
            if n_new == 0:
                continue
            ctx = lens[i] - n_new
            if ctx < 0:
                raise ValueError(f"prefill: sequence {i} has {n_new} new tokens but seq_len {lens[i]}; "
                                 "seq_lens must include the new tokens")
            q = query[a:b]
            if ctx == 0:
                if stored:
                    raise ValueError("prefill(stored=True) needs history: attend the first chunk on its raw K/V")
                out[a:b] = _attention(q, key[a:b], value[a:b], ctx, scale, sinks, sliding_window)
            elif n_new <= limit:
                bt = block_table[i:i + 1].expand(n_new, -1)
                per_token = torch.arange(ctx + 1, ctx + n_new + 1, device=seq_lens.device, dtype=seq_lens.dtype)
                out[a:b] = self.decode(q, cache, bt, per_token, sinks=sinks, sliding_window=sliding_window,
                                       scale=scale)
            else:
                k, v = self.dequant(cache, block_table[i:i + 1], seq_lens[i:i + 1], dtype=query.dtype)
                out[a:b] = _attention(q, k[0].transpose(0, 1), v[0].transpose(0, 1), ctx, scale, sinks,
                                      sliding_window)
        return out

    def __repr__(self) -> str:
        return f"TurboQuantKV({self.spec.token} on {self.target}, variants={self.variants})"


def _attention(q, k, v, q_offset: int, scale: float, sinks, window) -> torch.Tensor:
    """q [n, Hq, D] at positions q_offset.. ; k, v [L, Hk, D] at 0..L-1 → [n, Hq, D] (causal)."""
    n, hq, d = q.shape
    L, hk, _ = k.shape
    qpos = torch.arange(q_offset, q_offset + n, device=q.device)[:, None]
    kpos = torch.arange(L, device=q.device)[None, :]
    mask = kpos <= qpos
    if window:
        mask &= kpos > qpos - window
    if sinks is None:
        o = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None],
                                           attn_mask=mask[None, None], scale=scale, enable_gqa=hq != hk)
        return o[0].transpose(0, 1)
    g = hq // hk
    kk = k.float().repeat_interleave(g, dim=1).transpose(0, 1)  # [Hq, L, D]
    vv = v.float().repeat_interleave(g, dim=1).transpose(0, 1)
    logits = torch.einsum("nhd,hld->hnl", q.float(), kk) * scale
    logits = logits.masked_fill(~mask[None], float("-inf"))
    s = sinks.float().to(q.device)[:, None, None].expand(hq, n, 1)
    p = torch.softmax(torch.cat([logits, s], dim=-1), dim=-1)[..., :L]
    return torch.einsum("hnl,hld->nhd", p, vv).to(q.dtype)


def load(preset: str | LayoutSpec = "4bit_nc", *, layout: str = "aos", head_dim: int = 128, num_kv_heads: int = 8,
         num_q_heads: int = 32, block_size: int = 16, dtype: torch.dtype = torch.bfloat16, device: Any = None,
         sinks: bool = False, sliding_window: bool = False, backend: str | None = None, **overrides) -> TurboQuantKV:
    """Pick and load the first eligible variant per kernel for this device (see tqgen_runtime.select).

    ``sinks`` / ``sliding_window`` declare whether calls will use them (variants that lack them are
    passed over). ``backend`` (or ``TQGEN_BACKEND``) forces one: "cuda", "hip", "triton",
    "triton:gfx950_mfma" or "reference"."""
    target, dev, note = detect_target(device)
    if dev is None:
        raise SelectionError(f"device={device!r} names a target without a device; use tqgen_runtime.plan() "
                             "to inspect it, or pass a torch device", [])
    forced = backend or os.environ.get("TQGEN_BACKEND") or None
    p = plan(preset, layout=layout, head_dim=head_dim, num_kv_heads=num_kv_heads, num_q_heads=num_q_heads,
             block_size=block_size, dtype=dtype, device=target, sinks=sinks, sliding_window=sliding_window,
             backend=forced, **overrides)
    spec = p.request.spec

    def loader(c: Candidate, kernel: str):
        if c.backend is Backend.REFERENCE:
            return _Reference(spec)
        if c.backend is Backend.TRITON:
            from tqgen.triton_launch import load_triton
            return _Kernels(load_triton(spec, target, c.kind))
        if c.backend in CPP_BACKENDS:
            from tqgen.cuda_launch import load_cuda
            return _Kernels(load_cuda(spec, target, c.kind, dev))
        raise RuntimeError(f"no loader for backend {c.backend}")

    chosen, rejected = select(p, loader, forced=bool(forced))
    kv = TurboQuantKV(spec, p.request, target, dev, p, chosen, rejected, note)
    summary = "; ".join(f"{cid}: {rs[0]}" for cid, rs in rejected[:4]) + (" ..." if len(rejected) > 4 else "")
    log.info("tqgen_runtime: %s on %s%s -> %s%s", spec.token, target, f" ({note})" if note else "",
             ", ".join(f"{k}={v}" for k, v in kv.variants.items()),
             f" (passed over {len(rejected)}: {summary})" if rejected else "")
    return kv
