"""``tqgen bench``: decode, store, dequant and prefill timings on the current device (issue 6).

    tqgen bench --suite targets                  # exactly the shapes issue 6's targets need
    tqgen bench --suite sweep                    # decode time vs L, B ∈ {1, 32} (plots)
    tqgen bench --suite full --budget-s 3000     # every shape issue 6 lists; what does not fit is skipped
    tqgen bench --suite smoke                    # tiny shapes, runs on a CPU in seconds (CI)
    tqgen bench --suite mixed --cuda-graph       # decode of batches of mixed lengths: balanced vs classic splits
    tqgen bench --suite prefill                  # prefill of 4 / 512 new tokens after 4K / 32K (B 1, 8, 32) + dequant
                                                 # + batches of mixed lengths (new prompts, histories)
    tqgen bench --suite targets --list           # the cases and a rough GPU-time estimate; runs nothing
    tqgen bench --suite targets --op decode --cuda-graph   # decode as CUDA-graph replays (no launch overhead)

Without the console script (repository on PYTHONPATH):
``python -c 'import sys; from tqgen.cli import main; sys.exit(main(sys.argv[1:]))' bench ...``
(``python -m tqgen.cli`` runs cli.py as ``__main__``, which does not see the verbs registered in tqgen.cli).

For every preset × layout × backend the runtime is loaded with that backend forced
(``tqgen_runtime.load(..., backend=...)``); a backend that cannot load gives "unavailable: <reason>"
rows. Inputs are random, stored through the backend's own store kernel into a paged cache with a
shuffled block table, so decode reads real packed data scattered like a serving engine's cache.

Timing (GPU): warm-up, then per-call CUDA events around the call only, the call queued behind a spin kernel
longer than the host takes to issue it (``Timer``: so a short eager call is timed as its GPU work, not as its
host's launches); median and min of the reps.
L2 is kept cold per case, and every row says how: ``rotate`` (≥ 2 input sets, each larger than L2,
used in turn; one set of ≥ 4× L2 when two do not fit in memory) or ``flush`` (a 256 MB buffer is
zeroed before every rep, outside the timed interval, as triton.testing.do_bench does) when an input
set is smaller than L2. ``--cuda-graph`` times CUDA-graph replays of decode instead of Python calls.
CPU: time.perf_counter around each call.

Every row: bytes moved (see ``*_bytes`` below; decode counts the packed bytes read plus query/output),
GB/s, % of the copy ceiling measured in the same run (device-to-device copy of 1 GiB, read + write
bytes / time), speed-up vs bf16 ``scaled_dot_product_attention`` decode on the same shape (measured in
the same run), vs a bf16 paged decode (flash-attn when installed, else torch's FlexAttention compiled over a
page pool: ``tqgen.baselines``), and a correctness check of
the first call against the reference oracle on a small slice (a mismatch is printed and marked).
Outputs in ``--out``: ``<tag>.md``, ``<tag>.json`` and PNG plots (decode time and % of the ceiling vs L).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import hashlib
import itertools
import json
import math
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .cli import command
from .build import rotation_for
from .ir import PRESETS, Backend, Layout, LayoutSpec, Reason, SpecError, resolve_preset

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "bench" / "results"

OPS = ("decode", "store", "dequant", "prefill")
SUITES = ("targets", "sweep", "full", "smoke", "mixed", "prefill", "head256", "head96", "head80")
BACKEND_NAMES = ("cuda", "hip", "triton", "triton:gfx950_mfma", "reference")
K = 1024

#: head configurations (Hq, Hk, D): D=128 and D=64 with 8 KV heads at GQA 1, 4, 8 (issue 6's list); the SmolLM2
#: shape (GQA 3, D=64)
MAIN = (32, 8, 128)
HEADS_D128 = ((8, 8, 128), MAIN, (64, 8, 128))
HEADS_D64 = ((8, 8, 64), (32, 8, 64), (64, 8, 64))
SMOLLM2 = (9, 3, 64)
GEMMA = (16, 8, 256)  # head_dim 256: Gemma 2 9B / Gemma 3 12B's query and KV heads
PHI3 = (32, 32, 96)  # head_dim 96, no power of two: Phi-3-mini's query and KV heads (Triton, padded to 128)
PHI2 = (32, 32, 80)  # head_dim 80: Phi-2's query and KV heads (C++ kernels since session 55; Triton's padded to 128)
BATCHES = (1, 8, 32, 128)
LENGTHS = (1 * K, 4 * K, 16 * K, 32 * K, 128 * K)
STORE_TOKENS = (1 * K, 16 * K, 64 * K, 256 * K, 1024 * K)
PREFILL_CHUNK = 512  # a continuation chunk long enough for the dequant + SDPA path
PREFILL_BATCHES, PREFILL_LENGTHS = (1, 8, 32), (4 * K, 32 * K)  # --suite prefill

DTYPE_BYTES = 2  # bf16 query, K/V, outputs
FLUSH_BYTES = 256 * 10**6  # like triton.testing.do_bench
FLOOR_CPU_L2_BYTES = 1 << 20  # --l2-floor's "L2" where the device reports none (a CPU)
COPY_BYTES_GPU = 1 << 30
COPY_BYTES_CPU = 64 << 20
GUARD_SEQS = 2
GUARD_TOKENS = 1024
STORE_GUARD_TOKENS = 64
MAX_CASE_TIMING_S = 2.0  # the timed loop of one case stops after about this long (reps ≥ 3)
#: the GPU hold before each timed rep (``Timer``): twice the host's longest time to issue one call of the case,
#: within these bounds (us)
HOLD_MIN_US, HOLD_MAX_US = 20.0, 2000.0

#: issue 6: decode speed-up over bf16 SDPA per preset at B=32 L=32K and B=128 L=8K
TARGET_SPEEDUP = {"k8v4": 2.0, "4bit_nc": 2.5, "k3v4_nc": 2.8, "3bit_nc": 3.0}
TARGET_DECODE_PCT = 70.0
TARGET_STORE_PCT = 60.0
TARGET_LATENCY_RATIO = 1.5  # B=1 L=4K: at most 1.5x the SDPA time
TARGET_D64_FRACTION = 0.8  # D=64 GQA3: within 20 % of the D=128 bandwidth fraction
TARGET_DECODE_SHAPES = ((32, 32 * K), (128, 8 * K))


def l2_floor_table(spec: LayoutSpec, block_table, num_kv_heads: int, l2_bytes: int):
    """--l2-floor's block table and its pool size: every entry folded (mod) into a pool of blocks (one block of every
    KV head) a quarter of ``l2_bytes`` holds, so the decode's reads hit L2 (sequences share blocks, as with a shared
    prefix); at most half the blocks there are, so a small batch's table is folded too (its floor then reads each
    block at least twice)."""
    from .layout import derive_layout

    block_bytes = derive_layout(spec).page_bytes(num_kv_heads)
    pool = max(1, min(l2_bytes // 4 // block_bytes, int(block_table.max()) // 2 + 1))
    return (block_table % pool).to(block_table.dtype), pool


# =========================================================================== shapes and suites
#: decode batches of mixed lengths (``Shape.mix``; L = the longest): "one-long" = one sequence of L and B - 1 of
#: L / 32 (a batch waiting on one long request); "ramp" = lengths L·i / B for i = 1 .. B (evenly spread)
MIXES = ("one-long", "ramp")
#: prefill batches of mixed lengths (``Shape.mix`` of a prefill): "prompts" = B new prompts (no history) of n/2 .. n
#: tokens, evenly spread; "histories" = B chunks of n new tokens after histories of L/2 .. L tokens, evenly spread
PREFILL_MIXES = ("prompts", "histories")


def _spread(b: int, top: int) -> list[int]:
    """B lengths from top/2 to top, evenly spread (top alone for one sequence)."""
    lo = top // 2
    return [top] if b == 1 else [lo + (top - lo) * i // (b - 1) for i in range(b)]


def prefill_lengths(mix: str, b: int, l: int, n: int) -> tuple[list[int], list[int]]:
    """(histories, new tokens) of each sequence of a prefill batch (see ``PREFILL_MIXES``); l and n each for ``mix=""``."""
    if mix == "":
        return [l] * b, [n] * b
    if mix == "prompts":
        return [0] * b, _spread(b, n)
    if mix == "histories":
        return _spread(b, l), [n] * b
    raise SpecError([Reason("mix", mix, list(PREFILL_MIXES))], "unknown prefill length mix")


def mixed_lengths(mix: str, b: int, l: int) -> list[int]:
    """The sequence lengths of a mixed-length decode batch (see ``MIXES``); equal lengths for ``mix=""``."""
    if mix == "":
        return [l] * b
    if mix == "one-long":
        return [l] + [max(1, l // 32)] * (b - 1)
    if mix == "ramp":
        return [max(1, l * (i + 1) // b) for i in range(b)]
    raise SpecError([Reason("mix", mix, list(MIXES))], "unknown length mix")


@dataclass(frozen=True)
class Shape:
    """One measured shape. store: ``n`` tokens (b = l = 0); prefill: ``n`` new tokens per sequence after
    ``l`` tokens of history (with ``mix``: ``prefill_lengths``, the longest ``l`` and ``n``); decode / dequant: ``b``
    sequences of ``l`` tokens; a decode with ``mix``: ``b`` sequences of ``mixed_lengths(mix, b, l)`` tokens (the
    longest ``l``)."""

    op: str
    b: int
    l: int
    hq: int
    hk: int
    d: int
    n: int = 0
    mix: str = ""

    @property
    def heads(self) -> tuple[int, int, int]:
        return self.hq, self.hk, self.d

    def lengths(self) -> list[int]:
        return mixed_lengths(self.mix, self.b, self.l)

    def label(self) -> str:
        h = f"Hq{self.hq} Hk{self.hk} D{self.d}"
        if self.op == "store":
            return f"store N={self.n} Hk{self.hk} D{self.d}"
        if self.op == "prefill":
            return f"prefill B={self.b} ctx={self.l} new={self.n}{f' mix={self.mix}' if self.mix else ''} {h}"
        return f"{self.op} B={self.b} L={self.l}{f' mix={self.mix}' if self.mix else ''} {h}"


def suite_shapes(suite: str, prefill_limit: int = 4) -> list[Shape]:
    """The shapes of a named suite (before ``--op`` filtering)."""
    small = max(1, prefill_limit)  # a chunk the runtime sends through the decode kernel
    if suite == "smoke":
        hq, hk, d = 4, 2, 64
        return [Shape("decode", 2, 32, hq, hk, d), Shape("decode", 2, 64, hq, hk, d),
                Shape("store", 0, 0, hq, hk, d, n=64), Shape("dequant", 2, 64, hq, hk, d),
                Shape("prefill", 1, 32, hq, hk, d, n=small), Shape("prefill", 1, 32, hq, hk, d, n=small + 8),
                Shape("decode", 3, 64, hq, hk, d, mix="one-long"),
                Shape("prefill", 3, 0, hq, hk, d, n=small + 16, mix="prompts"),
                Shape("prefill", 3, 32, hq, hk, d, n=small + 8, mix="histories")]
    if suite == "mixed":
        return [Shape("decode", 32, 32 * K, *MAIN, mix=m) for m in MIXES] + [
            Shape("decode", 8, 32 * K, *MAIN, mix="ramp"), Shape("decode", 128, 32 * K, *MAIN, mix="one-long"),
            Shape("decode", 32, 32 * K, *SMOLLM2, mix="one-long")]
    if suite == "prefill":  # continuation chunks of both paths, the dequant behind the longer ones, mixed batches
        return [Shape("prefill", b, l, *MAIN, n=n) for b in PREFILL_BATCHES for l in PREFILL_LENGTHS
                for n in (small, PREFILL_CHUNK)] + [Shape("dequant", b, l, *MAIN) for b in PREFILL_BATCHES
                                                    for l in PREFILL_LENGTHS] + [
            Shape("prefill", b, 0, *MAIN, n=n, mix="prompts") for b in PREFILL_BATCHES[1:] for n in (512, 2048)] + [
            Shape("prefill", b, l, *MAIN, n=PREFILL_CHUNK, mix="histories") for b in PREFILL_BATCHES[1:]
            for l in PREFILL_LENGTHS]
    if suite == "targets":
        return [Shape("decode", b, l, *MAIN) for b, l in TARGET_DECODE_SHAPES] + [
            Shape("decode", 1, 4 * K, *MAIN), Shape("decode", 32, 32 * K, *SMOLLM2),
            Shape("store", 0, 0, *MAIN, n=64 * K), Shape("store", 0, 0, *MAIN, n=256 * K)]
    if suite == "sweep":
        return [Shape("decode", b, l, *MAIN) for b in (1, 32) for l in LENGTHS]
    if suite == "head256":  # not one of issue 6's shapes: the C++ kernels at head_dim 256 beside Triton and SDPA
        return [Shape("decode", 1, 4 * K, *GEMMA), Shape("decode", 32, 8 * K, *GEMMA),
                Shape("decode", 32, 32 * K, *GEMMA), Shape("store", 0, 0, *GEMMA, n=64 * K)]
    if suite == "head96":  # not one of issue 6's shapes: the padded Triton kernels at head_dim 96 beside SDPA
        return [Shape("decode", 1, 4 * K, *PHI3), Shape("decode", 8, 8 * K, *PHI3),
                Shape("decode", 32, 4 * K, *PHI3), Shape("store", 0, 0, *PHI3, n=64 * K), Shape("dequant", 8, 8 * K, *PHI3)]
    if suite == "head80":  # not one of issue 6's shapes: the C++ kernels at head_dim 80 beside Triton's and SDPA
        return [Shape("decode", 1, 4 * K, *PHI2), Shape("decode", 8, 8 * K, *PHI2), Shape("decode", 32, 4 * K, *PHI2),
                Shape("store", 0, 0, *PHI2, n=64 * K), Shape("dequant", 8, 8 * K, *PHI2)]
    if suite == "full":
        heads = HEADS_D128 + HEADS_D64 + (SMOLLM2,)
        out = []
        for h in heads:
            out += [Shape("decode", b, l, *h) for b in BATCHES for l in LENGTHS]
            out += [Shape("decode", b, 32 * K, *h, mix=m) for b in BATCHES[1:] for m in MIXES]
            out += [Shape("dequant", b, l, *h) for b in BATCHES for l in LENGTHS]
            out += [Shape("prefill", b, l, *h, n=n) for b in BATCHES for l in LENGTHS for n in (small, PREFILL_CHUNK)]
        for h in (MAIN, HEADS_D64[1], SMOLLM2):  # store does not depend on Hq
            out += [Shape("store", 0, 0, *h, n=n) for n in STORE_TOKENS]
        return out
    raise SpecError([Reason("suite", suite, list(SUITES))], "unknown suite")


# =========================================================================== bytes moved
def _slot(spec) -> int:
    from .layout import derive_layout
    return derive_layout(spec).slot_bytes


def decode_bytes(spec, b: int, l: int, hq: int, hk: int, elt: int = DTYPE_BYTES, *,
                 lengths: list[int] | None = None) -> tuple[int, int]:
    """(read, written): packed cache bytes of B·L token-heads (of sum(lengths) with ``lengths``) + the query; the
    output."""
    tokens = b * l if lengths is None else sum(lengths)
    return tokens * hk * _slot(spec) + b * hq * spec.head_dim * elt, b * hq * spec.head_dim * elt


def store_bytes(spec, n: int, hk: int, elt: int = DTYPE_BYTES) -> tuple[int, int]:
    """(read, written): K and V [N, Hk, D] + the int32 slot mapping; N·Hk packed slots."""
    return 2 * n * hk * spec.head_dim * elt + 4 * n, n * hk * _slot(spec)


def dequant_bytes(spec, b: int, l: int, hk: int, elt: int = DTYPE_BYTES) -> tuple[int, int]:
    """(read, written): packed cache bytes; K and V [B, Hk, L, D] in bf16."""
    return b * l * hk * _slot(spec), 2 * b * hk * l * spec.head_dim * elt


def prefill_bytes(spec, b: int, l: int, n: int, hq: int, hk: int, decode_max_tokens: int,
                  elt: int = DTYPE_BYTES, *, ctxs: list[int] | None = None,
                  news: list[int] | None = None) -> tuple[int, int, str]:
    """(read, written, path) of ``kv.prefill`` for B sequences with ``l`` tokens of history and ``n`` new
    (``ctxs`` / ``news``: each sequence's, a mixed batch; the path then names each one its sequences take).

    Every path stores the new K/V first. ``sdpa`` (no history: a new prompt): SDPA over its own bf16 K/V.
    ``decode`` path (n ≤ decode_max_tokens): one decode query per new token over its own length (l + j), so
    the history is read n times. ``dequant+sdpa`` path: the whole sequence (l + n tokens) is dequantised to bf16
    once, then SDPA reads those bf16 K/V."""
    d, slot = spec.head_dim, _slot(spec)
    ctxs, news = ctxs or [l] * b, news or [n] * b
    rd, wr = store_bytes(spec, sum(news), hk, elt)
    paths: list[str] = []
    for c, m in zip(ctxs, news):
        q = o = m * hq * d * elt
        if c == 0:
            path, r, w = "sdpa", 2 * m * hk * d * elt + q, o
        elif m <= decode_max_tokens:
            path, r, w = "decode", hk * slot * (m * c + m * (m + 1) // 2) + q, o
        else:
            bf16_kv = 2 * (c + m) * hk * d * elt
            path, r, w = "dequant+sdpa", (c + m) * hk * slot + bf16_kv + q, bf16_kv + o
        rd, wr = rd + r, wr + w
        if path not in paths:
            paths.append(path)
    return rd, wr, " / ".join(paths)


def sdpa_decode_bytes(b: int, l: int, hq: int, hk: int, d: int, elt: int = DTYPE_BYTES,
                      lengths: list[int] | None = None) -> int:
    """bf16 K and V [B, Hk, L, D] (``lengths``: the tokens each sequence has) + query + output."""
    tokens = sum(lengths) if lengths else b * l
    return 2 * tokens * hk * d * elt + 2 * b * hq * d * elt


def pct_of_ceiling(nbytes: int, seconds: float, ceiling_bps: float) -> float:
    return 100.0 * nbytes / seconds / ceiling_bps


# =========================================================================== device and timing
def source_digest(root: Path | None = None) -> str:
    """sha256 (12 hex digits) of tqgen's sources (``*.py``, templates, tuning tables) below ``root`` (default: the
    package), by relative path and content: the results name the code that ran even where the checkout's git
    metadata is stale (a copied tree on another machine). ``python -c "from tqgen.bench import source_digest as d;
    print(d())"`` gives the digest of a checkout."""
    root = root or Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".py", ".j2", ".json")
                    and "__pycache__" not in p.parts):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def device_short_name(dev) -> str:
    import torch
    if dev.type != "cuda":
        return "cpu"
    s = torch.cuda.get_device_name(dev).lower()
    for w in ("nvidia", "amd", "geforce", "instinct", "radeon", "tesla"):
        s = s.replace(w, " ")
    toks = re.findall(r"[a-z0-9]+", s)
    return "-".join(toks[:2]) or "gpu"


