"""Run a generated CUDA C++ (or HIP C++) variant from Python: compile to a cubin / code object once,
load it through the driver API (ctypes), launch on torch's current stream.

    kern = load_cuda(spec, "sm90")      # renders or finds generated/<target>/cuda/<id>/kernel.cu, compiles, loads
    kern.store(key, value, cache, slot_mapping)
    out = kern.decode(query, cache, block_table, seq_lens)
    k, v = kern.dequant(cache, block_table, seq_lens, max_len)

Sources come from generated/ or are written into the on-demand cache (tqgen.build.variant_dir);
compiled binaries live in ``$TQGEN_CACHE_DIR/cuda/<variant id>/<arch>.cubin`` (default ``~/.cache/tqgen``): the variant id hashes everything that shapes the source, so a cached binary
is never stale. No torch extension is built: the kernels take raw pointers, and the launch is a
``cuLaunchKernel`` on ``torch.cuda.current_stream()`` (capturable in a CUDA graph).
"""

from __future__ import annotations

import ctypes
import logging
import math
import os
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path

import torch

from . import reference as ref
from .ir import LayoutSpec, Target, Vendor
from .lower_cuda import (KERNEL_NAMES, MERGE_GROUPS, MERGE_GROUPS_MANY_FROM, MERGE_ROWS, QUERIES_PER_WARP,
                         decode_dynamic_smem, dense_rotation, dequant_rounds, layout_params,
                         make_variant, merge_groups_many, store_lanes, store_rounds)
from .build import source_name, user_cache, variant_dir
from .tuning import generation as tuning_generation, sm_count, split_cap, tuned_splits
from .variants import Variant

log = logging.getLogger("tqgen.cuda")
LOG2E = 1.4426950408889634


class KernelParams:
    """One kernel's parameters in their C layout in one buffer (a buffer a thread), and the ``kernelParams`` array
    pointing at each: a launch packs its values with one ``struct.pack_into``. (A ctypes object an argument and a new
    pointer array took ~4 us of host time a launch on a 2-core VM, ~1 us this way.)

    ``codes``: a letter a parameter, in order: ``P`` a pointer (an int; 0 for null), ``q`` int64, ``i`` int32, ``f``
    float32, ``L`` the kernels' ``struct TqLayout`` (16 int64, given as 16 ints: ``layout_params``). Native alignment,
    as the compilers lay a kernel's parameters out (tests/test_generated_cpp.py checks ``offsets`` and sizes against
    every compiled kernel's own parameter table: a cubin's EIATTR_KPARAM_INFO, an AMDGPU code object's ``.args``).
    A value that does not fit its type raises ``struct.error`` (a ctypes scalar wrapped it silently)."""

    SIZES = {"P": 8, "q": 8, "i": 4, "f": 4, "L": 128}

    def __init__(self, codes: str):
        bad = sorted(set(codes) - set(self.SIZES))
        if bad:
            raise ValueError(f"KernelParams: unknown parameter codes {bad} in {codes!r}; allowed {sorted(self.SIZES)}")
        self.codes = codes
        items = ["16q" if c == "L" else c for c in codes]
        self.struct = struct.Struct("@" + "".join(items))
        self.offsets = tuple(struct.calcsize("@" + "".join(items[:i + 1])) - self.SIZES[c] for i, c in enumerate(codes))
        self._local = threading.local()

    def pack(self, values) -> ctypes.Array:
        """``values`` (the flat argument values: a layout's 16 ints in its place) into this thread's buffer; returns the
        ``kernelParams`` array (valid until this thread's next ``pack`` of this kernel: the launch copies it)."""
        t = self._local
        ptrs = getattr(t, "ptrs", None)
        if ptrs is None:
            t.buf = ctypes.create_string_buffer(self.struct.size)
            base = ctypes.addressof(t.buf)
            ptrs = t.ptrs = (ctypes.c_void_p * len(self.codes))(*(base + o for o in self.offsets))
        self.struct.pack_into(t.buf, 0, *values)
        return ptrs


#: each launched kernel's parameters (the template's signatures, in order; a kernel's bf16 / f16 / f32 instances alike)
PARAMS = {
    # key, value, cache, slots, slots are int64, rows, hk, key / value strides (token, head), layout
    "store": KernelParams("PPPPiqiqqqqL"),
    # query, cache, block table, its row stride, seq_lens, acc, lse, hq, hk, num_splits, scale·log2(e), window,
    # layout, balanced cap, plan
    "decode_split": KernelParams("PPPqPPPiiifiLiP"),
    # acc, lse, sinks, out, hq, num_splits, (rows,) plan, seq_lens, window
    "decode_merge": KernelParams("PPPPiiPPi"),
    "decode_merge_rows": KernelParams("PPPPiiqPPi"),
    # cache, block table, its row stride, seq_lens, k, v, hk, max_len, layout
    "dequant": KernelParams("PPqPPPiiL"),
}
PARAMS["store_dense"] = KernelParams(PARAMS["store"].codes + "P")  # + Πᵀ's B fragments (a dense rotation)
PARAMS["dequant_dense"] = KernelParams(PARAMS["dequant"].codes + "P")  # + Π's
PARAMS["decode_split_bal"] = PARAMS["decode_split"]
PARAMS["dequant_f32"] = PARAMS["dequant"]


