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
from dataclasses import dataclass, field
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
#: A prefill dequantises the histories of its longer chunks together, at most this many bytes of bf16 K/V a call
#: (a single longer sequence alone): one launch for many short histories, bounded scratch for long ones.
PREFILL_DEQUANT_BYTES = int(os.environ.get("TQGEN_PREFILL_DEQUANT_BYTES", str(1 << 30)))
#: float32 scores a block of queries of the masked / sinks attention path (sliding windows, sinks, the CPU) may hold:
#: longer chunks go a block of queries at a time (a 32K-token chunk at 64 heads would otherwise need 256 GiB)
ATTN_BLOCK_BYTES = int(os.environ.get("TQGEN_ATTN_BLOCK_BYTES", str(1 << 28)))
#: Prefill chunks of different lengths (or histories) share one causal SDPA call, their queries padded to the group's
#: span of positions (``_pad_groups``): a chunk joins when the scores its padding adds (query-key pairs x query heads;
#: a first chunk of n tokens in a group of longest nmax: (nmax² - n²) / 2 x heads) are at most this many. Measured
#: on the H200 (bench/results/h200-2026-12-05-prefill-v5.md, GPU time of the batch padded as the runtime pads it
#: vs one call a distinct chunk, 4bit_nc SoA, Hq 32, D 128): at 2^25 new prompts of 256..512 tokens in one call were
#: 1.32x (B=8) / 2.0x (B=32) faster, but prompts of 1024..2048 tokens (2 groups) 0.63x / 0.50x and 512-token chunks
#: after 2K..4K of history at B=32 (11 groups) 0.57x: their padding's scores cost more than the calls they save.
#: At 2^22 (4.2e6 scores) each of those batches of short prompts is still one call, the 8 long prompts and both
#: history batches are one call a chunk, and the 32 long prompts go in 11 calls instead of 2 (2^21: 17; 2^20: 32, but
#: then the short prompts take 3 calls).
PREFILL_PAD_SCORES = int(os.environ.get("TQGEN_PREFILL_PAD_SCORES", str(1 << 22)))
#: The same for CPU tensors: 0, equal lengths only (measured on a 2-core x86 CPU: 8 prompts of 260-310 tokens, Hq 32,
#: D 128, in one padded call 51 ms against 26 ms a call each: the gathers took 13 ms and SDPA's CPU kernel is no
#: faster batched; a call's fixed cost is small there)
PREFILL_PAD_SCORES_CPU = int(os.environ.get("TQGEN_PREFILL_PAD_SCORES_CPU", "0"))
#: ... and while the group's padded rows stay within this many bytes (a gather copies them: first chunks' query, key
#: and value, longer chunks' queries; a run of equal chunks next to each other in the query is taken as views); a call
#: that large is long enough that its launch cost no longer matters
PREFILL_PAD_BYTES = int(os.environ.get("TQGEN_PREFILL_PAD_BYTES", str(1 << 28)))


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
    _views: dict = field(default_factory=dict, repr=False, compare=False)  # batch -> its buffers' views (memoised)

    def for_batch(self, b: int) -> dict | None:
        if b > self.max_batch:
            raise ValueError(f"batch {b} exceeds the workspace's max_batch={self.max_batch}; "
                             "create kv.workspace(max_batch) large enough")
        if self.buffers is None:
            return None
        views = self._views.get(b)
        if views is None:  # views of the same buffers: made once a batch size (~4 us of host time a decode call)
            views = self._views[b] = {k: v[:b] if isinstance(v, torch.Tensor) else v for k, v in self.buffers.items()}
        return views


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
                stored: bool = False, check: bool = True) -> torch.Tensor:
        """Attention for a varlen batch of new tokens, storing their K/V first.

        query [T, Hq, D], key/value [T, Hk, D] (the new tokens of every sequence, concatenated),
        query_start_loc [B+1] (cumulative), seq_lens [B] = context + new tokens. A sequence without
        history attends its raw K/V (SDPA, causal); the continuation
        chunks of at most ``decode_max_tokens`` new tokens run together through one decode call (one query per
        token, per-token lengths); a longer chunk attends its dequantised sequence (history + its own stored
        tokens) by SDPA, bottom-right causal.
        The dequant runs once for a group of such sequences (up to ``PREFILL_DEQUANT_BYTES`` of bf16 K/V a call).
        Chunks of similar positions share one SDPA call (``_pad_groups``: equal ones always; on the GPU others while
        the padding costs at most ``PREFILL_PAD_SCORES``), first chunks as longer ones. Either way the work per chunk is
        linear in the context. One host read: ``query_start_loc`` / ``seq_lens`` (nothing to read when both are CPU
        tensors and ``check=False``: pass host copies where you have them) and, with ``check``, the values of the
        tables' and the store's checks in the same transfer (``check=False``: the caller vouches for them, as in a
        serving loop).
        ``stored=True``: the new K/V are already in the cache (key, value and slot_mapping are then unused, and a
        sequence without history is an error)."""
        t, hq, d = query.shape
        b = seq_lens.shape[0]
        if (not stored and key.shape[0] != t) or query_start_loc.shape[0] != b + 1:
            raise ValueError(f"prefill: got query {tuple(query.shape)}, key "
                             f"{tuple(key.shape) if key is not None else None}, query_start_loc "
                             f"{tuple(query_start_loc.shape)}, seq_lens {tuple(seq_lens.shape)}; expected the same "
                             "number of new tokens in query and key and len(query_start_loc) == len(seq_lens) + 1")
        limit = PREFILL_DECODE_MAX_TOKENS if decode_max_tokens is None else decode_max_tokens
        scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
        dec = self._impl["decode"]
        flags = []  # with check: the tables' and the store's values, read back with the lengths in one transfer
        if check:
            ref.check_cache(self.spec, cache)  # first: the checks after it read the cache's shape
            ref.check_query(self.spec, query, t, cache.shape[2], sinks, sliding_window,
                            (torch.float16, torch.bfloat16) + (() if isinstance(dec, _Kernels) else (torch.float32,)))
            flags = [ref.table_flags(self.spec, cache, block_table, seq_lens),
                     None if stored else ref.store_flags(self.spec, key, value, cache, slot_mapping)]
        qsl, lens, *host = _host_ints(query_start_loc, seq_lens, *[f for f in flags if f is not None])
        if check:
            if flags[0] is not None:
                ref.raise_table_errors(self.spec, cache, block_table, host.pop(0))
            if flags[1] is not None:
                ref.raise_slot_errors(self.spec, cache, host.pop(0))
        if qsl[0] != 0 or qsl[-1] != t or any(qsl[i] > qsl[i + 1] for i in range(b)):
            raise ValueError(f"prefill: query_start_loc {qsl[:8]}{' ...' if b >= 8 else ''} (last {qsl[-1]}) must "
                             f"rise from 0 to the {t} new tokens of query")
        short, long, fresh = [], [], []  # (sequence, first token, new tokens, history)
        for i in range(b):
            a, n_new = qsl[i], qsl[i + 1] - qsl[i]
            ctx = lens[i] - n_new
            if ctx < 0:
                raise ValueError(f"prefill: sequence {i} has {n_new} new tokens but seq_len {lens[i]}; "
                                 "seq_lens must include the new tokens")
            if n_new == 0:
                continue
            if ctx == 0 and stored:
                raise ValueError("prefill(stored=True) needs history: attend the first chunk on its raw K/V")
            (fresh if ctx == 0 else short if n_new <= limit else long).append((i, a, n_new, ctx))
        if not stored:  # every check passed: nothing is stored on a refusal
            self.store(key, value, cache, slot_mapping, check=False)
        out = torch.empty_like(query)
        attend_first_chunks(query, key, value, [(a, n, a) for _, a, n, _ in fresh], out, scale, sinks, sliding_window)
        if short:
            self._prefill_by_decode(short, query, cache, block_table, out, scale, sinks, sliding_window)
        if long:
            self._prefill_by_dequant(long, query, cache, block_table, seq_lens, out, scale, sinks, sliding_window)
        return out

    def _prefill_by_decode(self, seqs, query, cache, block_table, out, scale, sinks, window) -> None:
        """One decode call for every new token of ``seqs`` (a row a token: its sequence's block table row, its own
        length)."""
        rows, src, lens = [], [], []
        for i, a, n, ctx in seqs:
            rows += range(a, a + n)
            src += [i] * n
            lens += range(ctx + 1, ctx + n + 1)
        dev = block_table.device
        idx = torch.tensor([src, lens], dtype=torch.int32).to(dev, non_blocking=True)
        bt = block_table.index_select(0, idx[0])
        first = rows[0]
        contiguous = rows[-1] - first + 1 == len(rows)
        if contiguous:
            q = query[first:first + len(rows)]
        else:
            where = torch.tensor(rows, dtype=torch.int64).to(query.device, non_blocking=True)
            q = query.index_select(0, where)
        o = self.decode(q, cache, bt, idx[1], sinks=sinks, sliding_window=window, scale=scale, check=False)
        if contiguous:
            out[first:first + len(rows)] = o
        else:
            out.index_copy_(0, where, o.to(out.dtype))

    def _prefill_by_dequant(self, seqs, query, cache, block_table, seq_lens, out, scale, sinks, window) -> None:
        """Dequantise ``seqs`` (history + chunk) a group at a time (at most PREFILL_DEQUANT_BYTES of K/V a call, or
        one sequence), then SDPA: one call for each of ``_pad_groups``' groups, in the dequant's order (each group a
        slice of its K/V): a run of equal (history, chunk) next to each other in the query as views, other groups with
        their queries gathered into the group's span of positions (bottom-right causal: a padded row is dropped, and a
        real row sees its own sequence's keys only, up to its position)."""
        deq = self._impl["dequant"]
        hq, hk, d = query.shape[1], cache.shape[2], self.spec.head_dim
        per_token = 2 * hk * d * query.element_size()
        pad = _pad_scores(query.device)
        j = 0
        while j < len(seqs):
            e, top = j + 1, seqs[j][2] + seqs[j][3]  # the group seqs[j:e], its longest sequence
            while e < len(seqs) and (e + 1 - j) * max(top, seqs[e][2] + seqs[e][3]) * per_token <= PREFILL_DEQUANT_BYTES:
                top = max(top, seqs[e][2] + seqs[e][3])
                e += 1
            group = seqs[j:e]
            order, parts = [], []  # the sequences in the dequant's order: each group a slice of its output
            for g in _pad_groups([(c, c + n) for _, _, n, c in group], hq, hq * d * query.element_size(), pad):
                parts.append(range(len(order), len(order) + len(g)))
                order += [group[i] for i in g]
            pick = torch.tensor([s[0] for s in order], dtype=torch.int64).to(block_table.device, non_blocking=True)
            k, v = deq.dequant(cache, block_table.index_select(0, pick), seq_lens.to(cache.device).index_select(0, pick),
                               top, query.dtype, check=False)  # [G, Hk, top, D]
            _attend_groups(query, [(a, n, c, a) for _, a, n, c in order], parts, out, scale, sinks, window,
                           lambda g, lo, hi, src: (k[parts[g].start:parts[g].stop, :, :hi],
                                                   v[parts[g].start:parts[g].stop, :, :hi]))
            j = e

    def __repr__(self) -> str:
        return f"TurboQuantKV({self.spec.token} on {self.target}, variants={self.variants})"