def _free_bytes(dev) -> int:
    import torch
    if dev.type == "cuda":
        return torch.cuda.mem_get_info(dev)[0]
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 << 30


def _sync(dev) -> None:
    import torch
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def hold_us(issue_s: list[float]) -> float:
    """The GPU hold before a timed rep (``Timer``): twice the host's longest time to issue one call (seconds, measured
    without a sync), within ``HOLD_MIN_US`` .. ``HOLD_MAX_US``."""
    return min(HOLD_MAX_US, max(HOLD_MIN_US, 2e6 * max(issue_s, default=0.0)))


class GpuHold:
    """A spin kernel (``torch.cuda._sleep``) that keeps the GPU busy for about ``us`` microseconds while the host
    issues what comes after it; its clock cycles a microsecond calibrated once a device by CUDA events."""

    _cycles_per_us: dict = {}

    def __init__(self, dev):
        self.dev = dev

    def cycles_per_us(self) -> float:
        import torch
        key = self.dev.index if self.dev.index is not None else torch.cuda.current_device()
        if key not in self._cycles_per_us:
            n = 1 << 20
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(1000)  # the spin kernel loaded
            a.record()
            torch.cuda._sleep(n)
            b.record()
            b.synchronize()
            self._cycles_per_us[key] = n / max(a.elapsed_time(b) * 1e3, 1e-3)
        return self._cycles_per_us[key]

    def __call__(self, us: float) -> None:
        import torch
        torch.cuda._sleep(max(1, int(us * self.cycles_per_us())))


class Timer:
    """Median / min per-call time of a list of equivalent calls (one per input set, used in turn).

    On a GPU each rep is CUDA events around the call, queued behind a hold (``GpuHold``, ``hold_us``): a spin kernel
    longer than the host takes to issue the call, so that the call's launches are all queued when its start event
    runs and the interval is its GPU work. Without it a call shorter on the GPU than on the host (eager launches:
    ~55 us a decode call on the H200's host) was timed as its host time: the GPU waited between reps (in
    h200-2026-12-02-full-cuda-decode.md none of the 378 rotated eager rows is under 54 us, rows of 79-110 MB among
    them, where the flushed ones go down to 11 us; in -full-store.md the head_dim-64 store's 64K-token rows took 64-71
    us rotated and 30-40 us flushed, the flush's 256 MB zeroing having hidden the host).
    ``hold=False``: no hold (the test that shows the difference)."""

    def __init__(self, dev, reps: int, warmup: int, hold: bool = True):
        import torch
        self.dev, self.reps, self.warmup = dev, reps, warmup
        self.cuda = dev.type == "cuda"
        self.flush_buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=dev) if self.cuda else None
        self.hold = GpuHold(dev) if self.cuda and hold else None
        self.last_hold_us = 0.0  # the last case's hold (us)

    def __call__(self, fns: list[Callable[[], Any]], *, flush: bool) -> tuple[float, float, int]:
        import torch
        n = len(fns)
        for i in range(self.warmup):
            fns[i % n]()
        ts: list[float] = []
        if self.cuda:
            _sync(self.dev)
            issue = []
            t0 = time.perf_counter()
            for i in range(n):  # one call per set: a time estimate that bounds the reps, and the host's issue time
                if flush:
                    self.flush_buf.zero_()
                t = time.perf_counter()
                fns[i]()
                issue.append(time.perf_counter() - t)
            _sync(self.dev)
            est = (time.perf_counter() - t0) / n
            reps = max(3, min(self.reps, int(MAX_CASE_TIMING_S / max(est, 1e-7))))
            self.last_hold_us = hold_us(issue) if self.hold else 0.0
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
            for r in range(reps):
                if flush:
                    self.flush_buf.zero_()
                if self.hold:
                    self.hold(self.last_hold_us)
                ev[r][0].record()
                fns[r % n]()
                ev[r][1].record()
            _sync(self.dev)
            ts = [a.elapsed_time(b) * 1e-3 for a, b in ev]
        else:
            reps = self.reps
            for r in range(reps):
                t = time.perf_counter()
                fns[r % n]()
                ts.append(time.perf_counter() - t)
        return statistics.median(ts), min(ts), reps


# =========================================================================== the run context
@dataclass
class Options:
    suite: str
    ops: tuple[str, ...]
    presets: tuple[str, ...]
    layouts: tuple[str, ...]
    backends: tuple[str, ...] | None  # None: every backend of the device chain
    out: Path
    tag: str | None
    reps: int | None
    warmup: int | None
    sets: int | None
    l2: str
    plot: bool
    max_memory_gib: float | None
    budget_s: float | None
    block_size: int
    check: bool
    device: str | None
    command: str
    cuda_graph: bool = False
    l2_floor: bool = False
    gpu_hold: bool = True