def dense_fragments(rot_t: torch.Tensor) -> torch.Tensor:
    """A dense rotation's B = Πᵀ [D, D] (fp32) as bf16 parts b0 + b1 + b2 (each the bf16 of the rest: 24 bits, the
    fp32 value exactly) in m16n8k16 B-fragment order: int32 [3, D/16, D/8, 32, 2], entry [p, kc, n, 4g + t, h] the
    bf16 pair (B[16kc + 2t + 8h, 8n + g], B[16kc + 2t + 8h + 1, 8n + g]) of part p, the first in the low half."""
    d = rot_t.shape[0]
    b, parts = rot_t.double().cpu(), []
    for _ in range(3):
        h = b.to(torch.bfloat16)
        parts.append(h)
        b = b - h.double()
    bits = torch.stack(parts).view(torch.int16).to(torch.int32) & 0xFFFF  # [3, D (k), D (n)]
    bits = bits.view(3, d // 16, 2, 4, 2, d // 8, 8)  # [p, kc, h, t, pair, n, g]: k = 16kc + 8h + 2t + pair
    bits = bits.permute(0, 1, 5, 6, 3, 2, 4)  # [p, kc, n, g, t, h, pair]
    words = bits[..., 0] | (bits[..., 1] << 16)  # [p, kc, n, g, t, h]
    return words.reshape(3, d // 16, d // 8, 32, 2).contiguous().to(torch.int32)


# ------------------------------------------------------------------------------- driver API
@dataclass(frozen=True)
class DriverSpelling:
    libs: tuple[str, ...]
    load: str
    get_function: str
    launch: str
    error_string: str
    set_attribute: str


DRIVERS = {
    "cuda": DriverSpelling(("libcuda.so.1", "libcuda.so"), "cuModuleLoadData", "cuModuleGetFunction",
                           "cuLaunchKernel", "cuGetErrorString", "cuFuncSetAttribute"),
    "hip": DriverSpelling(("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.7"), "hipModuleLoadData",
                          "hipModuleGetFunction", "hipModuleLaunchKernel", "hipGetErrorString", "hipFuncSetAttribute"),
}


class Driver:
    """The few driver entry points the launcher needs, for CUDA or HIP (same call shapes)."""

    _instances: dict[str, "Driver"] = {}
    _lock = threading.Lock()

    def __init__(self, name: str):
        sp = DRIVERS[name]
        err = None
        for lib in sp.libs:
            try:
                self.lib = ctypes.CDLL(lib)
                break
            except OSError as e:
                err = e
        else:
            raise RuntimeError(f"cannot open the {name} driver library ({', '.join(sp.libs)}): {err}")
        self.name, self.sp = name, sp
        self._load = getattr(self.lib, sp.load)
        self._getfn = getattr(self.lib, sp.get_function)
        self._launch = getattr(self.lib, sp.launch)
        self._launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [ctypes.c_uint, ctypes.c_void_p,
                                                                          ctypes.c_void_p, ctypes.c_void_p]
        self._err = getattr(self.lib, sp.error_string)

    @classmethod
    def get(cls, name: str) -> "Driver":
        with cls._lock:
            if name not in cls._instances:
                cls._instances[name] = Driver(name)
            return cls._instances[name]

    def check(self, rc: int, what: str) -> None:
        if rc != 0:
            if self.name == "cuda":
                s = ctypes.c_char_p()
                self._err(rc, ctypes.byref(s))
                msg = s.value.decode() if s.value else "?"
            else:
                self._err.restype = ctypes.c_char_p
                msg = (self._err(rc) or b"?").decode()
            raise RuntimeError(f"{what} failed: {self.name} error {rc} ({msg})")

    def load_module(self, image: bytes) -> ctypes.c_void_p:
        mod = ctypes.c_void_p()
        self.check(self._load(ctypes.byref(mod), ctypes.c_char_p(image)), f"{self.sp.load}")
        return mod

    def function(self, module: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        fn = ctypes.c_void_p()
        self.check(self._getfn(ctypes.byref(fn), module, name.encode()), f"{self.sp.get_function}({name})")
        return fn

    #: CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    MAX_DYNAMIC_SHARED = 8

    def allow_dynamic_smem(self, fn: ctypes.c_void_p, nbytes: int) -> None:
        """Lets ``fn`` launch with ``nbytes`` of dynamic shared memory (over the 48 KB default: opt-in)."""
        if self.name != "cuda":
            raise RuntimeError(f"dynamic shared memory over 48 KB: the launcher sets it on CUDA only, not {self.name}")
        f = getattr(self.lib, self.sp.set_attribute)
        f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        self.check(f(fn, self.MAX_DYNAMIC_SHARED, int(nbytes)), f"{self.sp.set_attribute}(max dynamic shared {nbytes})")

    def launch(self, fn, grid: tuple[int, int, int], block: int, params: KernelParams, values: tuple, stream: int,
               smem: int = 0, after_trigger: bool = False) -> None:
        """``fn`` with the argument ``values`` laid out by ``params`` (its ``PARAMS`` entry). ``after_trigger``: a
        programmatic dependent launch (CUDA, sm_90+): the grid may start once every block of the previous kernel in
        the stream has run ``griddepcontrol.launch_dependents`` (or exited), and waits for that kernel's memory at its
        ``griddepcontrol.wait``; it hides the launch latency between two kernels (captured into CUDA graphs as a
        programmatic edge)."""
        ptrs = params.pack(values)
        if after_trigger and self.launch_ex is not None:
            cfg = _LaunchConfig(grid[0], grid[1], grid[2], block, 1, 1, smem, stream, self._pdl_attrs, 1)
            self.check(self.launch_ex(ctypes.byref(cfg), fn, ptrs, None), "cuLaunchKernelEx")
            return
        self.check(self._launch(fn, grid[0], grid[1], grid[2], block, 1, 1, smem, stream, ptrs, None), self.sp.launch)

    @property
    def launch_ex(self):
        """cuLaunchKernelEx (CUDA 12+ drivers), or None (HIP, older drivers, ``TQGEN_PDL=0``)."""
        if not hasattr(self, "_launch_ex"):
            f = getattr(self.lib, "cuLaunchKernelEx", None) if self.name == "cuda" else None
            if f is not None and os.environ.get("TQGEN_PDL", "1") != "0":
                f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
                self._pdl_attr = _LaunchAttr(id=_PROGRAMMATIC_STREAM_SERIALIZATION)
                self._pdl_attr.value[0] = 1  # programmaticStreamSerializationAllowed
                self._pdl_attrs = ctypes.pointer(self._pdl_attr)
            else:
                f = None
            self._launch_ex = f
        return self._launch_ex


#: CUlaunchAttributeID CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
_PROGRAMMATIC_STREAM_SERIALIZATION = 6


class _LaunchAttr(ctypes.Structure):
    """CUlaunchAttribute: the id, padding to 8 bytes, a 64-byte value union."""

    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_ubyte * 64)]


class _LaunchConfig(ctypes.Structure):
    """CUlaunchConfig (cuda.h): grid, block, dynamic shared bytes, stream, attributes."""

    _fields_ = [("grid_x", ctypes.c_uint), ("grid_y", ctypes.c_uint), ("grid_z", ctypes.c_uint),
                ("block_x", ctypes.c_uint), ("block_y", ctypes.c_uint), ("block_z", ctypes.c_uint),
                ("smem", ctypes.c_uint), ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_LaunchAttr)),
                ("num_attrs", ctypes.c_uint)]