def _pad_scores(device: torch.device) -> int:
    """The padding bound of ``_pad_groups`` for tensors on ``device``: PREFILL_PAD_SCORES, on the CPU
    PREFILL_PAD_SCORES_CPU."""
    return PREFILL_PAD_SCORES_CPU if device.type == "cpu" else PREFILL_PAD_SCORES


def _pad_groups(spans: list[tuple[int, int]], hq: int, token_bytes: int, pad_scores: int) -> list[list[int]]:
    """Indices of ``spans`` (each chunk's (history, history + new tokens): its queries' positions, in query order)
    grouped for one causal SDPA call each, the queries padded to the group's span lo..hi-1 (least history, largest
    end): by end, largest first, a chunk joining the open group while the scores its padding adds (the group padded
    with it, less the group without it and the chunk's own; a query at position p sees p + 1 keys) times ``hq`` are at
    most ``pad_scores`` and the padded rows, (members + 1) x (hi - lo) x ``token_bytes``, stay within
    PREFILL_PAD_BYTES. Equal spans join at no cost; a first chunk of n tokens joining a group of longest nmax pays
    (nmax² - n² + nmax - n) / 2. Each group in query order."""
    def work(lo: int, hi: int) -> int:  # causal scores of the positions lo..hi-1, a head
        return (hi * (hi + 1) - lo * (lo + 1)) // 2

    order = sorted(range(len(spans)), key=lambda i: (-spans[i][1], spans[i][0]))  # stable
    groups: list[list[int]] = []
    lo = hi = 0
    for i in order:
        c, e = spans[i]
        if groups:
            g = groups[-1]
            lo2, hi2 = min(lo, c), max(hi, e)
            extra = (len(g) + 1) * work(lo2, hi2) - len(g) * work(lo, hi) - work(c, e)
            if extra * hq <= pad_scores and (len(g) + 1) * (hi2 - lo2) * token_bytes <= PREFILL_PAD_BYTES:
                g.append(i)
                lo, hi = lo2, hi2
                continue
        groups.append([i])
        lo, hi = c, e
    return [sorted(g) for g in groups]


