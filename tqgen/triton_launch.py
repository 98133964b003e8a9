"""Run a generated Triton variant from Python (GPU, or the CPU under TRITON_INTERPRET=1).

    kern = load_triton(spec, "sm90")            # finds generated/<target>/triton/<id>/kernel.py or renders it
    kern.store(key, value, cache, slot_mapping)
    out = kern.decode(query, cache, block_table, seq_lens, sinks=None, sliding_window=None)
    k, v = kern.dequant(cache, block_table, seq_lens, max_len)

Tensor checks reuse the reference oracle's validators; byte addressing comes from
``derive_layout(spec).page(num_kv_heads)`` and is passed to the kernels as constexprs.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from . import reference as ref
from .codebook import lloyd_max, search_grid
from .ir import LayoutSpec, Rotation, Target, Vendor
from .lower_triton import (PREP_ROWS, dense_rotation, gqa_rows, layout_constexprs, make_variant, padded_head_dim,
                           rotates)
from .build import variant_dir
from .tuning import sm_count
from .variants import Variant

log = logging.getLogger("tqgen.triton")

if os.environ.get("TRITON_INTERPRET") == "1":
    from .interpreter_fixes import apply as _apply_interpreter_fixes
    _apply_interpreter_fixes()
LOG2E = 1.4426950408889634


def import_kernel_module(path: Path):
    name = "tqgen_generated_" + path.parent.name.replace("-", "_")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def bf16_parts(m: torch.Tensor) -> torch.Tensor:
    """fp32 m as three bf16 parts [3, *m.shape], b0 + b1 + b2 = m to fp32's precision (each the rest rounded to
    nearest; exact subtractions): the store's Πᵀ operand for the orthogonal rotation (_rot_cols_exact)."""
    parts, rest = [], m.float()
    for _ in range(3):
        parts.append(rest.to(torch.bfloat16))
        rest = rest - parts[-1].float()
    return torch.stack(parts)