class Bench:
    """State of one run: device, ceiling, baselines (cached per shape), loaded runtimes, rows."""

    def __init__(self, o: Options):
        import torch
        import tqgen_runtime as tqr
        self.o, self.tqr = o, tqr
        self.dev = torch.device(o.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.cuda = self.dev.type == "cuda"
        self.target, _, self.target_note = tqr.detect_target(self.dev)
        self.dtype = torch.bfloat16
        self.limit = tqr.PREFILL_DECODE_MAX_TOKENS
        free = _free_bytes(self.dev)
        self.max_mem = int(o.max_memory_gib * 2**30) if o.max_memory_gib else int(0.8 * free)
        self.timer = Timer(self.dev, o.reps or (20 if self.cuda else 2), o.warmup if o.warmup is not None
                           else (5 if self.cuda else 0), hold=o.gpu_hold)
        self.sets = o.sets or (2 if self.cuda else 1)
        self.max_mem -= FLUSH_BYTES if self.cuda else 0
        props = torch.cuda.get_device_properties(self.dev) if self.cuda else None
        self.l2 = int(getattr(props, "L2_cache_size", 50 << 20) or (50 << 20)) if self.cuda else 0
        self.chunk = 65536 if self.cuda else 4096
        self.rows: list[dict] = []
        self.sdpa: dict[tuple, dict] = {}
        self.paged: dict[tuple, dict] = {}
        self.warnings: list[str] = []
        self._graphs: list = []
        self.progress = None
        self.t_start = time.monotonic()
        self.deadline = self.t_start + o.budget_s if o.budget_s else None
        self.meta = self._meta(props, free)
        self.ceiling = self.copy_ceiling()
        self.meta["copy_ceiling_GBps"] = self.ceiling / 1e9
        self.meta["paged_bf16_decode"] = self._paged_available()

    # ------------------------------------------------------------------ meta
    def _meta(self, props, free) -> dict:
        import torch
        try:
            import triton
            tv = triton.__version__
        except Exception as e:  # noqa: BLE001 - the version line only
            tv = f"not importable ({type(e).__name__})"
        from . import __version__
        try:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                                    timeout=5).stdout.strip() or None
            # tracked files that differ from HEAD (a copied working tree, uncommitted edits): say so
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            if commit and dirty:
                commit += "+modified"
        except Exception:  # noqa: BLE001
            commit = None
        cpu = f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
        name = torch.cuda.get_device_name(self.dev) if self.cuda else cpu
        m = dict(device=name, device_short=device_short_name(self.dev), target=str(self.target),
                 target_note=self.target_note, torch=torch.__version__, triton=tv, python=platform.python_version(),
                 tqgen=__version__, git_commit=commit, sources=source_digest(), cuda=getattr(torch.version, "cuda", None),
                 date=_dt.datetime.now().isoformat(timespec="seconds"), command=self.o.command, suite=self.o.suite,
                 dtype="bfloat16", block_size=self.o.block_size, prefill_decode_max_tokens=self.limit,
                 max_memory_GiB=self.max_mem / 2**30, free_memory_GiB=free / 2**30,
                 triton_interpret=os.environ.get("TRITON_INTERPRET") == "1")
        if props is not None:
            m.update(sms=props.multi_processor_count, l2_MB=self.l2 / 1e6 if hasattr(props, "L2_cache_size") else None,
                     total_memory_GiB=props.total_memory / 2**30, capability=f"{props.major}.{props.minor}")
        reps = self.timer.reps
        if self.cuda:
            held = (f"queued behind a GPU hold (a spin kernel of twice the host's time to issue one call, "
                    f"{HOLD_MIN_US:.0f}-{HOLD_MAX_US:.0f} us: the interval is the call's GPU work, not the host's launches)"
                    if self.timer.hold else "without a GPU hold (--no-gpu-hold: a call shorter on the GPU than on the "
                    "host is timed as its host's launches)")
            m["timing"] = (f"CUDA events around each call, {held}; {self.timer.warmup} warm-up calls, then up to {reps} "
                           f"reps (at least 3, about {MAX_CASE_TIMING_S:.0f} s per case at most); median and min")
            m["l2_policy"] = (f"--l2 {self.o.l2}: 'rotate' = {self.sets} input sets (caches, block tables, queries), "
                              f"each larger than the {self.l2 / 1e6:.0f} MB L2, used in turn; 'flush' = a "
                              f"{FLUSH_BYTES / 1e6:.0f} MB buffer zeroed before every rep (outside the timed "
                              "interval) when a set is smaller than L2; each row says which")
        else:
            m["timing"] = (f"time.perf_counter around each call; {self.timer.warmup} warm-up call(s), "
                           f"up to {reps} reps; median and min (CPU: no L2 policy)")
            m["l2_policy"] = f"cpu: {self.sets} input set(s) used in turn"
        return m

    # ------------------------------------------------------------------ memory, L2, progress
    def fits(self, nbytes: int) -> bool:
        return nbytes <= self.max_mem

    def sets_for(self, per_set: int, temp: int = 0) -> int:
        for s in range(self.sets, 0, -1):
            if self.fits(s * per_set + temp):
                return s
        return 0

    def l2_plan(self, per_set: int, sets: int) -> tuple[bool, str]:
        if not self.cuda:
            return False, f"cpu, {sets} set(s)"
        gb = per_set / 1e9
        mode = self.o.l2
        if mode == "flush":
            return True, f"flush {FLUSH_BYTES // 10**6} MB"
        if sets >= 2 and per_set >= self.l2:
            return False, f"rotate {sets}x{gb:.2f} GB"
        if mode == "auto" and sets == 1 and per_set >= 4 * self.l2:
            return False, f"1 set of {gb:.2f} GB (>= 4x L2)"
        return True, f"flush {FLUSH_BYTES // 10**6} MB"

    def say(self, msg: str) -> None:
        if self.progress is not None:
            self.progress.write(msg)
        else:
            print(msg, file=sys.stderr, flush=True)

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    # ------------------------------------------------------------------ baselines
    def copy_ceiling(self, key: str = "copy") -> float:
        import torch
        n = COPY_BYTES_GPU if self.cuda else COPY_BYTES_CPU
        x = torch.empty(n, dtype=torch.uint8, device=self.dev)
        x.fill_(1)
        y = torch.empty_like(x)
        med, mn, reps = self.timer([lambda: y.copy_(x)], flush=False)
        del x, y
        self.meta[key] = dict(bytes=n, median_us=med * 1e6, min_us=mn * 1e6, reps=reps)
        return 2 * n / med

    def _measure_sdpa(self, key, make: Callable[[], tuple], nbytes: int, per_set: int) -> dict:
        """Time F.scaled_dot_product_attention on inputs from ``make()`` (q, k, v, mask or None)."""
        import torch
        import torch.nn.functional as F
        sets = self.sets_for(per_set)
        entry: dict[str, Any] = dict(bytes=nbytes, us=None, min_us=None, note="")
        if sets == 0:
            entry["note"] = f"skipped: inputs {per_set / 2**30:.1f} GiB > --max-memory-gib {self.max_mem / 2**30:.1f}"
            return entry
        try:
            ins = [make() for _ in range(sets)]
            q, k, v, mask = ins[0]
            gqa = q.shape[1] != k.shape[1]
            how = "enable_gqa=True" if gqa else "Hq == Hk"
            try:
                F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)
                fns = [lambda i=i: F.scaled_dot_product_attention(i[0], i[1], i[2], attn_mask=i[3], enable_gqa=gqa)
                       for i in ins]
            except (TypeError, RuntimeError) as e:
                if not gqa:
                    raise
                g = q.shape[1] // k.shape[1]
                how = f"repeat_interleave (enable_gqa failed: {type(e).__name__}); K/V expanded to Hq heads"
                ins = [(a, b.repeat_interleave(g, 1), c.repeat_interleave(g, 1), m) for a, b, c, m in ins]
                fns = [lambda i=i: F.scaled_dot_product_attention(i[0], i[1], i[2], attn_mask=i[3]) for i in ins]
            flush, l2 = self.l2_plan(per_set, sets)
            med, mn, reps = self.timer(fns, flush=flush)
            entry.update(us=med * 1e6, min_us=mn * 1e6, reps=reps, l2=l2, note=how,
                         GBps=nbytes / med / 1e9, pct_ceiling=pct_of_ceiling(nbytes, med, self.ceiling))
        except Exception as e:  # noqa: BLE001 - a baseline that fails is reported, not fatal
            entry["note"] = f"SDPA failed: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
            self.say(f"[bench] bf16 SDPA {key}: {entry['note']}")
        finally:
            ins = fns = None  # noqa: F841
            self._free()
        return entry

    def sdpa_decode(self, b, l, hq, hk, d) -> dict:
        import torch
        key = ("decode", b, l, hq, hk, d)
        if key not in self.sdpa:
            def make():
                return (torch.randn(b, hq, 1, d, dtype=self.dtype, device=self.dev),
                        torch.randn(b, hk, l, d, dtype=self.dtype, device=self.dev),
                        torch.randn(b, hk, l, d, dtype=self.dtype, device=self.dev), None)
            nbytes = sdpa_decode_bytes(b, l, hq, hk, d)
            e = self._measure_sdpa(key, make, nbytes, nbytes)
            e.update(op="decode", B=b, L=l, Hq=hq, Hk=hk, D=d)
            self.sdpa[key] = e
        return self.sdpa[key]

    def sdpa_prefill(self, b, l, n, hq, hk, d) -> dict:
        """bf16 SDPA of a continuation chunk: query [B, Hq, n, D] over contiguous K/V [B, Hk, l+n, D],
        bottom-right causal (torch.nn.attention.bias.causal_lower_right)."""
        import torch
        key = ("prefill", b, l, n, hq, hk, d)
        if key not in self.sdpa:
            from torch.nn.attention.bias import causal_lower_right
            t = l + n

            def make():
                return (torch.randn(b, hq, n, d, dtype=self.dtype, device=self.dev),
                        torch.randn(b, hk, t, d, dtype=self.dtype, device=self.dev),
                        torch.randn(b, hk, t, d, dtype=self.dtype, device=self.dev), causal_lower_right(n, t))
            nbytes = 2 * b * hk * t * d * DTYPE_BYTES + 2 * b * hq * n * d * DTYPE_BYTES
            e = self._measure_sdpa(key, make, nbytes, nbytes)
            e.update(op="prefill", B=b, L=l, N=n, Hq=hq, Hk=hk, D=d)
            self.sdpa[key] = e
        return self.sdpa[key]

    def _paged_available(self) -> str:
        if not self.cuda:
            return "n/a: CPU run"
        try:
            from flash_attn import flash_attn_with_kvcache  # noqa: F401
            return "flash_attn.flash_attn_with_kvcache (bf16, page 256)"
        except Exception:  # noqa: BLE001
            pass
        from .baselines import FLEX_PAGE, flex_available
        why = flex_available()
        if why is None:
            return (f"flex: torch.compile(flex_attention) over a page pool, block table as its BlockMask "
                    f"(torch's flex-decoding Triton kernel; bf16, page {FLEX_PAGE}; flash-attn not installed)")
        return f"n/a: no bf16 paged decode (flash-attn not importable; {why})"

    def paged_decode(self, b, l, hq, hk, d, lengths: list[int] | None = None) -> dict:
        """bf16 paged decode: flash-attn's flash_attn_with_kvcache when installed, else torch's compiled
        FlexAttention over a page pool (``tqgen.baselines.FlexPagedDecode``, its output checked against SDPA
        on the first and last sequences' gathered pages); ``lengths``: a mixed-length batch's, the longest ``l``."""
        import torch
        key = (b, l, hq, hk, d, tuple(lengths) if lengths else None)
        if key in self.paged:
            return self.paged[key]
        e: dict[str, Any] = dict(op="decode", B=b, L=l, Hq=hq, Hk=hk, D=d, mix=bool(lengths), us=None,
                                 note=self.meta["paged_bf16_decode"])
        e["bytes"] = sdpa_decode_bytes(b, l, hq, hk, d, lengths=lengths)  # of the tokens there are
        self.paged[key] = e
        how = self.meta["paged_bf16_decode"]
        if not how.startswith(("flash_attn", "flex")):
            return e
        flex = how.startswith("flex")
        if flex:
            from .baselines import FLEX_PAGE, FlexPagedDecode
        page = FLEX_PAGE if flex else 256
        lens = lengths or [l] * b
        nbpb = -(-l // page)
        per_set = 2 * b * nbpb * page * hk * d * DTYPE_BYTES
        sets = self.sets_for(per_set)
        if sets == 0:
            e["note"] = "skipped: memory"
            return e
        ins = fns = None
        try:
            ins = []
            for _ in range(sets):
                bt = torch.randperm(b * nbpb, device=self.dev).to(torch.int32).view(b, nbpb)
                q = torch.randn(b, hq, d, dtype=self.dtype, device=self.dev)
                if flex:
                    kc = torch.randn(1, hk, b * nbpb * page, d, dtype=self.dtype, device=self.dev)
                    vc = torch.randn_like(kc)
                    ins.append((q, kc, vc, FlexPagedDecode(kc, vc, bt, lens, page=page), bt))
                else:
                    kc = torch.randn(b * nbpb, page, hk, d, dtype=self.dtype, device=self.dev)
                    vc = torch.randn_like(kc)
                    sl = torch.tensor(lens, dtype=torch.int32, device=self.dev)
                    ins.append((q.unsqueeze(1), kc, vc, sl, bt))
            if flex:
                fns = [lambda i=i: i[3](i[0]) for i in ins]
                e["max_err"] = self._flex_check(ins[0], lens, page)
            else:
                from flash_attn import flash_attn_with_kvcache
                fns = [lambda i=i: flash_attn_with_kvcache(i[0], i[1], i[2], cache_seqlens=i[3], block_table=i[4])
                       for i in ins]
            if flex and self.o.cuda_graph:  # like the decodes: the kernel, not dynamo's guards and launches
                fns = [self.graphed(f) for f in fns]
            flush, l2 = self.l2_plan(per_set, sets)
            med, mn, _ = self.timer(fns, flush=flush)
            e.update(us=med * 1e6, min_us=mn * 1e6, l2=l2, GBps=e["bytes"] / med / 1e9,
                     pct_ceiling=pct_of_ceiling(e["bytes"], med, self.ceiling))
            if flex:
                mode = "graph" if self.o.cuda_graph else "eager"
                e["note"] = f"flex page {page}, {mode}, max |err| vs SDPA {e['max_err']:.1e}"
        except Exception as ex:  # noqa: BLE001
            e["note"] = f"bf16 paged decode failed: {type(ex).__name__}: {ex}"[:200]
            self.say(f"[bench] paged bf16 {key}: {e['note']}")
        finally:
            ins = fns = None  # noqa: F841
            self._free()
        return e

    def _flex_check(self, inp, lens: list[int], page: int) -> float:
        """The flex baseline's first and last sequences against SDPA on their gathered pages (bf16 both)."""
        import torch.nn.functional as F

        from .baselines import gather_pages
        q, kc, vc, fn, bt = inp
        out = fn(q)
        err = 0.0
        for s in sorted({0, len(lens) - 1}):
            k, v = (gather_pages(x, bt[s], lens[s], page) for x in (kc, vc))
            ref = F.scaled_dot_product_attention(q[s:s + 1, :, None], k, v,
                                                 enable_gqa=q.shape[1] != kc.shape[1])[:, :, 0]
            err = max(err, (ref.float() - out[s:s + 1].float()).abs().max().item())
        return err

    def graphed(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        """``fn`` captured once in a CUDA graph; returns the replay."""
        import torch
        st = torch.cuda.Stream(self.dev)
        st.wait_stream(torch.cuda.current_stream(self.dev))
        with torch.cuda.stream(st):
            for _ in range(2):
                fn()
        torch.cuda.current_stream(self.dev).wait_stream(st)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        self._graphs.append(g)
        return g.replay

    def _free(self) -> None:
        import gc
        import torch
        if self.cuda:
            gc.collect()
            torch.cuda.empty_cache()

    # ------------------------------------------------------------------ inputs
    def paged_cache(self, kv, b: int, l: int, hk: int, d: int, extra: int = 0, lengths: list[int] | None = None):
        """A cache for B sequences of ``l`` stored tokens (+ ``extra`` free slots each), block table a
        random permutation of the blocks; K/V random (keys ×2), written by the backend's store. ``lengths``: only
        the first ``lengths[i]`` tokens of sequence i are stored (a mixed-length batch; room for ``l`` each)."""
        import torch
        bs = kv.spec.block_size
        nbpb = max(1, -(-(l + extra) // bs))
        cache = kv.allocate(b * nbpb)
        bt = torch.randperm(b * nbpb, device=self.dev).to(torch.int32).view(b, nbpb)
        lens = torch.tensor(lengths if lengths is not None else [l] * b, device=self.dev)
        seq_of = torch.repeat_interleave(torch.arange(b, device=self.dev), lens)  # token -> its sequence
        first = torch.cumsum(lens, 0) - lens  # each sequence's first token
        total = int(lens.sum())
        for s0 in range(0, total, self.chunk):
            m = min(self.chunk, total - s0)
            pos = torch.arange(s0, s0 + m, device=self.dev)
            seq = seq_of[s0:s0 + m]
            p = pos - first[seq]
            slots = (bt[seq, p // bs].long() * bs + p % bs).to(torch.int32)
            k = torch.randn(m, hk, d, dtype=self.dtype, device=self.dev) * 2
            v = torch.randn(m, hk, d, dtype=self.dtype, device=self.dev)
            kv.store(k, v, cache, slots, check=False)
        return cache, bt

    # ------------------------------------------------------------------ guards
    def guard_decode(self, kv, backend, q, cache, bt, sl, out, b, l, mixed: bool = False) -> str:
        """The first call's output against the reference on a slice: its first GUARD_SEQS sequences where they are
        short (or the batch's lengths are mixed: the split plan depends on the whole batch), else a second call
        on GUARD_TOKENS of them."""
        import torch
        from . import reference as ref
        from .testing import DECODE_TOL, rel_err
        if not bool(torch.isfinite(out).all()):
            return "MISMATCH: non-finite values in the output"
        if backend == "reference":
            return "oracle"
        nb, bs = min(GUARD_SEQS, b), kv.spec.block_size
        if l <= GUARD_TOKENS or mixed:
            got, qs, bts, sls = out[:nb], q[:nb], bt[:nb], sl[:nb]
            what = f"first call, {nb} seq x {'/'.join(str(int(x)) for x in sls.tolist())} tok"
        else:
            qs = q[:nb].contiguous()
            bts = bt[:nb, : -(-GUARD_TOKENS // bs)].contiguous()
            sls = torch.full((nb,), GUARD_TOKENS, dtype=torch.int32, device=self.dev)
            got = kv.decode(qs, cache, bts, sls, check=False)
            what = f"same cache, {nb} seq x {GUARD_TOKENS} tok"
        want = ref.decode(kv.spec, qs, cache, bts, sls)
        err, tol = rel_err(got, want), DECODE_TOL[q.dtype]
        if err > tol:
            return f"MISMATCH: rel err {err:.2e} > {tol:.1e} vs reference ({what})"
        return f"ok {err:.1e} ({what})"

    def guard_dequant(self, kv, backend, deq, cache, bt, b, l) -> str:
        import torch
        from . import reference as ref
        from .testing import rel_err
        if backend == "reference":
            return "oracle"
        nb, bs = min(GUARD_SEQS, b), kv.spec.block_size
        m = min(l, GUARD_TOKENS)
        bts = bt[:nb, : -(-m // bs)].contiguous()
        sls = torch.full((nb,), m, dtype=torch.int32, device=self.dev)
        k, v = deq(cache, bts, sls, m)
        wk, wv = ref.dequant(kv.spec, cache, bts, sls)
        err = max(rel_err(k, wk), rel_err(v, wv))
        tol = 2 ** -7
        if not (bool(torch.isfinite(k).all()) and bool(torch.isfinite(v).all())) or err > tol:
            return f"MISMATCH: rel err {err:.2e} > {tol:.1e} vs reference ({nb} seq x {m} tok)"
        return f"ok {err:.1e} ({nb} seq x {m} tok)"

    def guard_store(self, kv, backend, k, v, hk) -> str:
        import torch
        from . import reference as ref
        from .testing import compare_store
        if backend == "reference":
            return "oracle"
        m = min(STORE_GUARD_TOKENS, k.shape[0])
        bs = kv.spec.block_size
        nblk = -(-m // bs)
        slots = torch.randperm(nblk * bs, device=self.dev)[:m].to(torch.int32)
        got, want = kv.allocate(nblk), kv.allocate(nblk)
        kv.store(k[:m], v[:m], got, slots)
        ref.store(kv.spec, k[:m], v[:m], want, slots)
        diff = compare_store(kv.spec, got, want, k[:m], slots)
        return f"ok ({diff.summary()})" if diff.ok else f"MISMATCH: {diff.summary()}"

    # ------------------------------------------------------------------ one case
    def base_row(self, s: Shape, backend: str, preset: str, layout: str, kv=None) -> dict:
        r = dict(op=s.op, backend=backend, preset=preset, layout=layout, variant=None, spec=None,
                 B=s.b if s.op != "store" else None, L=s.l if s.op != "store" else None,
                 N=s.n if s.op in ("store", "prefill") else None, Hq=s.hq if s.op != "store" else None, Hk=s.hk, D=s.d,
                 block_size=self.o.block_size, slot_bytes=None, splits=None, path=None, time_us=None, min_us=None,
                 mode=None, reps=None, sets=None, l2=None, bytes=None, bytes_read=None, bytes_written=None, GBps=None,
                 pct_ceiling=None, sdpa_us=None, vs_sdpa=None, sdpa_note=None, paged_us=None, vs_paged=None,
                 mix=s.mix or None, classic_us=None, vs_classic=None, floor_us=None, floor_pct=None,
                 floor_blocks=None, floor_check=None, check=None, status="ok")
        if kv is not None:
            op_kernel = {"prefill": "decode"}.get(s.op, s.op)
            r.update(variant=kv.variants.get(op_kernel), spec=kv.spec.token, slot_bytes=_slot(kv.spec),
                     variants=dict(kv.variants))
        return r

    def finish(self, r: dict, rd: int, wr: int, med: float, mn: float, reps: int, sets: int, l2: str) -> dict:
        r.update(bytes=rd + wr, bytes_read=rd, bytes_written=wr, time_us=med * 1e6, min_us=mn * 1e6, reps=reps,
                 sets=sets, l2=l2, GBps=(rd + wr) / med / 1e9, pct_ceiling=pct_of_ceiling(rd + wr, med, self.ceiling))
        if r.get("check", "").startswith("MISMATCH"):
            r["status"] = "MISMATCH"
        return r

    def skip_mem(self, r: dict, need: int) -> dict:
        r["status"] = (f"skipped: needs {need / 2**30:.1f} GiB > --max-memory-gib {self.max_mem / 2**30:.1f} "
                       "(default 80 % of free device memory)")
        return r

    def run_decode(self, kv, s: Shape, backend: str, r: dict) -> dict:
        import torch
        b, l, hq, hk, d = s.b, s.l, s.hq, s.hk, s.d
        lens = s.lengths()
        rd, wr = decode_bytes(kv.spec, b, l, hq, hk, lengths=lens)
        bs = kv.spec.block_size
        per_set = b * (-(-l // bs)) * bs * hk * _slot(kv.spec) + b * hq * d * DTYPE_BYTES
        temp = self.chunk * hk * d * DTYPE_BYTES * 3 + b * hq * d * 4 * 64 * 2
        sets = self.sets_for(per_set, temp)
        if sets == 0:
            return self.skip_mem(r, per_set + temp)
        if s.mix:  # no dense bf16 equivalent; the classic split grid on the same batch is the comparison
            sd = dict(us=None, note="mixed lengths: no dense SDPA equivalent (x classic: the same kernel, classic grid)")
        else:
            sd = self.sdpa_decode(b, l, hq, hk, d)
        pg = self.paged_decode(b, l, hq, hk, d, lengths=lens if s.mix else None)
        ins = []
        for _ in range(sets):
            cache, bt = self.paged_cache(kv, b, l, hk, d, lengths=lens)
            ins.append((torch.randn(b, hq, d, dtype=self.dtype, device=self.dev), cache, bt,
                        torch.tensor(lens, dtype=torch.int32, device=self.dev)))
        try:
            ws = kv.workspace(b, l)
        except Exception as e:  # noqa: BLE001 - a backend without a workspace runs with its defaults
            ws = None
            self.say(f"[bench] kv.workspace failed for {backend}: {e}; decode allocates its own scratch")
        if ws is not None and getattr(ws, "buffers", None) is not None:
            r["splits"] = ws.num_splits
        # a mixed batch on a decode with balanced splits (C++, Triton): those timed, and the classic grid on the same inputs
        modes = [True, False] if s.mix and kv.balanced_decode else [None]
        q, cache, bt, sl = ins[0]
        if modes[0]:
            r["path"] = "balanced"
        times = []
        for bal in modes:
            kw = {} if bal is None else {"balanced": bal}
            fns = [lambda i=i, kw=kw: kv.decode(i[0], i[1], i[2], i[3], workspace=ws, check=False, **kw) for i in ins]
            out0 = fns[0]()
            check = self.guard_decode(kv, backend, q, cache, bt, sl, out0, b, l, mixed=bool(s.mix)) \
                if self.o.check else "not checked"
            if bal is not False:
                r["check"] = check
            elif check.startswith("MISMATCH"):
                r["check"] = f"classic grid: {check}"
            r["mode"] = "eager"
            if self.o.cuda_graph and self.cuda:
                try:
                    fns = [self.graphed(f) for f in fns]
                    r["mode"] = "graph"
                except Exception as e:  # noqa: BLE001 - a backend that cannot be captured runs eagerly
                    r["mode"] = f"eager (graph capture failed: {type(e).__name__})"
                    self.say(f"[bench] {backend}: CUDA-graph capture failed ({e}); timing eager calls")
            flush, l2 = self.l2_plan(per_set, sets)
            times.append(self.timer(fns, flush=flush))
            fns = out0 = None
            self._graphs.clear()
        (med, mn, reps) = times[0]
        self.finish(r, rd, wr, med, mn, reps, sets, l2)
        if self.o.l2_floor and not s.mix:
            self.run_floor(kv, backend, r, q, cache, bt, sl, ws, rd + wr)
        ins = q = cache = bt = sl = None  # noqa: F841
        if len(times) > 1:
            r.update(classic_us=times[1][0] * 1e6, vs_classic=times[1][0] / med)
        r.update(sdpa_us=sd["us"], sdpa_note=sd["note"], paged_us=pg["us"],
                 vs_sdpa=sd["us"] / r["time_us"] if sd["us"] else None,
                 vs_paged=pg["us"] / r["time_us"] if pg["us"] else None)
        return r

    def run_floor(self, kv, backend: str, r: dict, q, cache, bt, sl, ws, nbytes: int) -> None:
        """--l2-floor: the same decode (same batch, lengths, split count, launch mode) with every block-table entry
        folded into a pool of blocks a quarter of the L2 holds (entry mod pool: sequences share blocks, as with a
        shared prefix), so that its reads hit L2 and not HBM. The instructions are the same, so its time is what the
        kernel's own work allows: floor_pct = the packed bytes over that time, as % of the copy ceiling. A decode
        below a target whose floor is also below it is bound by its instructions (issue, ALU pipe), not by memory;
        one whose floor is well above it has a memory-side gap (latency, bytes in flight). Checked against the
        reference like the main call."""
        btf, pool = l2_floor_table(kv.spec, bt, cache.shape[2], self.l2 or FLOOR_CPU_L2_BYTES)
        fn = lambda: kv.decode(q, cache, btf, sl, workspace=ws, check=False)  # noqa: E731
        out = fn()
        check = self.guard_decode(kv, backend, q, cache, btf, sl, out, q.shape[0], int(sl.max())) \
            if self.o.check else "not checked"
        if self.o.cuda_graph and self.cuda and r.get("mode") == "graph":
            fn = self.graphed(fn)
        med, _, _ = self.timer([fn], flush=False)
        self._graphs.clear()
        r.update(floor_us=med * 1e6, floor_pct=pct_of_ceiling(nbytes, med, self.ceiling), floor_blocks=pool,
                 floor_check=check)
        if check.startswith("MISMATCH"):
            r.update(status="MISMATCH", check=f"{r.get('check')}; L2 floor: {check}")

    def run_store(self, kv, s: Shape, backend: str, r: dict) -> dict:
        import torch
        n, hk, d = s.n, s.hk, s.d
        rd, wr = store_bytes(kv.spec, n, hk)
        bs = kv.spec.block_size
        nblk = -(-n // bs)
        per_set = rd + nblk * bs * hk * _slot(kv.spec)
        sets = self.sets_for(per_set)
        if sets == 0:
            return self.skip_mem(r, per_set)
        ins = []
        for _ in range(sets):
            perm = torch.randperm(nblk, device=self.dev)
            t = torch.arange(n, device=self.dev)
            slots = (perm[t // bs] * bs + t % bs).to(torch.int32)  # whole blocks in random order
            k = torch.randn(n, hk, d, dtype=self.dtype, device=self.dev) * 2
            v = torch.randn(n, hk, d, dtype=self.dtype, device=self.dev)
            ins.append((k, v, kv.allocate(nblk), slots))
        fns = [lambda i=i: kv.store(i[0], i[1], i[2], i[3], check=False) for i in ins]
        fns[0]()
        r["check"] = self.guard_store(kv, backend, ins[0][0], ins[0][1], hk) if self.o.check else "not checked"
        flush, l2 = self.l2_plan(per_set, sets)
        med, mn, reps = self.timer(fns, flush=flush)
        ins = fns = None  # noqa: F841
        return self.finish(r, rd, wr, med, mn, reps, sets, l2)

    def _dequant_fn(self, kv):
        """The dequant kernel without its host-syncing argument checks (TurboQuantKV.dequant has no check=)."""
        import inspect
        impl = getattr(kv, "_impl", {}).get("dequant")
        try:
            if impl is not None and "check" in inspect.signature(impl.dequant).parameters:
                return lambda c, bt, sl, m: impl.dequant(c, bt, sl, m, self.dtype, check=False)
        except (TypeError, ValueError):
            pass
        return lambda c, bt, sl, m: kv.dequant(c, bt, sl, m, self.dtype)

    def run_dequant(self, kv, s: Shape, backend: str, r: dict) -> dict:
        import torch
        b, l, hq, hk, d = s.b, s.l, s.hq, s.hk, s.d
        rd, wr = dequant_bytes(kv.spec, b, l, hk)
        bs = kv.spec.block_size
        per_set = b * (-(-l // bs)) * bs * hk * _slot(kv.spec)
        temp = 2 * wr + self.chunk * hk * d * DTYPE_BYTES * 3
        sets = self.sets_for(per_set, temp)
        if sets == 0:
            return self.skip_mem(r, per_set + temp)
        sd = self.sdpa_decode(b, l, hq, hk, d)
        deq = self._dequant_fn(kv)
        ins = []
        for _ in range(sets):
            cache, bt = self.paged_cache(kv, b, l, hk, d)
            ins.append((cache, bt, torch.full((b,), l, dtype=torch.int32, device=self.dev)))
        fns = [lambda i=i: deq(i[0], i[1], i[2], l) for i in ins]
        fns[0]()
        r["check"] = self.guard_dequant(kv, backend, deq, ins[0][0], ins[0][1], b, l) if self.o.check else "not checked"
        flush, l2 = self.l2_plan(per_set, sets)
        med, mn, reps = self.timer(fns, flush=flush)
        ins = fns = None  # noqa: F841
        self.finish(r, rd, wr, med, mn, reps, sets, l2)
        r.update(sdpa_us=sd["us"], sdpa_note=sd["note"], vs_sdpa=sd["us"] / r["time_us"] if sd["us"] else None)
        return r

    def run_prefill(self, kv, s: Shape, backend: str, r: dict) -> dict:
        """``kv.prefill`` of B chunks (``prefill_lengths``). A mixed batch is timed twice: as the runtime runs it (chunks
        of different lengths or histories padded into shared SDPA calls where the device's bound allows,
        ``tqgen_runtime.api._pad_groups``), and with the padding bound 0 (one call a run of equal chunks, "classic");
        x SDPA is over one bf16 SDPA call of the batch padded to its longest history and chunk."""
        import torch
        b, hq, hk, d = s.b, s.hq, s.hk, s.d
        ctxs, news = prefill_lengths(s.mix, b, s.l, s.n)
        l, n = max(ctxs), max(news)
        rd, wr, path = prefill_bytes(kv.spec, b, l, n, hq, hk, self.limit, ctxs=ctxs, news=news)
        r["path"] = path
        bs = kv.spec.block_size
        nbpb = -(-(l + n) // bs)
        t = sum(news)
        per_set = b * nbpb * bs * hk * _slot(kv.spec) + t * (hq + 2 * hk) * d * DTYPE_BYTES
        temp = 4 * (l + n) * hk * d * DTYPE_BYTES + self.chunk * hk * d * DTYPE_BYTES * 3
        sets = self.sets_for(per_set, temp)
        if sets == 0:
            return self.skip_mem(r, per_set + temp)
        sd = self.sdpa_prefill(b, l, n, hq, hk, d)
        seq = torch.repeat_interleave(torch.arange(b), torch.tensor(news))  # new token -> its sequence
        pos = torch.cat([torch.arange(c, c + m) for c, m in zip(ctxs, news)])  # -> its position
        seq, pos = seq.to(self.dev), pos.to(self.dev)
        ins = []
        for _ in range(sets):
            cache, bt = self.paged_cache(kv, b, l, hk, d, extra=n, lengths=ctxs)
            slots = (bt[seq, pos // bs].long() * bs + pos % bs).to(torch.int32)
            q = torch.randn(t, hq, d, dtype=self.dtype, device=self.dev)
            k = torch.randn(t, hk, d, dtype=self.dtype, device=self.dev) * 2
            v = torch.randn(t, hk, d, dtype=self.dtype, device=self.dev)
            # seq_lens / query_start_loc as host tensors, as a serving loop has them: on device tensors the call
            # would read them back, a sync that lets the GPU drain the hold and wait on the host inside the timed
            # interval (session 36: rows doing the same calls read 0.69-0.92x apart)
            sl = torch.tensor([c + m for c, m in zip(ctxs, news)], dtype=torch.int32)
            qsl = torch.tensor([0] + list(itertools.accumulate(news)), dtype=torch.int32)
            ins.append((q, k, v, cache, slots, bt, sl, qsl))
        # without the argument checks (as decode / store / dequant are timed: serving loops pass check=False)
        fns = [lambda i=i: kv.prefill(*i, check=False) for i in ins]
        out0 = kv.prefill(*ins[0])
        r["check"] = ("ok (finite; prefill composes the checked store/decode/dequant)"
                      if bool(torch.isfinite(out0).all()) else "MISMATCH: non-finite values in the output")
        flush, l2 = self.l2_plan(per_set, sets)
        med, mn, reps = self.timer(fns, flush=flush)
        if s.mix and self._pad_bound() != 0:
            with self._pad_bound_zero():
                r["classic_us"] = self.timer(fns, flush=flush)[0] * 1e6
        ins = fns = out0 = None  # noqa: F841
        self.finish(r, rd, wr, med, mn, reps, sets, l2)
        r.update(sdpa_us=sd["us"], vs_sdpa=sd["us"] / r["time_us"] if sd["us"] else None,
                 sdpa_note=sd["note"] if not s.mix else f"one SDPA call over the batch padded to ctx {l} + {n} new",
                 vs_classic=r["classic_us"] / r["time_us"] if r["classic_us"] else None)
        if r["variants"]:
            first = path.split(" / ")[0]
            r["variant"] = r["variants"].get({"decode": "decode", "sdpa": "store"}.get(first, "dequant"))
        return r

    def _pad_bound(self) -> int:
        """The runtime's prefill padding bound on this device (``tqgen_runtime.api._pad_scores``)."""
        from tqgen_runtime import api
        return api._pad_scores(self.dev)

    @contextlib.contextmanager
    def _pad_bound_zero(self):
        """The runtime's prefill padding bound at 0 (equal chunks share SDPA calls, no others) for the block."""
        from tqgen_runtime import api
        saved = api.PREFILL_PAD_SCORES, api.PREFILL_PAD_SCORES_CPU
        api.PREFILL_PAD_SCORES = api.PREFILL_PAD_SCORES_CPU = 0
        try:
            yield
        finally:
            api.PREFILL_PAD_SCORES, api.PREFILL_PAD_SCORES_CPU = saved

    def run_case(self, kv, s: Shape, backend: str, preset: str, layout: str) -> dict:
        import torch
        r = self.base_row(s, backend, preset, layout, kv)
        if self.out_of_time():
            r["status"] = f"skipped: time budget (--budget-s {self.o.budget_s:g}) used up"
            return r
        try:
            r = getattr(self, f"run_{s.op}")(kv, s, backend, r)
        except getattr(torch.cuda, "OutOfMemoryError", MemoryError) as e:
            r["status"] = f"skipped: out of memory while running ({str(e).splitlines()[0][:120]})"
        except Exception as e:  # noqa: BLE001 - one broken case must not end the run
            r["status"] = f"error: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        finally:
            self._free()
        if r["status"].startswith(("MISMATCH", "error")):
            self.say(f"!!! [bench] {r['status']}: {backend} {preset} {layout} {s.label()}"
                     + (f" -- {r['check']}" if r.get("check") else ""))
        elif r["status"].startswith("skipped"):
            self.say(f"[bench] {s.label()} {backend} {preset} {layout}: {r['status']}")
        return r

    # ------------------------------------------------------------------ loading
    def load(self, backend: str, preset: str, layout: str, hq: int, hk: int, d: int):
        """(kv, None) or (None, 'unavailable: <reason>')."""
        try:
            kv = self.tqr.load(preset, layout=layout, head_dim=d, num_kv_heads=hk, num_q_heads=hq,
                               block_size=self.o.block_size, dtype=self.dtype, device=self.dev, backend=backend,
                               **rotation_for(d, preset))
            return kv, None
        except Exception as e:  # noqa: BLE001 - SelectionError / SpecError / import errors alike
            lines = [x.strip(" -") for x in str(e).splitlines() if x.strip()]
            reason = "; ".join(lines[:3])[:300]
            return None, f"unavailable: {reason}"


# =========================================================================== plan and run
def default_backends(target) -> tuple[str, ...]:
    """Every generic backend of the device's chain; the reference only where nothing else is (CPU)."""
    from tqgen_runtime.select import chain
    from .ir import Target
    names = [c.name for c in chain(target) if c.kind == "generic"]
    if target is not Target.CPU:
        names = [n for n in names if n != "reference"]
    return tuple(dict.fromkeys(names))


def plan_cases(shapes: list[Shape], backends, presets, layouts) -> list[tuple[tuple, list[Shape]]]:
    """[((backend, preset, layout, hq, hk, d), shapes)] grouped so each runtime is loaded once."""
    groups: dict[tuple, list[Shape]] = {}
    heads = list(dict.fromkeys(s.heads for s in shapes))
    for h in heads:
        for be in backends:
            for p in presets:
                for lay in layouts:
                    groups[(be, p, lay) + h] = [s for s in shapes if s.heads == h]
    return list(groups.items())


class _Progress:
    """tqdm when installed, else a stderr line with ETA."""

    def __init__(self, total: int):
        self.total, self.done, self.t0 = total, 0, time.monotonic()
        self.tty = sys.stderr.isatty()
        self.last = 0.0
        try:
            from tqdm import tqdm
            self.bar = tqdm(total=total, file=sys.stderr, unit="case", dynamic_ncols=True,
                            mininterval=0.5 if self.tty else 10.0)
        except ImportError:
            self.bar = None

    def step(self, desc: str) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.set_description_str(desc[:60], refresh=False)
            self.bar.update(1)
            return
        now = time.monotonic()
        if not self.tty and now - self.last < 10 and self.done < self.total:
            return
        self.last = now
        el = now - self.t0
        eta = el / self.done * (self.total - self.done)
        line = (f"[{self.done}/{self.total}] {100 * self.done / self.total:3.0f}% {el:5.0f}s ETA {eta:4.0f}s  "
                f"{desc[:60]}")
        print(("\r" + line.ljust(110)) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def write(self, msg: str) -> None:
        if self.bar is not None:
            self.bar.write(msg, file=sys.stderr)
        else:
            print(("\n" if self.tty else "") + msg, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.tty:
            print(file=sys.stderr)


def estimate_seconds(s: Shape, slot: int = 134, gbps: float = 500.0, reps: int = 20, sets: int = 2) -> float:
    """A rough H200 wall-time guess for one case: input fill + SDPA share + warm-up/reps at ``gbps``
    (today's kernels reach 0.2–1 TB/s) + fixed overhead (guard, allocation, Python)."""
    bw = gbps * 1e9
    if s.op == "store":
        moved = s.n * s.hk * (2 * s.d * 2 + slot)
        fill = 0.0
    elif s.op == "prefill":
        moved = s.b * (s.l + s.n) * s.hk * (slot + 4 * s.d * 2)
        fill = sets * s.b * s.l * s.hk * (2 * s.d * 2 + slot) / 0.5e12
    else:
        moved = s.b * s.l * s.hk * slot + (2 * s.b * s.l * s.hk * s.d * 2 if s.op == "dequant" else 0)
        fill = sets * s.b * s.l * s.hk * (2 * s.d * 2 + slot) / 0.5e12
    call = max(moved / bw, 30e-6) + (FLUSH_BYTES / 3e12 if moved < 50e6 * sets else 0)
    timed = min((reps + 5 + sets) * call, MAX_CASE_TIMING_S + (5 + sets) * call)
    return 0.1 + fill + timed


def _validate(a: argparse.Namespace) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...] | None]:
    presets = tuple(dict.fromkeys(resolve_preset(p).name for p in (a.preset or list(PRESETS))))
    layouts = tuple(dict.fromkeys(str(Layout.parse(x, "layout")) for x in (a.layout or ["aos", "soa"])))
    backends = None
    if a.backend:
        bad = [x for x in a.backend if x not in BACKEND_NAMES]
        if bad:
            raise SpecError([Reason("backend", x, list(BACKEND_NAMES), "") for x in bad], "unknown backend")
        backends = tuple(dict.fromkeys(a.backend))
    if a.sets is not None and a.sets < 1:
        raise SpecError([Reason("sets", a.sets, "at least 1")], "bad option")
    return presets, layouts, backends


def _command_line(a: argparse.Namespace) -> str:
    parts = ["tqgen", "bench", "--suite", a.suite]
    for flag, vals in (("--op", a.op), ("--preset", a.preset), ("--layout", a.layout), ("--head-dim", a.head_dim),
                       ("--gqa", getattr(a, "gqa", None)), ("--backend", a.backend)):
        for v in vals or []:
            parts += [flag, str(v)]
    for flag, v in (("--out", a.out), ("--tag", a.tag), ("--reps", a.reps), ("--warmup", a.warmup),
                    ("--max-memory-gib", a.max_memory_gib), ("--budget-s", a.budget_s), ("--device", a.device)):
        if v is not None:
            parts += [flag, str(v)]
    if a.sets is not None:
        parts += ["--sets", str(a.sets)]
    if a.l2 != "auto":
        parts += ["--l2", a.l2]
    if a.block_size != 16:
        parts += ["--block-size", str(a.block_size)]
    parts += [f for f, on in (("--cuda-graph", a.cuda_graph), ("--l2-floor", getattr(a, "l2_floor", False)),
                              ("--no-plot", a.no_plot), ("--no-check", a.no_check),
                              ("--no-gpu-hold", getattr(a, "no_gpu_hold", False))) if on]
    return shlex.join(parts)


def run(a: argparse.Namespace) -> dict:
    """Run the benchmark described by parsed CLI arguments; returns {"meta", "rows", "targets", "files"}."""
    presets, layouts, backends = _validate(a)
    ops = tuple(dict.fromkeys(a.op)) if a.op else OPS
    import tqgen_runtime as tqr
    every = suite_shapes(a.suite, tqr.PREFILL_DECODE_MAX_TOKENS)
    shapes = [s for s in every if s.op in ops]
    if not shapes:
        have = list(dict.fromkeys(s.op for s in every))
        raise SpecError([Reason("op", list(ops), have, f"the {a.suite} suite has shapes for these ops only; leave "
                                "--op out for all of them, or pick a suite that has the op (full has every op)")],
                        "no such shapes")
    for name, wanted, key in (("head_dim", a.head_dim, lambda s: s.d),
                              ("gqa", getattr(a, "gqa", None),
                               lambda s: s.hq // s.hk if s.op in ("decode", "prefill") and s.hk else None)):
        if not wanted:
            continue
        have = sorted({key(s) for s in shapes} - {None})
        bad = [v for v in dict.fromkeys(wanted) if v not in have]
        if bad:
            flag = "--" + name.replace("_", "-")
            why = (f"the {a.suite} suite's {'/'.join(ops)} shapes have these; leave {flag} out for all of them" if have
                   else f"the {a.suite} suite's {'/'.join(ops)} shapes have no query heads (store, dequant): leave "
                        f"{flag} out, or add --op decode / --op prefill")
            raise SpecError([Reason(name, v, have or "decode or prefill shapes", why) for v in bad], "no such shapes")
        shapes = [s for s in shapes if key(s) in wanted]
    o = Options(suite=a.suite, ops=ops, presets=presets, layouts=layouts, backends=backends, out=Path(a.out),
                tag=a.tag, reps=a.reps, warmup=a.warmup, sets=a.sets, l2=a.l2, plot=not a.no_plot,
                max_memory_gib=a.max_memory_gib, budget_s=a.budget_s, block_size=a.block_size, check=not a.no_check,
                device=a.device, command=_command_line(a), cuda_graph=a.cuda_graph,
                l2_floor=getattr(a, "l2_floor", False), gpu_hold=not getattr(a, "no_gpu_hold", False))
    if a.list:
        return _list(o, shapes)
    import torch
    torch.manual_seed(0)
    bench = Bench(o)
    backends = o.backends or default_backends(bench.target)
    bench.meta.update(backends=list(backends), presets=list(presets), layouts=list(layouts), ops=list(ops))
    tag = o.tag or f"{bench.meta['device_short']}-{_dt.date.today().isoformat()}-{o.suite}" + (
        "-graph" if o.cuda_graph else "")
    o.out.mkdir(parents=True, exist_ok=True)
    groups = plan_cases(shapes, backends, presets, layouts)
    total = sum(len(ss) for _, ss in groups)
    print(f"tqgen bench --suite {o.suite}: {total} case(s) on {bench.meta['device']} ({bench.target}); copy ceiling "
          f"{bench.ceiling / 1e9:.0f} GB/s; backends {', '.join(backends)}; writing {o.out}/{tag}.*", file=sys.stderr)
    bench.progress = _Progress(total)
    try:
        for (be, preset, layout, hq, hk, d), ss in groups:
            kv, why = bench.load(be, preset, layout, hq, hk, d)
            if kv is None:
                bench.say(f"[bench] {be} {preset} {layout} Hq{hq} Hk{hk} D{d}: {why}")
            for s in ss:
                if kv is None:
                    r = bench.base_row(s, be, preset, layout)
                    r["status"] = why
                else:
                    r = bench.run_case(kv, s, be, preset, layout)
                bench.rows.append(r)
                bench.progress.step(f"{be} {preset} {layout} {s.label()}")
            kv = None
            write_outputs(bench, tag, plots=False)  # partial results survive an interrupted run
    finally:
        bench.progress.close()
    bench.meta["copy_ceiling_end_GBps"] = bench.copy_ceiling("copy_end") / 1e9
    bench.meta["seconds"] = time.monotonic() - bench.t_start
    return write_outputs(bench, tag, plots=o.plot)


def _list(o: Options, shapes: list[Shape]) -> dict:
    backends = o.backends or ("cuda", "triton")
    groups = plan_cases(shapes, backends, o.presets, o.layouts)
    n_cases = sum(len(ss) for _, ss in groups)
    per_op: dict[str, int] = {}
    for _, ss in groups:
        for s in ss:
            per_op[s.op] = per_op.get(s.op, 0) + 1
    one = [g for g in groups if g[0][0] == backends[0]]  # the estimate of one backend that loads
    est = sum(estimate_seconds(s, _slot(LayoutSpec.from_preset(p, layout=lay, head_dim=s.d, **rotation_for(s.d, p))))
              for (_, p, lay, *_), ss in one for s in ss)
    est += 2.0 * len({(g[1], g[2], g[5]) for g, _ in one})  # first-use Triton compiles per (preset, layout, D)
    uniq = list(dict.fromkeys(shapes))
    sdpa = sum(estimate_seconds(Shape("dequant", s.b, s.l, s.hq, s.hk, s.d), slot=0) for s in uniq if s.op != "store")
    print(f"suite {o.suite}: {len(uniq)} shape(s) x {len(o.presets)} preset(s) x {len(o.layouts)} layout(s) x "
          f"{len(backends)} backend(s) ({', '.join(backends)}) = {n_cases} case(s); per op: "
          + ", ".join(f"{k} {v}" for k, v in per_op.items()))
    for s in uniq:
        print(f"  {s.label()}")
    print(f"rough H200 estimate: {est / 60:.1f} min per backend that loads + {sdpa / 60:.1f} min of SDPA baselines "
          "(kernels at ~0.5 TB/s, ~2 s compile per variant; a backend that is unavailable costs ~0)")
    return dict(meta=dict(suite=o.suite, cases=n_cases, per_op=per_op, estimate_s=est + sdpa), rows=[], targets=[],
                files=[])


# =========================================================================== targets
def evaluate_targets(rows: list[dict]) -> list[dict]:
    """Issue 6's targets against the measured rows: [{target, backend, preset, layout, shape, measured, needed,
    result, column, short}] for every row that a target covers (PASS / FAIL; a wrong result FAILs).
    ``column`` / ``short`` are the compact form used by the summary matrix of the markdown."""
    out = []

    def floor(r, fmt):  # --l2-floor's bound, appended to a decode's measured value
        return f" (L2 floor {fmt(r)})" if r.get("floor_us") else ""

    def add(t, r, shape, measured, needed, ok, column, short):
        bad = r["status"] != "ok"
        out.append(dict(target=t, backend=r["backend"], preset=r["preset"], layout=r["layout"], shape=shape,
                        measured=measured + (" (MISMATCH)" if bad else ""), needed=needed,
                        result="n/a" if ok is None else ("PASS" if ok and not bad else "FAIL"), column=column,
                        short=short + (" MISMATCH" if bad else "")))

    timed = [r for r in rows if r.get("time_us") and r["status"] in ("ok", "MISMATCH")]
    timed = [r for r in timed if not r.get("mix")]  # the targets are on batches of equal lengths
    main = [r for r in timed if r["op"] == "decode" and (r["Hq"], r["Hk"], r["D"]) == MAIN]
    for r in main:
        short_shape = f"B={r['B']} L={r['L'] // K}K"
        if (r["B"], r["L"]) in TARGET_DECODE_SHAPES:
            shape = f"decode B={r['B']} L={r['L']}"
            add(f"decode >= {TARGET_DECODE_PCT:.0f} % of copy ceiling (packed bytes)", r, shape,
                f"{r['pct_ceiling']:.1f} %" + floor(r, lambda x: f"{x['floor_pct']:.1f} %"),
                f">= {TARGET_DECODE_PCT:.0f} %", r["pct_ceiling"] >= TARGET_DECODE_PCT,
                f"decode {short_shape} % ceiling (>= {TARGET_DECODE_PCT:.0f})", f"{r['pct_ceiling']:.1f}")
            need = TARGET_SPEEDUP.get(r["preset"])
            if need is not None:
                col = f"decode {short_shape} x SDPA (k8v4 2, 4bit 2.5, k3v4 2.8, 3bit 3)"
                if r["vs_sdpa"] is None:
                    add(f"decode >= {need}x bf16 SDPA", r, shape, "SDPA not measured", f">= {need}x", None, col, "n/a")
                else:
                    add(f"decode >= {need}x bf16 SDPA", r, shape, f"{r['vs_sdpa']:.2f}x"
                        + floor(r, lambda x: f"{x['sdpa_us'] / x['floor_us']:.2f}x"), f">= {need}x",
                        r["vs_sdpa"] >= need, col, f"{r['vs_sdpa']:.2f}x")
        if (r["B"], r["L"]) == (1, 4 * K) and r["sdpa_us"]:
            ratio = r["time_us"] / r["sdpa_us"]
            add(f"decode B=1 L=4K no slower than {TARGET_LATENCY_RATIO}x bf16 SDPA", r, "decode B=1 L=4096",
                f"{ratio:.2f}x SDPA time ({r['time_us']:.1f} vs {r['sdpa_us']:.1f} us)", f"<= {TARGET_LATENCY_RATIO}x",
                ratio <= TARGET_LATENCY_RATIO, f"decode B=1 L=4K time / SDPA (<= {TARGET_LATENCY_RATIO})",
                f"{ratio:.2f}")
    for r in timed:
        if r["op"] == "store" and r["N"] >= 64 * K and (r["Hk"], r["D"]) == MAIN[1:]:
            add(f"store >= {TARGET_STORE_PCT:.0f} % of copy ceiling (read + written)", r, f"store N={r['N']}",
                f"{r['pct_ceiling']:.1f} %", f">= {TARGET_STORE_PCT:.0f} %", r["pct_ceiling"] >= TARGET_STORE_PCT,
                f"store N={r['N'] // K}K % ceiling (>= {TARGET_STORE_PCT:.0f})", f"{r['pct_ceiling']:.1f}")
    for r in timed:
        if r["op"] == "decode" and (r["Hq"], r["Hk"], r["D"]) == SMOLLM2 and (r["B"], r["L"]) == (32, 32 * K):
            ref_rows = [x for x in main if (x["B"], x["L"]) == (32, 32 * K) and
                        (x["backend"], x["preset"], x["layout"]) == (r["backend"], r["preset"], r["layout"])]
            if not ref_rows:
                continue
            f128, f64 = ref_rows[0]["pct_ceiling"], r["pct_ceiling"]
            add(f"head_dim 64 (GQA 3) within {100 * (1 - TARGET_D64_FRACTION):.0f} % of the D=128 bandwidth fraction",
                r, "decode B=32 L=32768 Hq9 Hk3 D64", f"{f64:.1f} % vs {f128:.1f} % at D128 ({f64 / f128:.2f}x)"
                + (f" (L2 floors {r['floor_pct']:.1f} % vs {ref_rows[0]['floor_pct']:.1f} %)"
                   if r.get("floor_us") and ref_rows[0].get("floor_us") else ""),
                f">= {TARGET_D64_FRACTION:.2f}x", f64 >= TARGET_D64_FRACTION * f128,
                f"D64 GQA3 / D128 fraction (>= {TARGET_D64_FRACTION})", f"{f64 / f128:.2f}")
    return out


def _targets_matrix(targets: list[dict]) -> list[str]:
    """One row per backend × preset × layout, one column per target: 'value PASS|FAIL'."""
    cols = list(dict.fromkeys(t["column"] for t in targets))
    keys = list(dict.fromkeys((t["backend"], t["preset"], t["layout"]) for t in targets))
    cell = {(t["backend"], t["preset"], t["layout"], t["column"]): f"{t['short']} {t['result']}" for t in targets}
    lines = ["| backend | preset | layout | " + " | ".join(cols) + " |", "|" + "---|" * (3 + len(cols))]
    for k in keys:
        lines.append("| " + " | ".join(k) + " | " + " | ".join(cell.get(k + (c,), "") for c in cols) + " |")
    return lines


# =========================================================================== outputs
def _f(v, spec: str = ".1f") -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


_COLS = {  # op -> [(header, key, format)]
    "decode": [("backend", "backend", ""), ("preset", "preset", ""), ("layout", "layout", ""), ("B", "B", ""),
               ("L", "L", ""), ("mix", "mix", ""), ("Hq", "Hq", ""), ("Hk", "Hk", ""), ("D", "D", ""), ("splits", "splits", ""),
               ("median us", "time_us", ".1f"), ("min us", "min_us", ".1f"), ("MB moved", "MB", ".4g"),
               ("GB/s", "GBps", ".4g"), ("% ceiling", "pct_ceiling", ".1f"), ("SDPA us", "sdpa_us", ".1f"),
               ("x SDPA", "vs_sdpa", ".2f"), ("paged bf16 us", "paged_us", ".1f"),
               ("x paged bf16", "vs_paged", ".2f"), ("classic us", "classic_us", ".1f"),
               ("x classic", "vs_classic", ".2f"), ("L2 floor us", "floor_us", ".1f"),
               ("floor % ceiling", "floor_pct", ".1f"), ("L2", "l2", ""), ("mode", "mode", ""), ("check", "check", ""),
               ("variant", "variant", "")],
    "store": [("backend", "backend", ""), ("preset", "preset", ""), ("layout", "layout", ""), ("N tokens", "N", ""),
              ("Hk", "Hk", ""), ("D", "D", ""), ("median us", "time_us", ".1f"), ("min us", "min_us", ".1f"),
              ("MB moved", "MB", ".4g"), ("GB/s", "GBps", ".4g"), ("% ceiling", "pct_ceiling", ".1f"), ("L2", "l2", ""),
              ("check", "check", ""), ("variant", "variant", "")],
    "dequant": [("backend", "backend", ""), ("preset", "preset", ""), ("layout", "layout", ""), ("B", "B", ""),
                ("L", "L", ""), ("Hk", "Hk", ""), ("D", "D", ""), ("median us", "time_us", ".1f"),
                ("min us", "min_us", ".1f"), ("MB moved", "MB", ".4g"), ("GB/s", "GBps", ".4g"),
                ("% ceiling", "pct_ceiling", ".1f"), ("SDPA decode us", "sdpa_us", ".1f"),
                ("x SDPA decode", "vs_sdpa", ".2f"),
                ("L2", "l2", ""), ("check", "check", ""), ("variant", "variant", "")],
    "prefill": [("backend", "backend", ""), ("preset", "preset", ""), ("layout", "layout", ""), ("B", "B", ""),
                ("history L", "L", ""), ("new", "N", ""), ("mix", "mix", ""), ("Hq", "Hq", ""), ("Hk", "Hk", ""),
                ("D", "D", ""), ("path", "path", ""), ("median us", "time_us", ".1f"), ("min us", "min_us", ".1f"),
                ("MB moved", "MB", ".4g"), ("GB/s", "GBps", ".4g"), ("% ceiling", "pct_ceiling", ".1f"),
                ("SDPA chunk us", "sdpa_us", ".1f"), ("x SDPA", "vs_sdpa", ".2f"), ("classic us", "classic_us", ".1f"),
                ("x classic", "vs_classic", ".2f"), ("L2", "l2", ""),
                ("check", "check", ""), ("variant", "variant", "")],
}

_OP_NOTES = {
    "decode": "bytes = packed cache read (B·L·Hk·slot_bytes) + query + output; x SDPA = bf16 "
              "`scaled_dot_product_attention` decode time on the same shape (query [B,Hq,1,D], contiguous K/V "
              "[B,Hk,L,D], enable_gqa) / ours; x paged bf16 = a bf16 paged decode's time / ours "
              "(flash-attn's flash_attn_with_kvcache where installed, else torch's compiled FlexAttention over a page "
              "pool with the block table as its BlockMask, replayed from a CUDA graph under --cuda-graph as the decodes: the "
              "run's baseline line says which); mode eager = "
              "Python calls (timed as their GPU work behind the GPU hold: see the timing line), graph = CUDA-graph "
              "replay (--cuda-graph). mix: a batch of mixed lengths (L = the longest; one-long = one sequence of L and B - 1 of "
              "L/32, ramp = L·i/B for i = 1..B; bytes count the tokens there are): a decode with length-balanced "
              "splits (C++, Triton) timed with them (path balanced), classic us = the same inputs on the classic split grid, "
              "x classic = classic / balanced; no SDPA equivalent. L2 floor (--l2-floor, equal lengths): the same "
              "call with the block table folded into blocks that a quarter of L2 holds (reads hit L2): floor % "
              "ceiling = the packed bytes over that time, what the kernel's instructions allow without HBM.",
    "store": "bytes = K + V read (bf16) + int32 slot mapping + packed slots written; slots are whole blocks in random "
             "order.",
    "dequant": "bytes = packed cache read + bf16 K and V [B,Hk,L,D] written; x SDPA decode = bf16 SDPA decode time "
               "on the same shape / ours (dequant is the continuation-prefill path, not a decode).",
    "prefill": "`kv.prefill` of a continuation chunk (new tokens after L of history, per sequence); path = the "
               "runtime's choice (decode kernel per token for <= PREFILL_DECODE_MAX_TOKENS new tokens, else dequant "
               "+ SDPA; a new prompt, L = 0: SDPA over its own K/V); eager calls with check=False (the one host read "
               "of query_start_loc / seq_lens, device tensors, stays); bytes per path (see tqgen.bench.prefill_bytes); "
               "x SDPA = bf16 SDPA of the chunk on contiguous K/V (causal_lower_right) / ours. mix: a batch of "
               "different lengths (prompts = B new prompts of new/2 .. new tokens; histories = B chunks of new tokens "
               "after L/2 .. L of history; evenly spread): timed as the runtime runs it (chunks padded into shared "
               "SDPA calls within the device's bound) and as classic = the padding bound 0 (one call a run of equal "
               "chunks), x classic = classic / ours; its x SDPA is over one call of the batch padded to its longest.",
}


def _md_table(rows: list[dict], cols) -> list[str]:
    lines = ["| " + " | ".join(h for h, _, _ in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = []
        for _, k, fmt in cols:
            v = r["bytes"] / 1e6 if k == "MB" and r.get("bytes") is not None else r.get(k)
            s = _f(v, fmt) if fmt else _f(v)
            cells.append(s.replace("|", "/"))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_markdown(meta: dict, rows: list[dict], targets: list[dict], plots: list[str], plot_note: str) -> str:
    L = [f"# tqgen bench --suite {meta['suite']}: {meta['device']} ({meta['date'][:10]})", ""]
    L += [f"- device: {meta['device']} (target {meta['target']}"
          + (f", {meta['target_note']}" if meta.get("target_note") else "")
          + (f", {meta['sms']} SMs, L2 {meta['l2_MB']:.0f} MB, {meta['total_memory_GiB']:.0f} GiB"
             if meta.get("sms") else "")
          + ")",
          f"- torch {meta['torch']} (CUDA {meta.get('cuda')}), triton {meta['triton']}, Python {meta['python']}, "
          f"tqgen {meta['tqgen']}" + (f" @ {meta['git_commit']}" if meta.get("git_commit") else "")
          + (f", sources {meta['sources']} (`tqgen.bench.source_digest()`)" if meta.get("sources") else ""),
          f"- command: `{meta['command']}`",
          f"- date: {meta['date']}" + (f"; {meta['seconds']:.0f} s" if meta.get("seconds") else ""),
          f"- copy ceiling: **{meta['copy_ceiling_GBps']:.0f} GB/s** (device-to-device copy of "
          f"{meta['copy']['bytes'] / 2**30:.2f} GiB, read + write bytes / median time)"
          + (f"; {meta['copy_ceiling_end_GBps']:.0f} GB/s at the end of the run"
             if meta.get("copy_ceiling_end_GBps") else ""),
          f"- timing: {meta['timing']}",
          f"- L2: {meta['l2_policy']}",
          f"- backends: {', '.join(meta.get('backends', []))}; presets: {', '.join(meta.get('presets', []))}; "
          f"layouts: {', '.join(meta.get('layouts', []))}; bf16; block size {meta['block_size']}; "
          f"PREFILL_DECODE_MAX_TOKENS = {meta['prefill_decode_max_tokens']}",
          f"- bf16 paged decode baseline: {meta.get('paged_bf16_decode')}",
          f"- memory limit: {meta['max_memory_GiB']:.1f} GiB (free at start {meta['free_memory_GiB']:.1f} GiB)", ""]
    def baselines(title: str, lead: list[str], entries: list[dict], cells) -> None:  # a table of baseline timings
        cols = lead + ["Hq", "Hk", "D", "median us", "GB/s", "% ceiling", "L2", "how"]
        L.extend([f"## {title} (same run)", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)])
        for e in entries:
            L.append("| " + " | ".join(cells(e) + [str(e["Hq"]), str(e["Hk"]), str(e["D"]), _f(e.get("us")),
                                                    _f(e.get("GBps"), ".0f"), _f(e.get("pct_ceiling")),
                                                    _f(e.get("l2")), e.get("note", "")]) + " |")
        L.append("")

    if meta.get("sdpa"):
        baselines("bf16 SDPA baselines", ["op", "B", "L", "new"], meta["sdpa"],
                  lambda e: [str(e["op"]), str(e["B"]), str(e["L"]), _f(e.get("N"))])
    if meta.get("paged"):
        baselines("bf16 paged decode baselines", ["B", "L", "mix"], meta["paged"],
                  lambda e: [str(e["B"]), str(e["L"]), "yes" if e.get("mix") else ""])
    if targets:
        npass = sum(t["result"] == "PASS" for t in targets)
        L += ["## Issue 6 targets", "", f"{npass} of {len(targets)} PASS (H200 targets; decode and store on "
              "D=128, Hq=32, Hk=8 unless stated).", ""] + _targets_matrix(targets) + [
              "", "| target | backend | preset | layout | shape | measured | needed | result |",
              "|---|---|---|---|---|---|---|---|"]
        for t in targets:
            L.append(f"| {t['target']} | {t['backend']} | {t['preset']} | {t['layout']} | {t['shape']} | "
                     f"{t['measured']} | "
                     f"{t['needed']} | **{t['result']}** |")
        L.append("")
    for op in OPS:
        rs = [r for r in rows if r["op"] == op and r.get("time_us") is not None]
        if not rs:
            continue
        L += [f"## {op}", "", _OP_NOTES[op], ""] + _md_table(rs, _COLS[op]) + [""]
    bad = [r for r in rows if r["status"] not in ("ok", "MISMATCH") and r.get("time_us") is None]
    if bad:
        L += ["## Not measured", "", "| op | backend | preset | layout | shape | reason |", "|---|---|---|---|---|---|"]
        for r in bad:
            shape = f"N={r['N']}" if r["op"] == "store" else f"B={r['B']} L={r['L']}" + (
                f" new={r['N']}" if r["op"] == "prefill" else "")
            shape += f" Hq{_f(r['Hq'])} Hk{r['Hk']} D{r['D']}"
            L.append(f"| {r['op']} | {r['backend']} | {r['preset']} | {r['layout']} | {shape} | "
                     f"{r['status'].replace('|', '/')} |")
        L.append("")
    mism = [r for r in rows if r["status"] == "MISMATCH"]
    if mism:
        L += [f"**{len(mism)} row(s) with a result MISMATCH against the reference: their times measure wrong "
              "kernels.**", ""]
    if plots:
        L += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    elif plot_note:
        L += [f"Plots: {plot_note}", ""]
    return "\n".join(L)


def write_plots(rows: list[dict], meta: dict, out: Path, tag: str) -> tuple[list[str], str]:
    """decode time vs L (log-log) and % of the copy ceiling vs L, one panel per (B, Hq, Hk, D)."""
    dec = [r for r in rows if r["op"] == "decode" and r.get("time_us") and not r.get("mix")]
    groups: dict[tuple, list[dict]] = {}
    for r in dec:
        groups.setdefault((r["B"], r["Hq"], r["Hk"], r["D"]), []).append(r)
    groups = {g: rs for g, rs in groups.items() if len({r["L"] for r in rs}) >= 2}
    if not groups:
        return [], "no decode rows over two or more L in this run: no plots"
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no PNG written", file=sys.stderr)
        return [], "matplotlib not installed: no PNG written"
    sdpa = {(e["B"], e["L"], e["Hq"], e["Hk"], e["D"]): e for e in meta.get("sdpa", []) if e["op"] == "decode"}
    presets = sorted({r["preset"] for r in dec})
    colors = {p: f"C{i}" for i, p in enumerate(presets)}
    styles = {"aos": "-", "soa": "--"}
    markers = ["o", "s", "^", "v", "D", "x"]
    bk = {b: markers[i % len(markers)] for i, b in enumerate(sorted({r["backend"] for r in dec}))}
    files = []
    # one row of panels per head shape (Hq, Hk, D), one column per batch size
    heads = sorted({g[1:] for g in groups}, key=lambda h: (-h[2], h[1], h[0]))
    batches = sorted({g[0] for g in groups})
    for kind, ylabel in (("time", "decode time (us, median)"), ("pct", "% of copy ceiling (packed bytes)")):
        nr, nc = len(heads), len(batches)
        fig, axes = plt.subplots(nr, nc, figsize=(6.2 * nc, 4.6 * nr), squeeze=False)
        for ax in axes.flat:
            ax.set_visible(False)
        for g, rs in sorted(groups.items()):
            ax = axes[heads.index(g[1:])][batches.index(g[0])]
            ax.set_visible(True)
            b, hq, hk, d = g
            series: dict[tuple, list[dict]] = {}
            for r in rs:
                series.setdefault((r["preset"], r["layout"], r["backend"]), []).append(r)
            for (p, lay, be), ss in sorted(series.items()):
                ss.sort(key=lambda r: r["L"])
                ys = [r["time_us"] if kind == "time" else r["pct_ceiling"] for r in ss]
                ax.plot([r["L"] for r in ss], ys, color=colors[p], ls=styles.get(lay, "-"), marker=bk[be], ms=4,
                        label=f"{p} {lay} {be}")
            sd = sorted((L, e) for (B, L, Hq, Hk, D), e in sdpa.items() if (B, Hq, Hk, D) == g and e.get("us"))
            if sd:
                ys = [e["us"] if kind == "time" else e["pct_ceiling"] for _, e in sd]
                ax.plot([L for L, _ in sd], ys, color="k", lw=2, marker="*", label="bf16 SDPA (K/V bytes)")
            pg = sorted((e["L"], e) for e in meta.get("paged", [])
                        if (e["B"], e["Hq"], e["Hk"], e["D"]) == g and not e.get("mix") and e.get("us"))
            if pg:
                ys = [e["us"] if kind == "time" else e["pct_ceiling"] for _, e in pg]
                ax.plot([L for L, _ in pg], ys, color="gray", lw=2, marker="P", label="bf16 paged (K/V bytes)")
            if kind == "time":
                ax.set_yscale("log")
            else:
                ax.axhline(TARGET_DECODE_PCT, color="gray", ls=":", lw=1)
                ax.set_ylim(bottom=0)
            ax.set_xscale("log", base=2)
            ls = sorted({r["L"] for r in rs})
            ax.set_xticks(ls, [f"{x // K}K" if x % K == 0 else str(x) for x in ls])
            ax.minorticks_off()
            ax.set_xlabel("L (tokens per sequence)")
            ax.set_ylabel(ylabel)
            ax.set_title(f"B={b}, Hq={hq}, Hk={hk}, D={d}")
            ax.grid(True, which="both", alpha=0.3)
        h, lab = max((a.get_legend_handles_labels() for a in axes.flat), key=lambda hl: len(hl[1]))
        fig.legend(h, lab, loc="lower center", ncol=min(5, len(lab)), fontsize=7, bbox_to_anchor=(0.5, 0.0))
        fig.suptitle(f"{meta['device']}: decode {'time' if kind == 'time' else 'bandwidth'} vs L "
                     f"(copy ceiling {meta['copy_ceiling_GBps']:.0f} GB/s)")
        # the legend's rows below the panels: ~0.2 inch a row at font size 7, plus a margin
        # and the title above them (~0.4 inch)
        fig.tight_layout(rect=(0, (0.3 + 0.2 * math.ceil(len(lab) / 5)) / (4.6 * nr), 1, 1 - 0.4 / (4.6 * nr)))
        name = f"{tag}-decode-{kind}.png"
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        files.append(name)
    return files, ""


def write_outputs(bench: Bench, tag: str, *, plots: bool) -> dict:
    out = bench.o.out
    meta = dict(bench.meta)
    meta["sdpa"] = list(bench.sdpa.values())
    meta["paged"] = [e for e in bench.paged.values() if e.get("us")]
    rows = bench.rows
    targets = evaluate_targets(rows)
    pngs, note = (write_plots(rows, meta, out, tag) if plots else ([], "disabled (--no-plot)" if not bench.o.plot
                                                                      else "written at the end of the run"))
    res = dict(meta=meta, rows=rows, targets=targets)
    (out / f"{tag}.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    (out / f"{tag}.md").write_text(render_markdown(meta, rows, targets, pngs, note) + "\n")
    res["files"] = [str(out / f"{tag}.md"), str(out / f"{tag}.json")] + [str(out / p) for p in pngs]
    return res


# =========================================================================== CLI
def _bench_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", default="targets", choices=SUITES,
                   help="targets: the shapes of issue 6's targets; sweep: decode vs L (B 1, 32); full: every shape "
                        "issue 6 lists; smoke: tiny CPU shapes; mixed: decode of batches of mixed lengths; prefill: prefill "
                        "of 4 / 512 new tokens after 4K / 32K of history at B 1, 8, 32, the dequant, and batches of mixed lengths; "
                        "head256: decode at B=1 L=4K, B=32 L=8K / 32K and store of 64K tokens at head_dim 256 (Hq 16, Hk 8); "
                        "head96: decode at B=1 L=4K, B=8 L=8K, B=32 L=4K, store of 64K tokens and dequant at B=8 L=8K at head_dim 96 (Phi-3-mini's "
                        "Hq 32, Hk 32; orthogonal rotation); head80: the same shapes at head_dim 80 (Phi-2's "
                        "Hq 32, Hk 32) (default targets)")
    p.add_argument("--op", action="append", choices=OPS, help="only these ops (repeatable; default: the suite's)")
    p.add_argument("--preset", action="append", help=f"repeatable; default all: {', '.join(PRESETS)}")
    p.add_argument("--layout", action="append", help="repeatable: aos, soa (default both)")
    p.add_argument("--head-dim", action="append", type=int,
                   help="only the suite's shapes with this head_dim (repeatable; the suites have 64 and 128, head256 256, "
                        "head96 96, head80 80)")
    p.add_argument("--gqa", action="append", type=int,
                   help="only the decode / prefill shapes with this many query heads a KV head (repeatable; full: 1, 3, 4, "
                        "8); store and dequant shapes, which have no queries, are left out")
    p.add_argument("--backend", action="append",
                   help=f"repeatable: {', '.join(BACKEND_NAMES)} (default: every backend of this device's chain, "
                        "e.g. cuda and triton on NVIDIA; one that cannot load gives 'unavailable' rows)")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="output folder (default bench/results)")
    p.add_argument("--tag", default=None,
                   help="file name stem (default <device>-<date>-<suite>, + '-graph' with --cuda-graph)")
    p.add_argument("--reps", type=int, default=None, help="timed reps per case (default 20 GPU, 2 CPU; each case's "
                                                          f"timed loop also stops after ~{MAX_CASE_TIMING_S:.0f} s)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up calls per case (default 5 GPU, 0 CPU)")
    p.add_argument("--sets", type=int, default=None, help="distinct input sets used in turn (default 2 GPU, 1 CPU)")
    p.add_argument("--l2", default="auto", choices=("auto", "flush", "rotate"),
                   help="auto: rotate sets larger than L2, else flush a 256 MB buffer before each rep")
    p.add_argument("--no-plot", action="store_true", help="no PNG plots")
    p.add_argument("--no-check", action="store_true", help="skip the correctness guard against the reference")
    p.add_argument("--max-memory-gib", type=float, default=None,
                   help="skip shapes whose inputs exceed this (default 80 %% of free device memory)")
    p.add_argument("--budget-s", type=float, default=None,
                   help="stop starting new cases after this many seconds (the rest are recorded as skipped)")
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--device", default=None, help="torch device (default cuda when present, else cpu)")
    p.add_argument("--cuda-graph", action="store_true",
                   help="decode: time CUDA-graph replays of the call (no host launch overhead; each row says so)")
    p.add_argument("--l2-floor", action="store_true",
                   help="decode on equal lengths: also time the same call with its block table folded into a pool "
                        "of blocks that L2 holds (reads hit L2, not HBM): the %% of the copy ceiling the kernel's own "
                        "instructions allow (columns 'L2 floor us', 'floor %% ceiling')")
    p.add_argument("--no-gpu-hold", action="store_true",
                   help="time without the GPU hold before each rep (a call shorter on the GPU than on the host is then "
                        "timed as its host's launches, as runs before session 35 did: for a same-run comparison)")
    p.add_argument("--list", action="store_true", help="print the cases and a rough H200 time estimate; run nothing")


def cmd_bench(a: argparse.Namespace) -> int:
    try:
        res = run(a)
    except ImportError as e:
        print(f"tqgen bench needs torch and tqgen_runtime (pip install -e '.[torch]'): {e}", file=sys.stderr)
        return 2
    except Exception as e:  # the runtime's SelectionError for a device it cannot use
        if type(e).__name__ != "SelectionError":
            raise
        print(f"tqgen bench: {e}", file=sys.stderr)
        return 2
    if a.list:
        return 0
    rows = res["rows"]
    counts: dict[str, int] = {}
    for r in rows:
        k = r["status"].split(":")[0]
        counts[k] = counts.get(k, 0) + 1
    for t in res["targets"]:
        print(f"{t['result']:4}  {t['target']}: {t['backend']} {t['preset']} {t['layout']} {t['shape']}: "
              f"{t['measured']}")
    print(f"rows: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    print("wrote " + ", ".join(res["files"]))
    return 1 if any(r["status"].startswith(("MISMATCH", "error")) for r in rows) else 0


cmd_bench.add_args = _bench_args  # type: ignore[attr-defined]
command("bench", "time decode / store / dequant / prefill per preset x layout x backend (markdown, JSON, plots)")(
    cmd_bench)