def _attend_groups(query, chunks, groups, out, scale: float, sinks, window, kv) -> None:
    """One SDPA call a group of ``chunks`` — (first token in query, new tokens, history, first row of ``out``) each;
    ``groups``: sequences of indices into ``chunks``, each in query order. A run of equal chunks next to each other in the query
    and in ``out`` as views; any other group's queries gathered into its span of positions lo..hi-1 (least history,
    largest end), attended bottom-right causal, its real rows scattered back: a real row sees keys up to its own
    position, all of its own sequence's, so the real rows are exact (a padded row repeats a query of its chunk and is
    dropped). ``kv(g, lo, hi, src)``: group g's keys and values [m, Hk, hi, D] (``src``: the padded rows' tokens on the
    device, None for a run of views: tokens a .. a + m·n). The gathered groups' row indices go to the device in one
    transfer."""
    plain, gathered, meta = [], [], []  # gathered: (group, lo, hi, offset of its chunks in meta, real rows)
    for gi, g in enumerate(groups):
        cs = [chunks[i] for i in g]
        a, n, c, w = cs[0]
        if all(x[1:3] == (n, c) for x in cs) and all(cs[j + 1][0] == cs[j][0] + n and cs[j + 1][3] == cs[j][3] + n
                                                     for j in range(len(cs) - 1)):
            plain.append((gi, a, n, c, w, len(cs)))
            continue
        gathered.append((gi, min(x[2] for x in cs), max(x[1] + x[2] for x in cs), len(meta), sum(x[1] for x in cs)))
        meta += [v for x in cs for v in x]
    for gi, a, n, c, w, m in plain:
        kk, vv = kv(gi, c, c + n, None)
        o = _attention_batch(query[a:a + n * m].unflatten(0, (m, n)), kk, vv, c, scale, sinks, window)
        out[w:w + n * m] = o.flatten(0, 1)
    if not gathered:
        return
    # the row indices of every gathered group, computed on the host a tensor op at a time (not a Python loop a
    # token), go to the device in one transfer
    meta_h = torch.tensor(meta, dtype=torch.int64).view(-1, 4)
    parts = []
    for gi, lo, hi, o, real in gathered:
        m, rows = len(groups[gi]), hi - lo
        a, n, c, w = meta_h[o // 4:o // 4 + m].unbind(1)
        p = torch.arange(lo, hi)
        # each padded row's token (a row outside its chunk takes the chunk's nearest one)
        parts.append((a[:, None] + torch.minimum((p[None, :] - c[:, None]).clamp(min=0), (n - 1)[:, None])).flatten())
        # the real rows: chunk j's i-th new token, at row j·rows + c_j - lo + i of the padded output, row w_j + i of out
        j = torch.repeat_interleave(torch.arange(m), n, output_size=real)
        i = torch.arange(real) - (torch.cumsum(n, 0) - n)[j]
        parts += [j * rows + (c - lo)[j] + i, w[j] + i]
    idx = torch.cat(parts).to(query.device, non_blocking=True)
    at = 0
    for gi, lo, hi, _, real in gathered:
        m, rows = len(groups[gi]), hi - lo
        src, sel, dst = idx[at:at + m * rows], idx[at + m * rows:][:real], idx[at + m * rows + real:][:real]
        at += m * rows + 2 * real
        kk, vv = kv(gi, lo, hi, src)
        res = _attention_batch(query.index_select(0, src).unflatten(0, (m, rows)), kk, vv, lo, scale, sinks, window)
        out.index_copy_(0, dst, res.flatten(0, 1).index_select(0, sel).to(out.dtype))


def attend_first_chunks(query, key, value, chunks, out, scale: float, sinks, window) -> None:
    """Causal attention of sequences without history on their raw K/V: ``chunks`` = (first token in query / key /
    value [T, H, D], tokens, first row of ``out``) each; ``out[row:row + n]`` gets the chunk's output. Grouped by
    ``_pad_groups`` (``PREFILL_PAD_SCORES``, on CPU tensors ``PREFILL_PAD_SCORES_CPU``), one SDPA call a group
    (``_attend_groups``): a padded group's keys and values are gathered with its queries, each chunk right-padded to
    the longest (a padded key sits after every real query of its sequence: causal attention never sees it)."""
    chunks = [(a, n, 0, w) for a, n, w in chunks if n > 0]
    if not chunks:
        return
    hq, d = query.shape[1], query.shape[2]
    groups = _pad_groups([(0, n) for _, n, _, _ in chunks], hq, (hq + 2 * key.shape[1]) * d * query.element_size(),
                         _pad_scores(query.device))

    def kv(g, lo, hi, src):
        if src is None:  # a run of views
            a, m = chunks[groups[g][0]][0], len(groups[g])
            return (x[a:a + hi * m].unflatten(0, (m, hi)).transpose(1, 2) for x in (key, value))  # [m, Hk, n, D]
        return (x.index_select(0, src).unflatten(0, (-1, hi)).transpose(1, 2) for x in (key, value))
    _attend_groups(query, chunks, groups, out, scale, sinks, window, kv)


def _host_ints(*xs: torch.Tensor) -> list[list[int]]:
    """Integer tensors as host lists: the device ones read back in one transfer, the CPU ones as they are."""
    on_dev = [x for x in xs if x.device.type != "cpu"]
    flat = torch.cat([x.reshape(-1).to(on_dev[0].device, torch.int64) for x in on_dev]).tolist() if on_dev else []
    out, o = [], 0
    for x in xs:
        if x.device.type == "cpu":
            out.append(x.tolist())
        else:
            out.append(flat[o:o + x.numel()])
            o += x.numel()
    return out


def _attention(q, k, v, q_offset: int, scale: float, sinks, window) -> torch.Tensor:
    """q [n, Hq, D] at positions q_offset.. ; k, v [L, Hk, D] at 0..L-1 → [n, Hq, D] (causal)."""
    return _attention_batch(q[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], q_offset, scale, sinks,
                            window)[0]


def _attention_batch(q, k, v, q_offset: int, scale: float, sinks, window) -> torch.Tensor:
    """q [B, n, Hq, D] at positions q_offset.. ; k, v [B, Hk, L, D] at 0..L-1, L = q_offset + n → [B, n, Hq, D]
    (causal). Without sinks or a window: SDPA with torch's bottom-right causal bias on the GPU (flash /
    memory-efficient kernels, no mask in memory); else a mask or the sinks' softmax in float32, a block of queries
    at a time: at most ``ATTN_BLOCK_BYTES`` of float32 scores a block, each block against the keys it can see (with a
    window, the last ``window`` before each query: work linear in the context, not quadratic)."""
    bsz, n, hq, d = q.shape
    hk, L = k.shape[1], k.shape[2]
    if sinks is None and not window and q.device.type == "cuda":
        from torch.nn.attention.bias import causal_lower_right
        causal = dict(is_causal=True) if n == L else dict(attn_mask=causal_lower_right(n, L))
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k, v, scale=scale, enable_gqa=hq != hk, **causal)
        return o.transpose(1, 2)
    cap = ATTN_BLOCK_BYTES // (4 * bsz * hq)  # scores (query x key) a block may hold
    if window and window < L:  # a block of r queries sees r + window - 1 keys: the largest r with r (r + w - 1) <= cap
        rows = (math.isqrt((window - 1) ** 2 + 4 * cap) - (window - 1)) // 2
    else:
        rows = cap // L
    rows = max(1, min(n, rows))
    if rows >= n:
        return _attention_block(q, k, v, q_offset, scale, sinks, window)
    out = torch.empty_like(q)
    for a in range(0, n, rows):
        e = min(n, a + rows)
        lo = max(0, q_offset + a - window + 1) if window else 0  # the first key the block's first query sees
        out[:, a:e] = _attention_block(q[:, a:e], k[:, :, lo:q_offset + e], v[:, :, lo:q_offset + e],
                                       q_offset + a - lo, scale, sinks, window)
    return out