@dataclass
class TritonKernels:
    variant: Variant
    module: object
    _consts: dict = field(default_factory=dict)

    @property
    def spec(self) -> LayoutSpec:
        return self.variant.spec

    def _device_consts(self, device: torch.device) -> dict[str, torch.Tensor]:
        key = str(device)
        if key not in self._consts:
            s = self.spec
            z = torch.zeros(1, dtype=torch.float32, device=device)
            c = {"rot": z, "gcode": torch.zeros(1, dtype=torch.int32, device=device), "gmid": z, "cent": z}
            if not s.key_codec.is_fp8:
                cb, g = lloyd_max(s.head_dim, s.key_bits), search_grid(s.head_dim, s.key_bits)  # the search by cell
                c.update(cent=torch.from_numpy(cb.centroids.copy()).to(device),
                         gcode=torch.tensor(g.below, dtype=torch.int32, device=device),
                         gmid=torch.from_numpy(g.cell_midpoints(cb.midpoints)).to(device))
            if dense_rotation(s):  # [Πᵀ, Π], zero-padded to the kernels' power-of-two head
                dp, pi = padded_head_dim(s.head_dim), ref.rotation(s)
                rot = torch.zeros(2, dp, dp, dtype=torch.float32)
                rot[0, :s.head_dim, :s.head_dim] = pi.T
                rot[1, :s.head_dim, :s.head_dim] = pi
                c.update(rot=rot.to(device), store_rot=bf16_parts(rot[0]).to(device))
            elif rotates(s):  # (fp8 keys may be rotated too)
                from .rotation import random_signs
                signs = random_signs(s.head_dim, s.rotation_seed) if s.rotation is Rotation.RHT \
                    else np.ones(s.head_dim, dtype=np.float32)
                c.update(rot=torch.from_numpy(signs).to(device))
            c.setdefault("store_rot", c["rot"])  # the store's rotation operand (its own only for the dense one)
            self._consts[key] = c
        return self._consts[key]

    def _luts(self, device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """Decode tables: K centroids in the dot dtype (V codes need none: they convert exactly)."""
        key = (str(device), dtype)
        if key not in self._consts:
            s = self.spec
            if s.key_codec.is_fp8:
                klut = torch.zeros(1, dtype=dtype, device=device)
            else:
                klut = torch.from_numpy(lloyd_max(s.head_dim, s.key_bits).centroids.copy()).to(dtype).to(device)
            self._consts[key] = (klut, klut)
        return self._consts[key]

    def _launch_kw(self, device: torch.device, decode: bool = False, dequant: bool = False, store: bool = False) -> dict:
        o = self.variant.options
        return o.launch_kwargs(self.variant.target, decode, dequant, store) if device.type == "cuda" else {}

    # ------------------------------------------------------------------ store
    def store(self, key: torch.Tensor, value: torch.Tensor, cache: torch.Tensor, slot_mapping: torch.Tensor,
              *, check: bool = True) -> None:
        """Quantise key/value [N, Hk, D] into the cache; ``check=False`` skips host-syncing validation
        (use it under CUDA-graph capture)."""
        if check:
            ref.check_store_args(self.spec, key, value, cache, slot_mapping)
        n, hk, d = key.shape
        if n == 0:
            return
        c = self._device_consts(cache.device)
        opts = self.variant.options
        bm = opts.store_block_m
        grid = (triton_cdiv(n * hk, bm),)
        self.module.tq_store[grid](
            key, value, cache, cache.view(torch.int16), slot_mapping,
            c["store_rot"],
            c["gcode"], c["gmid"], c["cent"], n * hk,
            key.stride(0), key.stride(1), value.stride(0), value.stride(1),
            **layout_constexprs(self.spec, hk), BLOCK_M=bm, **self._launch_kw(cache.device, store=True))

    # ----------------------------------------------------------------- decode
    def num_splits_for(self, batch: int, num_kv_heads: int, max_seq_len: int, device: torch.device) -> int:
        """A split count fixed by shapes only (CUDA-graph safe): on NVIDIA about 64 warps' worth of programs per
        SM (at least 16 programs: sm90's one-warp programs 64; AMD and the interpreter 16), at most one split per
        tile and 64 (unlike the C++ decode's, no faster past 64 at B=1: 62 / 63 / 69 us at 64 / 128 / 256 splits,
        k8v4 SoA L=32K; bench/results/h200-2026-12-02-debug-session13.md). Many short programs (several waves of
        the 8-11 an SM holds) beat one full wave: H200, every sm90 preset x layout, B=32 L=32K 33-34 splits
        1.13-1.16x faster than 9 (16 programs an SM) and the fastest of 3-34 or within 1 %; B=128 L=8K 9 splits
        within 3 % of the best of 1-34 (bench/results/h200-2026-12-02-triton-splits-session16.md)."""
        key = ("splits", device.type, device.index, batch, num_kv_heads, max_seq_len)
        s = self._consts.get(key)  # memoised (every decode call asks)
        if s is None:
            sms = sm_count(device)
            per_sm = 16
            if device.type == "cuda" and self.variant.target.info.vendor is Vendor.NVIDIA:
                warps = self.variant.options.launch_kwargs(self.variant.target, decode=True)["num_warps"]
                per_sm = max(16, 64 // warps)
            want = max(1, math.ceil(per_sm * sms / max(1, batch * num_kv_heads)))
            tiles = max(1, math.ceil(max_seq_len / self.variant.options.block_n))
            s = self._consts[key] = int(min(want, tiles, 64))
        return s

    def workspace(self, batch: int, num_q_heads: int, num_splits: int, device) -> dict[str, torch.Tensor]:
        d = padded_head_dim(self.spec.head_dim)  # the split outputs and rotated queries span the padded head
        ws = {"acc": torch.empty(batch, num_q_heads, num_splits, d, dtype=torch.float32, device=device),
              "lse": torch.empty(batch, num_q_heads, num_splits, dtype=torch.float32, device=device),
              # a balanced decode's plan: each sequence's first program and programs, for the merge
              "plan": torch.empty(batch, 2, dtype=torch.int32, device=device)}
        if rotates(self.spec):
            # the rotated, scaled queries (tq_prep_query's output): 2 bytes each, viewed as the query's bf16 / fp16
            ws["q"] = torch.empty(batch, num_q_heads, d, dtype=torch.int16, device=device)
        return ws

    def query_scale(self, scale: float) -> float:
        """The decode's query factor: softmax scale · log2(e), / sqrt(D) with a Hadamard-type rotation (tq_prep_query's
        transform is unnormalised; the dense orthogonal Π is not)."""
        s = scale * LOG2E
        return s / math.sqrt(self.spec.head_dim) if rotates(self.spec) and not dense_rotation(self.spec) else s

    def decode(self, query: torch.Tensor, cache: torch.Tensor, block_table: torch.Tensor, seq_lens: torch.Tensor,
               *, scale: float | None = None, sinks: torch.Tensor | None = None, sliding_window: int | None = None,
               num_splits: int | None = None, workspace: dict | None = None, out: torch.Tensor | None = None,
               check: bool = True, balanced: bool | None = None) -> torch.Tensor:
        """Split-KV decode: ``num_splits`` programs a (sequence, KV head) (default ``num_splits_for``), or with
        ``balanced=True`` the batch's ``batch * num_splits`` programs a KV head dealt to the sequences by their tiles
        (the template's ``_bal_deal``: a long sequence among short ones takes its share of the programs; on equal
        lengths the classic splits), in the same workspace. ``None`` (default): balanced from 2 sequences when
        there is more than one split and the block table holds more tiles than splits (else every classic split is one
        tile already); ``BALANCED_MAX_BATCH`` sequences at most."""
        s = self.spec
        if check:
            ref.check_decode_args(s, query, cache, block_table, seq_lens, sinks, sliding_window,
                                  query_dtypes=(torch.float16, torch.bfloat16))
        if self.variant.kind != "generic":
            from .variants import Request
            req = Request(spec=s, num_q_heads=query.shape[1], num_kv_heads=cache.shape[2],
                          dtype=str(query.dtype).removeprefix("torch."), sinks=sinks is not None,
                          sliding_window=sliding_window is not None)
            bad = self.variant.rules.reasons(req)
            if bad:
                raise ValueError(f"{self.variant.id} cannot serve this request: " + "; ".join(map(str, bad))
                                 + ". Use the generic variant (kind='generic').")
        b, hq, d = query.shape
        hk = cache.shape[2]
        g = hq // hk
        scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
        splits = num_splits or self.num_splits_for(b, hk, block_table.shape[1] * s.block_size, cache.device)
        ws = workspace or self.workspace(b, hq, splits, cache.device)
        if ws["acc"].shape[2] != splits or ws["acc"].shape[0] < b:
            raise ValueError(f"workspace holds {tuple(ws['acc'].shape)}; need batch ≥ {b} and {splits} splits")
        fits = b <= BALANCED_MAX_BATCH and b * splits <= MAX_GRID_Y  # the deal's programs are the grid's y
        if balanced is None:
            # where the block table's longest sequence would take one tile a split, the classic splits are already
            # one tile each and the deal would only add its cost (B=4 L=1K: +1-3 us a call on the H200)
            cap_tiles = -(-block_table.shape[1] * s.block_size // self.variant.options.block_n)
            balanced = self.variant.options.balanced_decode and fits and b > 1 and splits > 1 and cap_tiles > splits
        elif balanced and not self.variant.options.balanced_decode:
            raise ValueError(f"{self.variant.id} has no balanced decode (TritonOptions.balanced_decode is off for it: "
                             "see lower_triton.TRITON_OPTION_OVERRIDES): pass balanced=False or None")
        elif balanced and not fits:
            raise ValueError(f"a balanced decode deals at most {BALANCED_MAX_BATCH} sequences and {MAX_GRID_Y} programs "
                             f"a KV head (batch x num_splits); got batch={b}, num_splits={splits}: pass balanced=False, "
                             "fewer splits, or split the batch")
        if balanced and ("plan" not in ws or ws["plan"].shape[0] < b):
            raise ValueError(f"a balanced decode needs the workspace's 'plan' buffer [>= {b}, 2] int32 (got keys "
                             f"{sorted(ws)}): make the workspace with workspace(batch, num_q_heads, num_splits, device) "
                             "or pass balanced=False")
        klut, vlut = self._luts(cache.device, query.dtype)
        opts = self.variant.options
        kw = self._launch_kw(cache.device, decode=True)
        q, qscale = query.contiguous(), self.query_scale(scale)
        if rotates(s):  # q · Πᵀ · scale · log2(e) in fp32, rounded once to the query's type
            dp = padded_head_dim(d)
            if "q" not in ws or ws["q"].shape[0] < b or ws["q"].shape[1:] != (hq, dp):
                raise ValueError(f"workspace lacks the rotated queries' buffer 'q' [≥ {b}, {hq}, {dp}]: make it with "
                                 "workspace(batch, num_q_heads, num_splits, device)")
            rq = ws["q"][:b].view(query.dtype)
            self.module.tq_prep_query[(triton_cdiv(b * hq, PREP_ROWS),)](
                q, self._device_consts(cache.device)["rot"], rq, b * hq, qscale, BLOCK_M=PREP_ROWS,
                **({"num_warps": 4} if cache.device.type == "cuda" else {}))
            q = rq
        window = int(sliding_window or 0)
        out = out if out is not None else torch.empty(b, hq, d, dtype=query.dtype, device=query.device)
        if b == 0:
            return out
        sl = seq_lens if seq_lens.dtype == torch.int32 and seq_lens.is_contiguous() else \
            seq_lens.to(torch.int32).contiguous()
        bal = {"BALANCED": True, "BP": max(16, 1 << (b - 1).bit_length()), "plan_ptr": ws["plan"]} if balanced else {}
        grid = (hk, b * splits) if balanced else (b * hk, splits)
        self.module.tq_decode_split[grid](
            q, cache, cache.view(torch.int16), block_table, sl, klut, vlut, ws["acc"], ws["lse"],
            block_table.stride(0), window, splits, qscale, b,
            **layout_constexprs(s, hk), G=g, GP=gqa_rows(g), BLOCK_N=opts.block_n, **bal, **kw)
        sp = 1
        while sp < splits:
            sp *= 2
        has_sinks = sinks is not None
        mkw = {"num_warps": opts.merge_num_warps} if cache.device.type == "cuda" else {}
        if balanced:  # a sequence's pieces SP at a time: on equal lengths at most num_splits (one round of loads)
            mkw |= dict(seq_lens_ptr=sl, batch=b, plan_ptr=ws["plan"], BALANCED=True, G=g)
        self.module.tq_decode_merge[(b * hq,)](
            ws["acc"], ws["lse"], sinks.float().contiguous() if has_sinks else ws["lse"], out, splits,
            HQ=hq, SP=sp, HAS_SINKS=has_sinks, **mkw)
        return out

    # ---------------------------------------------------------------- dequant
    def dequant(self, cache: torch.Tensor, block_table: torch.Tensor, seq_lens: torch.Tensor,
                max_len: int | None = None, dtype: torch.dtype = torch.bfloat16, *, check: bool = True,
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Cache → K (original domain), V as ``dtype`` [B, Hk, max_len, D]; zeros past seq_len."""
        s = self.spec
        k, v, max_len = ref.dequant_outputs(s, cache, block_table, seq_lens, max_len, check, dtype)
        b, hk = block_table.shape[0], cache.shape[2]
        if b == 0 or max_len == 0:
            return k, v
        c = self._device_consts(cache.device)
        bn = self.variant.options.dequant_block_n
        self.module.tq_dequant[(b * hk, triton_cdiv(max_len, bn))](
            cache, cache.view(torch.int16), block_table, seq_lens, c["rot"], c["cent"], k, v, block_table.stride(0), max_len,
            **layout_constexprs(s, hk), BLOCK_N=bn, **self._launch_kw(cache.device, dequant=True))
        return k, v


#: the most sequences a balanced Triton decode deals: every split program loads all their lengths (a vector of the
#: next power of two) and searches the deal on them
BALANCED_MAX_BATCH = 1024
MAX_GRID_Y = 65535  # a launch grid's y extent (CUDA, HIP)


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


_LOADED: dict[str, TritonKernels] = {}


def load_variant(v: Variant, roots: list[Path] | None = None) -> TritonKernels:
    if v.id not in _LOADED:
        path = variant_dir(v, roots) / "kernel.py"
        _LOADED[v.id] = TritonKernels(v, import_kernel_module(path))
    return _LOADED[v.id]


def load_triton(spec: LayoutSpec, target: str | Target, kind: str = "generic", roots: list[Path] | None = None,
                ) -> TritonKernels:
    """Load (building on demand) the Triton variant of ``spec`` for ``target``."""
    return load_variant(make_variant(spec, target, kind), roots)
