"""Measured decode split counts per device: ``tqgen tune`` writes them, ``CudaKernels.num_splits_for`` reads them.

The split heuristic (``cuda_launch.decode_splits``) fills whole waves of the launch bound's resident warps.
On the H200 that is the best count, or within 1 %, on every SoA row at head_dim 128, but AoS loses up to
9 % (k8v4 B=32 L=32K: 4 splits 485 us vs the heuristic's 6, 528 us) and head_dim 64 up to 8 % (the
driver fits more blocks than the launch bound; bench/results/h200-2026-12-01-sweep-session10.md). No
simple rule fits every row, so the counts are measured.

A table is one JSON file per device (``<slug>.json``, e.g. ``nvidia-h200.json``, slug of
``torch.cuda.get_device_name``) holding, per variant (its id without the template digest) and the
launch options it was timed with, grid points (units = batch x KV heads, tiles = 16-token tiles of the
longest sequence) with the measured best split count. A request uses the point nearest in log2
(units, tiles), within ``RADIUS`` octaves on each axis; otherwise (or when the variant's options changed
since it was timed: a stale entry) the heuristic decides. The answer is a pure function of the table
and the shape, so a workspace sized for it and a CUDA graph captured with it stay valid.

Tables are searched in ``$TQGEN_TUNING_DIR``, then ``<tqgen cache>/tuned`` (where ``tqgen tune`` writes
by default: a user tunes their own GPU without touching the package), then the package's ``tqgen/tuned``
(committed, measured on the project's devices); per variant the first table that has it wins.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

from .cli import command

SCHEMA = 1
PACKAGE_DIR = Path(__file__).resolve().parent / "tuned"
#: nearest grid point accepted up to this many octaves away on each axis (the default grid is at most
#: 2 octaves apart, so every shape between its points has one)
RADIUS = 1.0
#: the tuner keeps the heuristic's count unless another one is faster by more than this (timing noise)
KEEP_HEURISTIC_WITHIN = 0.02
#: the most splits per (sequence, KV head) a decode may use (``split_cap``)
MAX_SPLITS = 512
#: the fewest tiles a split the tuner times and a table may answer (``split_cap``'s ``min_tiles``): 2, where the
#: heuristic keeps 4. H200, the session-28 kernels (bench/results/h200-2026-12-04-fixed-cost-parts.md, run 8): at
#: B=1 a split of 2 tiles is the fastest below 4K tokens (L=1K: 32 splits 8.3-9.4 us vs 16's 9.1-10.9; L=2K: 64
#: vs 16, 9.3-10.3 vs 11.2-13.2), while at 4K-8K 64 splits (4+ tiles) stay best: measured, not assumed
TUNED_MIN_TILES = 2
#: split counts the tuner times (multiples of the block's warps among these, up to the cap)
CANDIDATES = (1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64,
              80, 96, 128, 160, 192, 256, 320, 384, 512)
DEFAULT_BATCHES = (1, 4, 8, 32, 128)
DEFAULT_SEQ_LENS = (1024, 4096, 8192, 32768, 131072)
#: head_dim -> (Hq, Hk) of the tuned shapes: the targets' Llama-style D=128, the SmolLM2 D=64 (GQA 3), Gemma's D=256
#: 96: Phi-3-mini's (the orthogonal rotation), 80: Phi-2's (the C++ decode of 4-bit / fp8 keys only)
DEFAULT_HEADS = {128: (32, 8), 64: (9, 3), 256: (16, 8), 96: (32, 32), 80: (32, 32)}
TUNE_HEADS = (128, 64)  # what `tqgen tune` times without --head-dim (issue 6's head sizes)
ROTATE_BYTES = 256 << 20  # a call's pages are not in L2 (50 MB on the H200) when the next call runs
MAX_TUNE_BYTES = 16 << 30  # a grid point whose caches need more is skipped (B=128 L=128K at head_dim 128)


class TableError(ValueError):
    """A tuning table that cannot be used: which file, what was wrong, what to do."""


def device_slug(name: str) -> str:
    """``NVIDIA H200`` -> ``nvidia-h200``: the table's file name."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not slug:
        raise TableError(f"device name {name!r} gives an empty table name; name the table file yourself")
    return slug