def _attention_block(q, k, v, q_offset: int, scale: float, sinks, window) -> torch.Tensor:
    """``_attention_batch``'s masked / sinks path for one block of queries (keys at 0..L-1 of the block's view)."""
    bsz, n, hq, d = q.shape
    hk, L = k.shape[1], k.shape[2]
    qt = q.transpose(1, 2)  # [B, Hq, n, D]
    qpos = torch.arange(q_offset, q_offset + n, device=q.device)[:, None]
    kpos = torch.arange(L, device=q.device)[None, :]
    mask = kpos <= qpos
    if window:
        mask &= kpos > qpos - window
    if sinks is None:
        o = F.scaled_dot_product_attention(qt, k, v, attn_mask=mask[None, None], scale=scale, enable_gqa=hq != hk)
        return o.transpose(1, 2)
    g = hq // hk
    kk = k.float().repeat_interleave(g, dim=1)  # [B, Hq, L, D]
    vv = v.float().repeat_interleave(g, dim=1)
    logits = torch.einsum("bhnd,bhld->bhnl", qt.float(), kk) * scale
    logits = logits.masked_fill(~mask, float("-inf"))
    s = sinks.float().to(q.device)[None, :, None, None].expand(bsz, hq, n, 1)
    p = torch.softmax(torch.cat([logits, s], dim=-1), dim=-1)[..., :L]
    return torch.einsum("bhnl,bhld->bnhd", p, vv).to(q.dtype)


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