# ------------------------------------------------------------------------------- building
def device_arch(device: torch.device) -> str:
    """The compile arch of a torch device: "sm90" (NVIDIA) or "gfx942" (AMD)."""
    if getattr(torch.version, "hip", None):
        return torch.cuda.get_device_properties(device).gcnArchName.split(":")[0]
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm{major}{minor}"


def build_binary(v: Variant, arch: str) -> Path:
    """Compile the variant for ``arch`` once (cached by variant id + arch); returns the binary path. CUDA: nvcc where
    found, else NVRTC (``tqgen.nvrtc``: the libnvrtc a CUDA build of torch installs), ``$TQGEN_CUDA_COMPILER`` forcing
    one. Processes and threads that build one variant at once (serving workers, test shards sharing a cache) each
    compile in a directory of their own and rename the binary into place (atomic): every caller gets a whole binary
    (a shared output directory let one build move another's output away mid-build)."""
    import shutil
    import tempfile

    from .compile_cpp import compile_hip
    from .nvrtc import compile_cuda_any
    out_dir = user_cache() / str(v.backend) / v.id
    out = out_dir / f"{arch}.{'cubin' if v.backend.value == 'cuda' else 'hsaco'}"
    if out.exists():
        return out
    src = variant_dir(v) / source_name(v)
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".build-{arch}-", dir=out_dir))
    try:
        res = compile_cuda_any(src, arch, work) if v.backend.value == "cuda" else compile_hip(src, arch, work)
        if not res.ok or res.output is None:
            raise RuntimeError(f"compiling {v.id} for {arch} failed:\n{res.log[-4000:]}")
        Path(res.output).replace(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log.info("built %s for %s with %s (%s)", v.id, arch, res.cmd[0] if res.cmd else "?", out)
    return out


def decode_splits(units: int, max_seq_len: int, resident_warps: int, warps_per_block: int) -> int:
    """Splits per (sequence, KV head): a multiple of the block's warps, at most a quarter of the tiles
    (16 tokens each) and at most 64, or, for few (sequence, KV head) units, as many as fill half the
    resident warps (``MAX_SPLITS`` at most). Equal splits run equally long, so the grid should fill whole
    waves of ``resident_warps``: the fewest splits whose ``units · splits`` warps fill their waves to >= 95 %,
    else the best fill (B=1: the most splits). B=32, Hk=8 on 132 SMs x 16 warps took 10 splits before
    (1.21 waves, the second 21 % full); now 8 (0.97 of one wave). B=1 past 64 splits (H200, `tqgen tune`,
    CUDA graphs, bench/results/h200-2026-12-02-splits-b1.md): more warps pay until about half the resident
    ones, then each split's fixed cost (its pipeline's first loads, the merge's reads) outweighs them: Hk 8
    L=128K best at 128-192 splits (k8v4 SoA 66.7 us vs 78.3 at 64 and 72.7 at a full wave's 252), Hk 3
    head_dim 64 at 256-512 (27.2 vs 55.7 us at 64)."""
    w = warps_per_block
    few = max(64, resident_warps // (2 * max(1, units))) // w * w
    cap = max(w, min(split_cap(max_seq_len, w), few))
    best, best_fill = w, -1.0
    for s in range(w, cap + 1, w):
        warps = max(1, units) * s
        fill = warps / (math.ceil(warps / resident_warps) * resident_warps)
        if fill >= 0.95:
            return s
        if fill > best_fill + 1e-9:
            best, best_fill = s, fill
    return best


def decode_grid(options, splits: int, hk: int, gqa: int, batch: int) -> tuple[int, int, int]:
    """The decode's grid for ``decode_warps`` warps a block: x the splits (a warp a split: ceil(splits / warps)
    blocks; with ``head_groups`` a block a split), y the KV heads (one a block; with ``head_groups`` groups of
    ``decode_warps``) times the query octets of a GQA group, z the sequences. The kernel maps its warps back
    the same way (tests/test_lower_cuda.py re-enacts both)."""
    w, octets = options.decode_warps, math.ceil(gqa / QUERIES_PER_WARP)
    if options.head_groups:
        return splits, math.ceil(hk / w) * octets, batch
    return math.ceil(splits / w), hk * octets, batch


def span_tiles(seq_len: int, window: int = 0) -> int:
    """The decode's 16-token tiles of one sequence (of its last ``window`` tokens when 0 < window < seq_len)."""
    start = seq_len - window if 0 < window < seq_len else 0
    return (seq_len + 15) // 16 - start // 16


def balanced_blocks(seq_lens, window: int, blocks_per_unit: int, cap: int, uniform_blocks: int | None = None) -> list[int]:
    """A balanced decode's blocks a unit for each sequence (the template's ``tq_bal_plan`` / ``tq_bal_block``, re-enacted
    for tests and docs). Of the grid's K = ``len(seq_lens) · blocks_per_unit`` blocks a unit, at most Kt are dealt: K,
    but at most Kc long blocks (floor(X · N / n_max): the classic grid for as many sequences of the longest length, or
    ``cap`` where that is more: ``balanced_cap``, a share of one wave; N: all tiles) plus the short sequences (at most
    N / Kc tiles), whose blocks end early. Sequence b gets ceil(n_b / lam) (water-filling: n_b its tiles, lam the
    least level at which they sum to at most Kt, so no block has more than lam tiles; at least one block a non-empty
    sequence, none an empty one); equal lengths keep ``uniform_blocks`` each (the classic, tuned grid; default
    ``blocks_per_unit``; the grid may be wider, ``balanced_width``). A sequence's splits are its blocks times
    ``CudaOptions.split_step()``; the grid's blocks past the dealt ones exit at once."""
    tiles = [span_tiles(int(n), window) for n in seq_lens]
    if not tiles or min(tiles) == max(tiles):
        return [uniform_blocks or blocks_per_unit] * len(tiles)
    n, k = sum(tiles), len(tiles) * blocks_per_unit
    kc = min(k, max(blocks_per_unit * n // max(tiles), max(cap, 1)))
    kt = min(k, kc + sum(0 < t <= n // kc for t in tiles))
    ne = sum(t > 0 for t in tiles)
    hi = min(max(tiles), -(-n // (kt - ne))) if kt > ne else max(tiles)
    lo = min(max(1, -(-n // kt)), hi)
    while lo < hi:  # the least level whose blocks fit in Kt (the kernel's bisection)
        mid = lo + (hi - lo) // 2
        lo, hi = (lo, mid) if sum(-(-t // mid) for t in tiles) <= kt else (mid + 1, hi)
    return [-(-t // lo) for t in tiles]


def balanced_cap(options, sms: int, grid_y: int) -> int:
    """``balanced_blocks``' cap, the long blocks a unit a batch waiting on a few long sequences spreads over: one wave
    (the launch bound's blocks an SM x SMs, over the grid's units) for decodes of 2 warps a block, 3/4 of one for
    wider blocks. H200, 16 decodes x 4 mixes at B=32 L=32K, both caps in one run
    (bench/results/h200-2026-12-03-balanced-cap-v2.md): a full wave ran the 11 2-warp decodes' ramp and half mixes
    1.01-1.27x the classic grid (3/4 of a wave: 0.91-1.22x) and cost the 4-warp AoS 4bit_nc (one-long 1.47 -> 1.26x)
    and SoA 4bit_nc at head_dim 64 (1.42 -> 1.32x); AoS 4bit_nc at head_dim 64 would have gained (ramp 0.85 -> 1.11x),
    its options are those of head_dim 128."""
    wave = max(1, sms * options.decode_min_blocks // max(1, grid_y))
    return wave if options.decode_warps <= 2 else max(1, 3 * wave // 4)


def balanced_width(options, sms: int, grid_y: int, batch: int, blocks_per_unit: int) -> int:
    """A balanced decode's grid width (blocks a unit): the tuned ``blocks_per_unit``; where that is one block a unit
    (nothing to deal: B=128's tuned count for k8v4 SoA, 4bit_nc and 3bit_nc SoA), enough that the dealt count (batch x
    width) holds the cap's long blocks (``balanced_cap``) and one block for every other sequence,
    ceil((cap + batch - 1) / batch). Equal lengths still run the tuned count (the kernel's uniform path; the blocks
    past it exit). H200, the mixed suite (bench/results/h200-2026-12-03-balanced-width.md): B=128 one-long 0.94-0.99x
    the classic grid -> 2.0-3.9x for those four; the wider width where the tuned grid already deals cost B=32 ramps
    7-16 %, so it is not taken there."""
    if blocks_per_unit > 1:
        return blocks_per_unit
    return max(1, -(-(balanced_cap(options, sms, grid_y) + batch - 1) // max(1, batch)))


def merge_kind(rows: int, splits: int) -> str:
    """The decode merge for ``rows`` (sequence, query head) rows of ``splits`` partial results:
    ``groups`` (a block of MERGE_GROUPS·D threads per row, the splits spread over its groups: many
    splits, few rows) or ``rows`` (a warp per row, MERGE_ROWS rows a block, its splits in turn: few
    splits, many rows). H200, both on the same inputs (bench/dbg/merge_cost.py, MERGE=1): 4096 rows x 4
    splits 3.2 vs 15.1 us, 1024 x 16 4.1 vs 5.6; 512 x 16 4.0 vs 3.5, 32 x 64 10.2 vs 3.0: rows from 512
    rows on with at most rows / 64 splits (32 at most)."""
    return "rows" if rows >= 512 and splits <= min(32, rows // 64) else "groups"


def merge_groups(splits: int, head_dim: int = 128) -> int:
    """The block-a-row merge's thread groups (of D threads) for rows of up to ``splits`` partial results: MERGE_GROUPS,
    MERGE_GROUPS_MANY from MERGE_GROUPS_MANY_FROM splits (fewer dependent rounds of loads a group). H200, same run
    (bench/results/h200-2026-12-04-merge-groups.md): this rule made B=1 calls at 2K-128K tokens (64-192 splits)
    1.4-4.9 % faster than 4 groups always; 8 groups always made B=8 equal lengths at 16-24 splits 2-3 % slower (their
    merge alone 2.8 -> 4.2 us). At head_dim 256 both are 4 groups (a block holds 1024 threads: merge_groups_many)."""
    return merge_groups_many(head_dim) if splits >= MERGE_GROUPS_MANY_FROM else MERGE_GROUPS


# ------------------------------------------------------------------------------- kernels
_RAW_STREAM = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # CUDA / ROCm builds of torch


def dequant_warp_tokens(options, head_dim: int, rounds: int = 1) -> int:
    """Tokens a warp of the dequant: the rows kernel's rounds of 32 / store_lanes(head_dim) rows (``rounds`` > 1: the
    dense rotation's rounds through one rotation, ``lower_cuda.dequant_rounds``, else ``dequant_rows``), else the lane
    kernel's ``dequant_tokens``."""
    if rounds > 1:
        return rounds * (32 // store_lanes(head_dim))
    return options.dequant_rows * (32 // store_lanes(head_dim)) if options.dequant_rows else options.dequant_tokens


def _ptr(t: torch.Tensor | None) -> int:
    return t.data_ptr() if t is not None else 0


def _rows16(x: torch.Tensor) -> torch.Tensor:
    """[N, H, D] with every row 16-byte aligned (the store reads 32 elements per lane in 16-byte
    loads): unchanged when it already is, else a contiguous copy (torch allocations are aligned)."""
    if (x.stride(2) == 1 and x.data_ptr() % 16 == 0 and (x.stride(0) * x.element_size()) % 16 == 0
            and (x.stride(1) * x.element_size()) % 16 == 0):
        return x
    x = x.contiguous()
    return x if x.data_ptr() % 16 == 0 else x.clone()


@dataclass
class CudaKernels:
    """One compiled variant on one device; the same call surface as TritonKernels."""

    variant: Variant
    driver: Driver
    functions: dict[str, ctypes.c_void_p]
    decode_smem: int = 0  # dynamic shared memory of the decode kernel (lower_cuda.decode_dynamic_smem)
    pdl: bool = False  # the merge by programmatic dependent launch (CUDA on sm_90+: Driver.launch)
    _splits: dict = field(default_factory=dict)  # num_splits_for's answers by shape
    _layouts: dict = field(default_factory=dict)  # hk -> layout_params (the TqLayout struct's 16 ints)
    _rotations: dict = field(default_factory=dict)  # a dense rotation's Πᵀ (the query's) and B fragments, a device

    @property
    def spec(self) -> LayoutSpec:
        return self.variant.spec

    def _layout(self, hk: int) -> tuple[int, ...]:
        if hk not in self._layouts:
            self._layouts[hk] = tuple(layout_params(self.spec, hk))
        return self._layouts[hk]

    def _fn(self, kernel: str, dtype: torch.dtype):
        if kernel == "dequant" and dtype == torch.float32:
            return self.functions["tq_dequant_f32"]
        if dtype not in (torch.bfloat16, torch.float16):
            raise ValueError(f"{kernel}: dtype {dtype} not supported: float16 or bfloat16")
        return self.functions[KERNEL_NAMES[kernel][0 if dtype == torch.bfloat16 else 1]]

    def _rotation_t(self, device: torch.device) -> torch.Tensor:
        """Πᵀ (fp32, [D, D]) on ``device``, made once: a dense rotation's query is q·Πᵀ."""
        key = str(device)
        if key not in self._rotations:
            self._rotations[key] = ref.rotation(self.spec).t().contiguous().to(device)
        return self._rotations[key]

    def _dense_frags(self, device: torch.device, inverse: bool = False) -> torch.Tensor:
        """The bf16 parts of Πᵀ (the store's y = k·Πᵀ; ``inverse``: Π, the dequant's k = y·Π) as m16n8k16 B fragments,
        made once a device (``dense_fragments``)."""
        key = ("frags", inverse, str(device))
        if key not in self._rotations:
            rot = ref.rotation(self.spec)
            self._rotations[key] = dense_fragments(rot if inverse else rot.t().contiguous()).to(device)
        return self._rotations[key]

    def _rotated_args(self, kind: str, values: tuple, device: torch.device) -> tuple[tuple, KernelParams]:
        """A store / dequant launch's values and parameters: with a dense rotation, + its B fragments (Πᵀ for the
        store, Π for the dequant) and the kernel's longer parameter list."""
        if not dense_rotation(self.spec):
            return values, PARAMS[kind]
        frags = self._dense_frags(device, inverse=kind == "dequant")
        return (*values, frags.data_ptr()), PARAMS[kind + "_dense"]

    @staticmethod
    def _stream(device: torch.device) -> int:
        """torch's current stream on ``device`` (its raw handle: no Stream object, a few us less a launch)."""
        if _RAW_STREAM is not None:
            return _RAW_STREAM(torch.cuda.current_device() if device.index is None else device.index)
        return torch.cuda.current_stream(device).cuda_stream

    # ------------------------------------------------------------------ store
    def store(self, key: torch.Tensor, value: torch.Tensor, cache: torch.Tensor, slot_mapping: torch.Tensor,
              *, check: bool = True) -> None:
        if check:
            ref.check_store_args(self.spec, key, value, cache, slot_mapping)
        n, hk, d = key.shape
        if n == 0:
            return
        key, value = _rows16(key), _rows16(value)
        if slot_mapping.dtype not in (torch.int32, torch.int64):  # checked even with check=False: no host sync
            raise ValueError(f"store: slot_mapping dtype {slot_mapping.dtype} not supported: int32 or int64 "
                             "(one slot per token; -1 skips a token)")
        slots = slot_mapping.contiguous()  # the kernel reads either width
        rows = n * hk
        if rows >= 2**31:
            raise ValueError(f"store: {n} tokens x {hk} heads = {rows} rows; the CUDA store indexes rows with 32 bits "
                             f"(at most {2**31 - 1}). Store in chunks of fewer tokens.")
        warps = self.variant.options.row_warps
        per_block = store_rounds(self.spec, self.variant.options) * warps * (32 // store_lanes(d))  # rows per block
        values = (key.data_ptr(), value.data_ptr(), cache.data_ptr(), slots.data_ptr(), int(slots.element_size() == 8),
                  rows, hk, key.stride(0), key.stride(1), value.stride(0), value.stride(1), *self._layout(hk))
        values, params = self._rotated_args("store", values, cache.device)
        self.driver.launch(self._fn("store", key.dtype), (math.ceil(rows / per_block), 1, 1), 32 * warps,
                           params, values, self._stream(cache.device))

    # ----------------------------------------------------------------- decode
    def num_splits_for(self, batch: int, num_kv_heads: int, max_seq_len: int, device: torch.device) -> int:
        """Splits (one warp each) per (sequence, kv head), fixed by shapes only (CUDA-graph safe): the
        device's tuning table where it has this variant near this shape (tqgen.tuning), else
        ``heuristic_splits``."""
        key = (device.type, device.index, batch, num_kv_heads, max_seq_len, tuning_generation())
        s = self._splits.get(key)  # memoised: the table lookup is ~50 us of Python
        if s is None:
            if device.type == "cuda" and self.variant.target.info.vendor is Vendor.NVIDIA:
                s = tuned_splits(self.variant, torch.cuda.get_device_name(device), batch * num_kv_heads, max_seq_len)
            if s is None:
                s = self.heuristic_splits(batch, num_kv_heads, max_seq_len, device)
            self._splits[key] = s
        return s

    def heuristic_splits(self, batch: int, num_kv_heads: int, max_seq_len: int, device: torch.device) -> int:
        """``decode_splits`` with resident warps per SM = the launch bound's blocks x warps (CUDA), 16 (HIP)."""
        sms = sm_count(device)
        o = self.variant.options
        per_sm = 16 if self.variant.target.info.vendor is Vendor.AMD else o.decode_min_blocks * o.decode_warps
        # head groups: a block is a (sequence, split) of decode_warps heads (its idle warps past the last head count)
        heads = math.ceil(num_kv_heads / o.decode_warps) * o.decode_warps if o.head_groups else num_kv_heads
        return decode_splits(batch * heads, max_seq_len, sms * per_sm, o.split_step())

    def balanced_grid_width(self, batch: int, num_kv_heads: int, gqa: int, num_splits: int, device,
                            room: int | None = None) -> int:
        """Blocks a unit of a balanced decode's grid at ``num_splits`` (a multiple of the block's splits, from 2
        sequences): ``balanced_width``, but no more than ``room`` splits (a workspace's) hold; the classic grid's
        width otherwise. The launcher's rule; the workspace sizes itself by it, the GPU tests re-enact it."""
        o, step = self.variant.options, self.variant.options.split_step()
        grid = decode_grid(o, num_splits, num_kv_heads, gqa, batch)
        if batch < 2 or num_splits % step:
            return grid[0]
        width = balanced_width(o, sm_count(torch.device(device)), grid[1], batch, grid[0])
        return width if room is None else max(grid[0], min(width, room // step))

    def workspace(self, batch: int, num_q_heads: int, num_splits: int, device,
                  num_kv_heads: int | None = None) -> dict[str, torch.Tensor]:
        """Decode scratch for ``num_splits`` splits a (sequence, query head); with ``num_kv_heads``, room for the
        wider grid of a balanced decode too (``balanced_grid_width``: a batch waiting on a few long sequences gets
        more blocks for them)."""
        d = self.spec.head_dim
        cols, step = num_splits, self.variant.options.split_step()
        if num_kv_heads and num_splits % step == 0:
            cols = self.balanced_grid_width(batch, num_kv_heads, max(1, num_q_heads // num_kv_heads), num_splits,
                                            device) * step
        return {"acc": torch.empty(batch, num_q_heads, cols, d, dtype=torch.float32, device=device),
                "lse": torch.empty(batch, num_q_heads, cols, dtype=torch.float32, device=device),
                "plan": torch.empty(batch, 2, dtype=torch.int64, device=device),  # a balanced decode's rows a sequence
                "num_splits": num_splits}  # the equal-length count (acc may be wider: balanced_grid_width)

    def decode(self, query: torch.Tensor, cache: torch.Tensor, block_table: torch.Tensor, seq_lens: torch.Tensor,
               *, scale: float | None = None, sinks: torch.Tensor | None = None, sliding_window: int | None = None,
               num_splits: int | None = None, workspace: dict | None = None, out: torch.Tensor | None = None,
               check: bool = True, balanced: bool | None = None) -> torch.Tensor:
        """Split-KV decode: ``num_splits`` splits a (sequence, KV head) for a batch of equal lengths (the
        workspace's; default ``num_splits_for``). ``balanced=True`` deals the grid's blocks to the sequences by their
        tiles instead (``balanced_blocks``; the template's ``tq_bal_block``), so that a batch of mixed lengths spreads
        its work evenly: a grid of ``balanced_width`` blocks a unit where the workspace has room for it (made with
        ``num_kv_heads``; else the classic grid's), the classic splits for equal lengths. ``None`` (default): on
        from 2 sequences where a unit has more than one block to deal (equal lengths within 1 % of the classic kernel
        at head_dim 128, 2-4 % slower at 64; 1.4-4.2x faster on a batch waiting on one long sequence:
        bench/results/h200-2026-12-03-balanced-equal-cost.md, -mixed.md)."""
        s = self.spec
        if check:
            ref.check_decode_args(s, query, cache, block_table, seq_lens, sinks, sliding_window,
                                  query_dtypes=(torch.float16, torch.bfloat16))
        b, hq, d = query.shape
        hk = cache.shape[2]
        g = hq // hk
        if g > self.variant.rules.max_gqa:
            raise ValueError(f"{self.variant.id}: GQA group {g} (Hq={hq}, Hk={hk}) exceeds {self.variant.rules.max_gqa}; "
                             "use the triton backend for larger groups")
        scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
        splits = num_splits or self.num_splits_for(b, hk, block_table.shape[1] * s.block_size, cache.device)
        ws = workspace or self.workspace(b, hq, splits, cache.device, num_kv_heads=hk)
        step = self.variant.options.split_step()
        if ws["acc"].shape[2] < splits or ws["acc"].shape[0] < b:
            raise ValueError(f"workspace holds {tuple(ws['acc'].shape)}; need batch ≥ {b} and {splits} splits")
        grid = decode_grid(self.variant.options, splits, hk, g, b)
        width = grid[0] if balanced is False else \
            self.balanced_grid_width(b, hk, g, splits, cache.device, room=ws["acc"].shape[2])
        if balanced is None:
            # never with one block a unit to deal (nothing to deal), for one sequence, or with a workspace without
            # "plan"
            balanced = b > 1 and splits % step == 0 and width > 1 and "plan" in ws
        elif balanced and splits % step:
            raise ValueError(f"{self.variant.id}: a balanced decode needs a split count that is a multiple of {step} "
                             f"(the block's splits); got num_splits={splits}: pass a multiple or balanced=False")
        if dense_rotation(s):  # the kernel reads q·Πᵀ in fp32 (lower_cuda.dense_rotation)
            q = torch.matmul(query.float(), self._rotation_t(query.device))
        else:
            q = query if query.is_contiguous() else query.contiguous()
        bt = block_table if (block_table.dtype == torch.int32 and block_table.stride(1) == 1) \
            else block_table.to(torch.int32).contiguous()
        sl = seq_lens if seq_lens.dtype == torch.int32 and seq_lens.is_contiguous() else seq_lens.to(torch.int32).contiguous()
        out = out if out is not None else torch.empty(b, hq, d, dtype=query.dtype, device=query.device)
        if b == 0:
            return out
        stream = self._stream(cache.device)
        window = int(sliding_window or 0)
        if balanced:
            grid = (width,) + grid[1:]
        cap = balanced_cap(self.variant.options, sm_count(cache.device), grid[1]) if balanced else 0
        plan = ws.get("plan") if balanced else None
        if balanced and (plan is None or plan.shape[0] < b):
            raise ValueError(f"a balanced decode needs the workspace's 'plan' buffer [>= {b}, 2] int64 (got keys "
                             f"{sorted(ws)}): make the workspace with workspace(batch, num_q_heads, num_splits, device) "
                             "or pass balanced=False")
        kernel = "decode_split_bal" if balanced else "decode_split"
        self.driver.launch(self._fn(kernel, query.dtype), grid, 32 * self.variant.options.decode_warps, PARAMS[kernel], (
            q.data_ptr(), cache.data_ptr(), bt.data_ptr(), bt.stride(0), sl.data_ptr(), ws["acc"].data_ptr(),
            ws["lse"].data_ptr(), hq, hk, splits, scale * LOG2E, window, *self._layout(hk), cap, _ptr(plan)),
            stream, smem=self.decode_smem)
        sk = sinks.float().contiguous() if sinks is not None else None
        # a balanced merge: rows of up to the grid's splits (merge_kind), num_splits the equal-length count (the plan
        # on equal lengths, which the merge takes without reading it)
        self.merge(ws, sk, out, hq, splits, stream, kind=merge_kind(b * hq, grid[0] * step) if balanced else None,
                   plan=plan, seq_lens=sl, window=window, most=grid[0] * step if balanced else None)
        return out

    def merge(self, ws: dict, sinks: torch.Tensor | None, out: torch.Tensor, hq: int, splits: int, stream: int,
              kind: str | None = None, plan: torch.Tensor | None = None, seq_lens: torch.Tensor | None = None,
              window: int = 0, most: int | None = None) -> None:
        """Stage 2: the splits' log-sum-exp merge into ``out`` [B, Hq, D] (``kind``: ``merge_kind``'s choice);
        ``plan`` (a balanced decode's: where each sequence's partial results are) with ``seq_lens`` (int32) and
        ``window`` (a sequence without tiles has none); with a plan, ``splits`` is the decode's equal-length count
        (the rows on equal lengths: the plan's there) and ``kind`` should be chosen for the grid's widest; ``most``: the
        splits a row may hold (default ``splits``; a balanced decode's grid width), which sizes the block-a-row merge
        (``merge_groups``)."""
        rows, d = out.shape[0] * hq, out.shape[2]
        args = (ws["acc"].data_ptr(), ws["lse"].data_ptr(), _ptr(sinks), out.data_ptr(), hq, splits)
        bal = (_ptr(plan), _ptr(seq_lens if plan is not None else None), window)
        if (kind or merge_kind(rows, splits)) == "rows":
            self.driver.launch(self._fn("decode_merge_rows", out.dtype), (math.ceil(rows / MERGE_ROWS), 1, 1),
                               32 * MERGE_ROWS, PARAMS["decode_merge_rows"], args + (rows,) + bal, stream,
                               after_trigger=self.pdl)
        else:
            groups = merge_groups(most or splits, d)
            self.driver.launch(self._fn("decode_merge", out.dtype), (rows, 1, 1), groups * d, PARAMS["decode_merge"],
                               args + bal, stream, after_trigger=self.pdl)

    # ---------------------------------------------------------------- dequant
    def dequant(self, cache: torch.Tensor, block_table: torch.Tensor, seq_lens: torch.Tensor,
                max_len: int | None = None, dtype: torch.dtype = torch.bfloat16, *, check: bool = True,
                ) -> tuple[torch.Tensor, torch.Tensor]:
        s = self.spec
        k, v, max_len = ref.dequant_outputs(s, cache, block_table, seq_lens, max_len, check, dtype)
        b, hk = block_table.shape[0], cache.shape[2]
        if b == 0 or max_len == 0:
            return k, v
        if b * hk > 65535:
            raise ValueError(f"dequant: batch·num_kv_heads = {b * hk} exceeds 65535; split the batch")
        bt = block_table if (block_table.dtype == torch.int32 and block_table.stride(1) == 1) \
            else block_table.to(torch.int32).contiguous()
        sl = seq_lens if seq_lens.dtype == torch.int32 and seq_lens.is_contiguous() else seq_lens.to(torch.int32).contiguous()
        o = self.variant.options
        rounds = dequant_rounds(s, o) if dtype != torch.float32 else 1  # (fp32 rows: one round, tq_dequant_rows_impl)
        w, nt = o.row_warps, dequant_warp_tokens(o, s.head_dim, rounds)  # a warp: nt tokens
        values = (cache.data_ptr(), bt.data_ptr(), bt.stride(0), sl.data_ptr(), k.data_ptr(), v.data_ptr(), hk, max_len,
                  *self._layout(hk))
        values, params = self._rotated_args("dequant", values, cache.device)
        self.driver.launch(self._fn("dequant", dtype), (math.ceil(max_len / (w * nt)), b * hk, 1), 32 * w, params,
                           values, self._stream(cache.device))
        return k, v


_LOADED: dict[tuple[str, int], CudaKernels] = {}


def load_variant(v: Variant, device: torch.device | str | int | None = None) -> CudaKernels:
    """Compile (cached) and load ``v`` on a CUDA/ROCm device."""
    if not torch.cuda.is_available():
        raise RuntimeError("the cuda/hip backends need a GPU visible to torch")
    dev = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
    if dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    key = (v.id, dev.index)
    if key not in _LOADED:
        hip = bool(getattr(torch.version, "hip", None))
        if hip != (v.target.info.vendor is Vendor.AMD):
            raise RuntimeError(f"{v.id} targets {v.target}, but the device is {'AMD' if hip else 'NVIDIA'}")
        arch = device_arch(dev)
        _LOADED[key] = kernels_from_image(v, build_binary(v, arch).read_bytes(), dev)
    return _LOADED[key]


def kernels_from_image(v: Variant, image: bytes, device: torch.device) -> CudaKernels:
    """``v``'s kernels from a compiled image (cubin / hsaco) on ``device``, uncached: ``load_variant``'s loader, also
    for debug scripts that time a modified rendering of a variant (bench/dbg/bal_exp.py)."""
    hip = bool(getattr(torch.version, "hip", None))
    drv = Driver.get("hip" if hip else "cuda")
    with torch.cuda.device(device):
        torch.cuda.current_stream(device)  # makes torch's (primary) context current on this thread
        torch.empty(1, device=device)
        mod = drv.load_module(image)
        fns = {name: drv.function(mod, name) for pair in KERNEL_NAMES.values() for name in pair}
        smem = decode_dynamic_smem(v.spec, v.target, v.kind, v.options)
        if smem:  # the 48 KB default bounds static + dynamic together: opt in whatever the size
            for name in KERNEL_NAMES["decode_split"] + KERNEL_NAMES["decode_split_bal"]:
                drv.allow_dynamic_smem(fns[name], smem)
    return CudaKernels(v, drv, fns, smem, pdl=not hip and int(device_arch(device)[2:]) >= 90)


def load_cuda(spec: LayoutSpec, target: str | Target, kind: str = "generic", device=None) -> CudaKernels:
    """Load (building on demand) the CUDA/HIP variant of ``spec`` for ``target``."""
    return load_variant(make_variant(spec, target, kind), device)