def variant_key(v) -> str:
    """A variant's id without its content hash: the table outlives template edits that leave the
    launch options alone (the options are compared separately)."""
    return f"{v.backend}-{v.target}-{v.kind}-{v.spec.token}"


@lru_cache(maxsize=None)
def _sm_count_of(index: int) -> int:
    import torch
    return torch.cuda.get_device_properties(index).multi_processor_count


def sm_count(device) -> int:
    """The SMs (CUs) of a CUDA / ROCm device, 1 for any other (memoised: launchers ask on every decode)."""
    if device.type != "cuda":
        return 1
    import torch
    return _sm_count_of(device.index if device.index is not None else torch.cuda.current_device())


def tiles_of(max_seq_len: int) -> int:
    return max(1, math.ceil(max_seq_len / 16))


def split_cap(max_seq_len: int, warps: int, min_tiles: int = 4) -> int:
    """The most splits a request may use: at most ``MAX_SPLITS``, at least ``min_tiles`` tiles a split (4: the
    heuristic, ``decode_splits``; ``TUNED_MIN_TILES``: what the tuner times and the table may answer), a multiple
    of the block's warps, at least one block."""
    return max(warps, min(MAX_SPLITS, tiles_of(max_seq_len) // min_tiles) // warps * warps)


@dataclass(frozen=True)
class Point:
    units: int
    tiles: int
    splits: int
    us: float
    heuristic: int
    heuristic_us: float

    def distance(self, units: int, tiles: int) -> tuple[float, float]:
        return abs(math.log2(units / self.units)), abs(math.log2(tiles / self.tiles))


@dataclass(frozen=True)
class VariantTable:
    key: str
    options: dict
    shape: dict  # preset, layout, head_dim, num_q_heads, num_kv_heads: what was timed (tests, prune)
    points: tuple[Point, ...]

    def splits_for(self, units: int, max_seq_len: int, warps: int) -> int | None:
        if units < 1:
            return None
        tiles = tiles_of(max_seq_len)
        near = [(sum(p.distance(units, tiles)), p.units, p.tiles, p) for p in self.points
                if max(p.distance(units, tiles)) <= RADIUS]
        if not near:
            return None
        p = min(near, key=lambda x: x[:3])[3]
        return max(warps, min(p.splits, split_cap(max_seq_len, warps, TUNED_MIN_TILES)) // warps * warps)

    def to_json(self) -> dict:
        return {"options": self.options, "shape": self.shape,
                "points": [[p.units, p.tiles, p.splits, round(p.us, 2), p.heuristic, round(p.heuristic_us, 2)]
                           for p in self.points]}


def _parse(path: Path, text: str) -> tuple[str, dict[str, VariantTable]]:
    def bad(what: str) -> TableError:
        return TableError(f"tuning table {path}: {what}. Regenerate it on the device (`tqgen tune --out "
                          f"{path.parent}`) or delete it (the split heuristic then decides)")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise bad(f"not JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise bad(f"schema {doc.get('schema') if isinstance(doc, dict) else None!r}, this tqgen reads schema {SCHEMA}")
    out = {}
    for key, e in (doc.get("variants") or {}).items():
        try:
            pts = tuple(Point(int(u), int(t), int(s), float(us), int(h), float(hus)) for u, t, s, us, h, hus in e["points"])
            if any(p.units < 1 or p.tiles < 1 or p.splits < 1 for p in pts):
                raise ValueError("units, tiles and splits must be >= 1")
            out[key] = VariantTable(key, dict(e["options"]), dict(e.get("shape", {})), pts)
        except (KeyError, TypeError, ValueError) as ex:
            raise bad(f"variant {key!r}: {type(ex).__name__}: {ex} (each point is [units, tiles, splits, us, "
                      "heuristic splits, heuristic us])") from None
    return str(doc.get("device", "")), out


def search_dirs() -> list[Path]:
    from .build import user_cache
    env = os.environ.get("TQGEN_TUNING_DIR")
    return ([Path(env)] if env else []) + [user_cache() / "tuned", PACKAGE_DIR]


@lru_cache(maxsize=None)
def _tables(slug: str, dirs: tuple[Path, ...]) -> dict[str, VariantTable]:
    merged: dict[str, VariantTable] = {}
    for d in reversed(dirs):  # the first directory wins: applied last
        f = d / f"{slug}.json"
        if f.is_file():
            merged.update(_parse(f, f.read_text())[1])
    return merged


_generation = 0


def generation() -> int:
    """Bumped whenever this process writes a table: callers that memoise split counts key them by it
    (a lookup costs ~50 us of Python, too much for every decode call)."""
    return _generation


def tables_for(device_name: str) -> dict[str, VariantTable]:
    return _tables(device_slug(device_name), tuple(search_dirs()))


def _as_timed(recorded: dict) -> dict:
    """The launch options an entry was timed with, every CudaOptions field the entry predates at its
    default (an option added later, left at its default, leaves the kernel as it was timed)."""
    from .lower_cuda import CudaOptions
    return {f.name: f.default for f in dataclasses.fields(CudaOptions)} | recorded


#: CudaOptions fields the decode does not read (the store's and the dequant's launch shapes): a change to them
#: leaves a table's split counts measured on the same decode kernel
DECODE_BLIND = frozenset({"row_warps", "dequant_tokens", "dequant_rows", "store_rounds", "dequant_rounds"})


def options_match(recorded: dict, current: dict) -> bool:
    """The decode launch options an entry was timed with equal ``current``'s (fields the entry predates at their
    defaults; a field ``current`` no longer has never matches; ``DECODE_BLIND`` fields not compared)."""
    timed = _as_timed(recorded)
    return ({k: v for k, v in timed.items() if k not in DECODE_BLIND}
            == {k: v for k, v in current.items() if k not in DECODE_BLIND})


def tuned_splits(variant, device_name: str, units: int, max_seq_len: int) -> int | None:
    """The measured split count for this variant on this device and shape, or None (no table, no
    point within RADIUS, or the entry was timed with other launch options)."""
    t = tables_for(device_name).get(variant_key(variant))
    if t is None or not options_match(t.options, variant.options.to_dict()):
        return None
    return t.splits_for(units, max_seq_len, variant.options.split_step())


# ------------------------------------------------------------------------------ the tuner (GPU)
def _fill(kern, cache, hk: int, d: int, dev) -> None:
    """Real packed slots: random K/V (keys x2, as tqgen bench) stored through the kernel into the first
    blocks, then copied block-wise over the rest (timing needs realistic codes and norms, not distinct ones)."""
    import torch
    nb, bs = cache.shape[0], kern.spec.block_size
    c = min(nb, max(1, 65536 // bs))
    slots = torch.arange(c * bs, device=dev, dtype=torch.int32)
    k = torch.randn(c * bs, hk, d, device=dev, dtype=torch.bfloat16) * 2
    v = torch.randn(c * bs, hk, d, device=dev, dtype=torch.bfloat16)
    kern.store(k, v, cache, slots, check=False)
    for s in range(c, nb, c):
        m = min(c, nb - s)
        cache[s:s + m].copy_(cache[:m])


def tune_workspace(kern, q, cache, splits: int, dev) -> dict:
    """The decode workspace the tuner times with: the runtime's (``tqgen_runtime`` ``Engine.workspace``, and
    ``CudaKernels.decode`` without one), sized for the KV heads, so with room for a balanced decode's wider grid
    (``cuda_launch.balanced_grid_width``). Where a count is one block a unit, the runtime's decode takes that wider
    grid on every batch of 2+ sequences, equal lengths included; a workspace without the room (the tuner's before
    session 41) timed the classic grid instead. On an H100 the two differ by 1.17-1.25x at such counts (SoA 3bit_nc
    B=32 L=32K, 4 splits: 450 vs 361 us; k3v4_nc SoA B=128 L=8K, 1 split: 474 vs 399), and the table's picks there
    ran 1.05-1.18x slower than the heuristic's in tqgen bench (bench/results/h100-2026-12-05-tune-gap.md)."""
    return kern.workspace(q.shape[0], q.shape[1], splits, dev, num_kv_heads=cache.shape[2])


def _graph_us(kern, q, cache, tables, sl, splits: int, dev, min_ms: float = 4.0, repeats: int = 3, **decode_kw) -> float:
    """Median time of one decode call at ``splits`` by CUDA-graph replay (no host overhead), the calls
    rotating over ``tables`` (disjoint pages: L2 never holds the next call's); ``decode_kw`` go to the decode
    (e.g. ``balanced``). The workspace is the runtime's (``tune_workspace``), so the launch timed is the one a
    request at this count runs."""
    import torch
    ws = tune_workspace(kern, q, cache, splits, dev)
    out = torch.empty_like(q)
    calls = [lambda bt=bt: kern.decode(q, cache, bt, sl, num_splits=splits, workspace=ws, out=out, check=False,
                                       **decode_kw)
             for bt in tables]
    st = torch.cuda.Stream(dev)
    st.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(st):
        for f in calls:
            f()
    torch.cuda.current_stream(dev).wait_stream(st)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for f in calls:
            f()
    g.replay()
    torch.cuda.synchronize(dev)
    t0 = time.perf_counter()
    g.replay()
    torch.cuda.synchronize(dev)
    n = max(1, int(min_ms / 1e3 / max(time.perf_counter() - t0, 1e-6)))
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    res = []
    for _ in range(repeats):
        ev[0].record()
        for _ in range(n):
            g.replay()
        ev[1].record()
        ev[1].synchronize()
        res.append(ev[0].elapsed_time(ev[1]) * 1e3 / (n * len(calls)))
    del g
    return statistics.median(res)


def grid_cache(spec, hk: int, batch: int, max_seq_len: int) -> tuple[int, int]:
    """(bytes of one page set, page sets) the tuner allocates for one grid point: enough disjoint sets
    that together pass ``ROTATE_BYTES`` (at most 8); a point whose sets pass ``MAX_TUNE_BYTES`` is skipped."""
    from .layout import derive_layout
    nbytes = batch * math.ceil(max_seq_len / spec.block_size) * derive_layout(spec).page_bytes(hk)
    return nbytes, max(1, min(8, math.ceil(ROTATE_BYTES / nbytes)))


def tune_variant(kern, hq: int, hk: int, batches, seq_lens, dev, say: Callable[[str], None] = print,
                 max_bytes: int = MAX_TUNE_BYTES) -> VariantTable:
    """Time every candidate split count on every (batch, max_seq_len) of the grid; a point per shape."""
    import torch
    from . import reference as ref
    spec, v = kern.spec, kern.variant
    w, d, bs = v.options.split_step(), spec.head_dim, spec.block_size
    pts = []
    for L in seq_lens:
        for b in batches:
            per_seq = math.ceil(L / bs)
            nbytes, sets = grid_cache(spec, hk, b, L)
            if nbytes * sets > max_bytes:
                say(f"  {b}x{L}: skipped ({nbytes * sets / 2**30:.1f} GiB > {max_bytes / 2**30:.0f} GiB)")
                continue
            cache = ref.allocate(spec, b * per_seq * sets, hk, dev)
            _fill(kern, cache, hk, d, dev)
            perm = torch.randperm(b * per_seq * sets, device=dev).to(torch.int32)
            tables = list(perm.view(sets, b, per_seq))
            q = torch.randn(b, hq, d, device=dev, dtype=torch.bfloat16)
            sl = torch.full((b,), L, dtype=torch.int32, device=dev)
            heur = kern.heuristic_splits(b, hk, L, dev)
            cap = split_cap(L, w, TUNED_MIN_TILES)
            cands = sorted({s for s in CANDIDATES if s % w == 0 and s <= cap} | {heur})
            times = {s: _graph_us(kern, q, cache, tables, sl, s, dev) for s in cands}
            best = min(times, key=lambda s: (times[s], s))
            if times[best] > (1 - KEEP_HEURISTIC_WITHIN) * times[heur]:
                best = heur
            pts.append(Point(b * hk, tiles_of(L), best, times[best], heur, times[heur]))
            say(f"  B={b} L={L}: {best} splits {times[best]:.1f} us (heuristic {heur}: {times[heur]:.1f} us; "
                + ", ".join(f"{s}: {t:.1f}" for s, t in times.items()) + ")")
            del cache, tables, perm
            torch.cuda.empty_cache()
    return VariantTable(variant_key(v), v.options.to_dict(),
                        {"preset": spec.preset_name, "layout": str(spec.layout), "head_dim": d,
                         "num_q_heads": hq, "num_kv_heads": hk}, tuple(pts))


def write_table(path: Path, device_name: str, tables: dict[str, VariantTable], command_line: str) -> None:
    """Merge ``tables`` into the table at ``path``: other variants' entries are kept, and so are a variant's grid
    points that were not timed again when its launch options are unchanged (``tqgen tune --batch 1 --seq-len 2048``
    adds or refreshes those points only); an entry timed with other options is replaced whole."""
    text = path.read_text() if path.is_file() else None
    old = _parse(path, text)[1] if text is not None else {}
    for key, new in tables.items():
        prev = old.get(key)
        if prev is not None and options_match(prev.options, new.options) and prev.shape == new.shape:
            timed = {(p.units, p.tiles) for p in new.points}
            kept = tuple(p for p in prev.points if (p.units, p.tiles) not in timed)
            new = dataclasses.replace(new, points=tuple(sorted(kept + new.points, key=lambda p: (p.tiles, p.units))))
        old[key] = new
    if text is not None:  # the commands that timed the points kept: "<first>; then <later>"
        prev_cmd = json.loads(text).get("command") or ""
        if prev_cmd and prev_cmd != command_line:  # a tune writes after each variant: its command once
            kept = prev_cmd.endswith("; then " + command_line)
            command_line = prev_cmd if kept else f"{prev_cmd}; then {command_line}"
    doc = {"schema": SCHEMA, "device": device_name, "command": command_line,
           "note": "points: [units = batch x KV heads, tiles = ceil(max_seq_len / 16), best splits, us, "
                   "heuristic splits, us] (CUDA-graph replay, bf16 queries); tqgen/tuning.py",
           "variants": {k: old[k].to_json() for k in sorted(old)}}
    path.parent.mkdir(parents=True, exist_ok=True)
    _dump(path, doc)


def _dump(path: Path, doc: dict) -> None:
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    _forget()


def _forget() -> None:
    global _generation
    _tables.cache_clear()
    _generation += 1


def stale_entries(path: Path) -> list[tuple[str, str]]:
    """(variant key, why) for every entry of a table whose variant no longer builds with the options it
    was timed with (CPU only: the launch options come from lower_cuda)."""
    from .build import preset_spec_for_target, rotation_for
    from .ir import Target
    from .lower_cuda import make_variant
    out = []
    for key, t in _parse(path, path.read_text())[1].items():
        m = re.match(r"(cuda|hip)-([a-z0-9]+)-([a-z0-9_]+)-", key)
        try:
            target = Target.parse(m.group(2), "target") if m else None
            d = int(t.shape["head_dim"])
            spec = preset_spec_for_target(t.shape["preset"], target, layout=t.shape["layout"], head_dim=d,
                                          **rotation_for(d, t.shape["preset"]))
            v = make_variant(spec, target, m.group(3))
        except Exception as e:  # noqa: BLE001 - any failure to rebuild it makes the entry stale
            out.append((key, f"cannot rebuild its variant ({type(e).__name__}: {e})"))
            continue
        if variant_key(v) != key:
            out.append((key, f"the shape rebuilds {variant_key(v)}"))
        elif not options_match(t.options, v.options.to_dict()):
            timed = _as_timed(t.options)
            diff = {k: (timed.get(k), x) for k, x in v.options.to_dict().items()
                    if timed.get(k) != x and k not in DECODE_BLIND}
            out.append((key, "launch options changed since it was timed: " +
                        ", ".join(f"{k} {a} -> {b}" for k, (a, b) in sorted(diff.items()))))
    return out


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", action="append", help="repeatable (default: k8v4, 4bit_nc, k3v4_nc, 3bit_nc)")
    p.add_argument("--layout", action="append", help="repeatable: aos, soa (default both)")
    p.add_argument("--head-dim", type=int, action="append",
                   help=f"repeatable: {', '.join(map(str, DEFAULT_HEADS))} (default {' and '.join(map(str, TUNE_HEADS))}; Hq/Hk "
                        + ", ".join(f"{d}: {q}/{k}" for d, (q, k) in DEFAULT_HEADS.items()) + ")")
    p.add_argument("--batch", type=int, action="append", help=f"repeatable (default {DEFAULT_BATCHES})")
    p.add_argument("--seq-len", type=int, action="append", help=f"repeatable (default {DEFAULT_SEQ_LENS})")
    p.add_argument("--out", type=Path, default=None,
                   help="table folder (default <tqgen cache>/tuned; the package's: tqgen/tuned)")
    p.add_argument("--prune", action="store_true",
                   help="no GPU: drop the entries whose variant's launch options changed since they were timed")
    p.add_argument("--device-name", default=None, help="with --prune: the table's device (default every table in --out)")


def cmd_tune(a: argparse.Namespace) -> int:
    from .build import user_cache
    out = a.out or (user_cache() / "tuned")
    if a.prune:
        files = [out / f"{device_slug(a.device_name)}.json"] if a.device_name else sorted(out.glob("*.json"))
        for f in files:
            stale = dict(stale_entries(f))
            if stale:
                doc = json.loads(f.read_text())
                doc["variants"] = {k: e for k, e in doc["variants"].items() if k not in stale}
                _dump(f, doc)
            for k, why in stale.items():
                print(f"{f}: dropped {k}: {why}")
            print(f"{f}: {len(stale)} stale entr{'y' if len(stale) == 1 else 'ies'} dropped")
        _forget()
        return 0
    import torch
    from .build import preset_spec_for_target, rotation_for
    from concurrent.futures import ThreadPoolExecutor

    from .cuda_launch import build_binary, device_arch, load_variant
    from .ir import Target, resolve_preset
    from .lower_cuda import cuda_reasons, make_variant
    if not torch.cuda.is_available() or getattr(torch.version, "hip", None):
        print("tqgen tune: it times the CUDA decode and needs an NVIDIA GPU (torch.cuda.is_available() is "
              f"{torch.cuda.is_available()}, torch {torch.__version__}); run it on the GPU machine, or drop stale "
              "entries without one: tqgen tune --prune --out tqgen/tuned", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(dev)
    target = Target.parse(device_arch(dev), "target")
    presets = a.preset or ["k8v4", "4bit_nc", "k3v4_nc", "3bit_nc"]
    for p in presets:
        resolve_preset(p)  # an unknown name fails here, with the allowed ones
    unknown = [d for d in (a.head_dim or []) if d not in DEFAULT_HEADS]
    if unknown:
        print(f"tqgen tune: --head-dim {unknown} has no tuning shape; allowed: {list(DEFAULT_HEADS)} "
              "(add its Hq/Hk to tqgen.tuning.DEFAULT_HEADS)", file=sys.stderr)
        return 2
    path = out / f"{device_slug(name)}.json"
    cmdline = "tqgen tune " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["tune"] else [])
    jobs = []
    for d in a.head_dim or list(TUNE_HEADS):
        for p in presets:
            for lay in a.layout or ["aos", "soa"]:
                spec = preset_spec_for_target(p, target, layout=lay, head_dim=d, **rotation_for(d, p))
                bad = cuda_reasons(spec, target)
                if bad:  # (3-bit keys at head_dim 80: Triton's)
                    print(f"tqgen tune: {spec.token} skipped: {bad[0]}", flush=True)
                    continue
                jobs.append((d, make_variant(spec, target)))
    with ThreadPoolExecutor(8) as ex:  # nvcc runs in subprocesses: every variant compiles at once
        list(ex.map(lambda j: build_binary(j[1], device_arch(dev)), jobs))
    done = {}
    for d, v in jobs:
        hq, hk = DEFAULT_HEADS[d]
        kern = load_variant(v, dev)
        print(f"{variant_key(v)} (Hq {hq}, Hk {hk}):", flush=True)
        t0 = time.monotonic()
        done[variant_key(v)] = tune_variant(kern, hq, hk, a.batch or DEFAULT_BATCHES, a.seq_len or DEFAULT_SEQ_LENS,
                                            dev, say=lambda m: print(m, flush=True))
        write_table(path, name, done, cmdline.strip())
        print(f"  {time.monotonic() - t0:.0f} s; written to {path}", flush=True)
    return 0


cmd_tune.add_args = _args  # type: ignore[attr-defined]
command("tune", "time decode split counts on this GPU and write the tuning table num_splits_for reads "
        "(tqgen.tuning)")(cmd_tune)

__all__ = ["tuned_splits", "tables_for", "tune_variant", "tune_workspace", "write_table", "stale_entries", "device_slug",
           "variant_key", "split_cap", "TableError", "VariantTable", "Point", "search_dirs"]
