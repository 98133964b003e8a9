"""Pure-torch reference oracle (CPU or GPU): slow, vectorised, obviously correct.

Operates on the real uint8 cache ``[num_blocks, block_size, num_kv_heads, slot_bytes]`` of either
layout; every byte goes through :func:`tqgen.derive_layout`. Follows DESIGN §1 exactly:

keys (lloyd_max), fp32 math::

    n = sqrt(Σ k²);  x̂ = k / (n + 1e-8);  y = x̂ · Πᵀ
    idx_i = #{ j : y_i ≥ m_j }                       (midpoints m, ties go up)
    s = n,  or folded  s = n / sqrt(Σ c[idx]² + 1e-16)
    stored: idx as an LSB-first bit stream, fp16(s)
    dequant (rotated domain): s · c[idx], divided by sqrt(Σ c[idx]² + 1e-16) when
    norm_correction is on and the norm was not folded; original domain: that · Π

keys (fp8): each element saturated to the format's largest finite value, then cast (RNE); with a
    rotation (optional for fp8, ``rotation="hadamard"``/``"rht"``) the elements of y = k·Πᵀ instead.

values::

    v clamped to the fp16 range ±65504 (the metadata is fp16: larger values saturate)
    lo = min v, hi = max v, scale = max((hi - lo)/(2^b - 1), 1e-8)
    q = clamp(floor((v - lo)/scale + 0.5), 0, 2^b - 1);  stored fp16(scale), fp16(lo)
    dequant q · scale + zero   (fp16 scale and zero, fp32 math)

Reference ``decode`` returns float32 ``[B, Hq, D]`` computed in float64 from the dequantised
cache: it is the oracle, not a fast path.
"""

from __future__ import annotations

import functools
import logging
import math
from typing import TYPE_CHECKING

import torch

from .codebook import lloyd_max
from .ir import FP8_MAX, KeyCodec, LayoutSpec, Rotation
from .layout import ByteLayout, FieldAddress, PageAddressing, derive_layout
from .rotation import rotation_matrix

if TYPE_CHECKING:  # pragma: no cover
    pass

log = logging.getLogger("tqgen.reference")

FP16_MAX = 65504.0
NORM_EPS = 1e-8  # x̂ = k / (‖k‖ + 1e-8)
CNORM_EPS = 1e-16  # ‖c[idx]‖ = sqrt(Σc² + 1e-16)
SCALE_MIN = 1e-8  # V scale floor for constant vectors
KV_DTYPES = (torch.float16, torch.bfloat16)


# ---------------------------------------------------------------- bit packing
def pack_bits(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """[..., n] integer codes < 2**bits → [..., ceil(n·bits/8)] uint8, LSB-first bit stream."""
    n = codes.shape[-1]
    c = codes.to(torch.int64)
    shifts = torch.arange(bits, device=c.device)
    stream = ((c[..., None] >> shifts) & 1).reshape(*c.shape[:-1], n * bits)
    nbytes = math.ceil(n * bits / 8)
    pad = nbytes * 8 - n * bits
    if pad:
        stream = torch.nn.functional.pad(stream, (0, pad))
    stream = stream.reshape(*c.shape[:-1], nbytes, 8)
    return (stream << torch.arange(8, device=c.device)).sum(-1).to(torch.uint8)


def unpack_bits(data: torch.Tensor, bits: int, n: int) -> torch.Tensor:
    """Inverse of :func:`pack_bits`: [..., nbytes] uint8 → [..., n] int64 codes."""
    d = data.to(torch.int64)
    stream = ((d[..., None] >> torch.arange(8, device=d.device)) & 1).reshape(*d.shape[:-1], d.shape[-1] * 8)
    stream = stream[..., : n * bits].reshape(*d.shape[:-1], n, bits)
    return (stream << torch.arange(bits, device=d.device)).sum(-1)


# ---------------------------------------------------------------- fp8 formats
def _fp8_encode(x: torch.Tensor, codec: KeyCodec) -> torch.Tensor:
    """fp32 → uint8 codes, saturating to the largest finite value like the GPU's satfinite cvt."""
    mx = FP8_MAX[codec]
    xs = torch.where(torch.isnan(x), x, x.clamp(-mx, mx))
    if codec is KeyCodec.FP8_E4M3FN:
        return xs.to(torch.float8_e4m3fn).view(torch.uint8)
    if codec is KeyCodec.FP8_E4M3FNUZ:
        return xs.to(torch.float8_e4m3fnuz).view(torch.uint8)
    # e4b15: 1 sign, 4 exponent (bias 15), 3 mantissa bits. Its codes equal e4m3fn's for x·2^8
    # (saturated at 1.75 = 448·2^-8 above, like Triton's conversion, so the code 0x7F never appears).
    # Triton rounds e4b15 ties away from zero (measured on the H200 over every bf16 value), where
    # torch's e4m3fn cast rounds them to even: bump the ties that went toward zero.
    y = xs * 256.0
    code = y.to(torch.float8_e4m3fn).view(torch.uint8)
    mag, sign = code & 0x7F, code & 0x80
    v = mag.view(torch.float8_e4m3fn).float()
    v_next = torch.clamp(mag + 1, max=0x7E).to(torch.uint8).view(torch.float8_e4m3fn).float()
    a = y.abs()
    tie_down = (a > v) & ((a - v) == (v_next - a)) & (mag < 0x7E)
    return torch.where(tie_down, sign | (mag + 1), code)


def _fp8_decode(codes: torch.Tensor, codec: KeyCodec) -> torch.Tensor:
    if codec is KeyCodec.FP8_E4M3FN:
        return codes.view(torch.float8_e4m3fn).float()
    if codec is KeyCodec.FP8_E4M3FNUZ:
        return codes.view(torch.float8_e4m3fnuz).float()
    top = (codes & 0x7F) == 0x7F
    base = (codes & 0xFF).view(torch.float8_e4m3fn).float() / 256.0
    sign = torch.where((codes & 0x80) != 0, -1.0, 1.0)
    return torch.where(top, sign * 1.875, base)


# ---------------------------------------------------------------- quantisers
def _codebook(spec: LayoutSpec, device) -> tuple[torch.Tensor, torch.Tensor]:
    cb = lloyd_max(spec.head_dim, spec.key_bits)
    return (torch.from_numpy(cb.centroids.copy()).to(device), torch.from_numpy(cb.midpoints.copy()).to(device))


def rotation(spec: LayoutSpec, device="cpu") -> torch.Tensor:
    """Π as a float32 tensor (store y = x̂·Πᵀ)."""
    return torch.from_numpy(rotation_matrix(spec.head_dim, spec.rotation, spec.rotation_seed).copy()).to(device)


def encode_keys(spec: LayoutSpec, k: torch.Tensor) -> dict[str, torch.Tensor]:
    """[M, D] keys (any float dtype) → {'k_data': uint8 [M, KD], 'k_norm': fp16 [M]}."""
    k = k.float()
    if spec.key_codec.is_fp8:
        if spec.rotation is not Rotation.NONE:  # fp8 of the rotated key y = k·Πᵀ (no norm)
            k = k @ rotation(spec, k.device).T
        sat = int((k.abs() > FP8_MAX[spec.key_codec]).sum())
        if sat:
            log.warning("%d key element(s) exceed %s's largest finite value %g and saturate",
                        sat, spec.key_codec, FP8_MAX[spec.key_codec])
        return {"k_data": _fp8_encode(k, spec.key_codec)}
    c, mid = _codebook(spec, k.device)
    n = torch.sqrt((k * k).sum(-1))
    x = k / (n[:, None] + NORM_EPS)
    y = x @ rotation(spec, k.device).T
    idx = (y[..., None] >= mid).sum(-1)  # lower bound, ties go up; NaN → 0
    s = n
    if spec.fold_norm:
        cv = c[idx]
        s = n / torch.sqrt((cv * cv).sum(-1) + CNORM_EPS)
    return {"k_data": pack_bits(idx, spec.key_bits), "k_norm": _to_fp16(s)}


def encode_values(spec: LayoutSpec, v: torch.Tensor) -> dict[str, torch.Tensor]:
    """[M, D] values → {'v_data': uint8 [M, VD], 'v_scale': fp16 [M], 'v_zero': fp16 [M]}."""
    v = v.float()
    v = torch.where(torch.isnan(v), v, v.clamp(-FP16_MAX, FP16_MAX))
    levels = 2**spec.value_bits - 1
    lo, hi = v.min(-1).values, v.max(-1).values
    scale = (hi - lo) / torch.full_like(hi, levels)  # a true division (CUDA torch turns "/ 15" into "* (1/15)")
    scale = torch.where(scale > SCALE_MIN, scale, torch.full_like(scale, SCALE_MIN))
    q = torch.floor((v - lo[:, None]) / scale[:, None] + 0.5).clamp(0, levels)
    q = torch.where(torch.isnan(q), torch.zeros_like(q), q).to(torch.int64)
    return {"v_data": pack_bits(q, spec.value_bits), "v_scale": _to_fp16(scale), "v_zero": _to_fp16(lo)}


def _to_fp16(x: torch.Tensor) -> torch.Tensor:
    return torch.where(torch.isnan(x), x, x.clamp(-FP16_MAX, FP16_MAX)).to(torch.float16)


def decode_keys(spec: LayoutSpec, f: dict[str, torch.Tensor], *, rotated: bool = False) -> torch.Tensor:
    """Stored key fields → float32 [M, D] keys (original domain unless ``rotated``)."""
    if spec.key_codec.is_fp8:
        k = _fp8_decode(f["k_data"], spec.key_codec)
        return k if rotated or spec.rotation is Rotation.NONE else k @ rotation(spec, k.device)
    c, _ = _codebook(spec, f["k_data"].device)
    cv = c[unpack_bits(f["k_data"], spec.key_bits, spec.head_dim)]
    if spec.renorm_at_decode:
        cv = cv / torch.sqrt((cv * cv).sum(-1, keepdim=True) + CNORM_EPS)
    k_rot = f["k_norm"].float()[:, None] * cv
    return k_rot if rotated else k_rot @ rotation(spec, k_rot.device)


def decode_values(spec: LayoutSpec, f: dict[str, torch.Tensor]) -> torch.Tensor:
    q = unpack_bits(f["v_data"], spec.value_bits, spec.head_dim).float()
    return q * f["v_scale"].float()[:, None] + f["v_zero"].float()[:, None]


# ---------------------------------------------------------------- cache access
def _field_bytes_index(page: PageAddressing, fa: FieldAddress, blk: torch.Tensor, t: torch.Tensor,
                       h: torch.Tensor) -> torch.Tensor:
    base = blk.to(torch.int64) * page.block_bytes + fa.offset + t.to(torch.int64) * fa.token_stride \
        + h.to(torch.int64) * fa.head_stride
    return base[..., None] + torch.arange(fa.nbytes, device=base.device)


def _write_fields(bl: ByteLayout, cache: torch.Tensor, fields: dict[str, torch.Tensor], blk, t, h) -> None:
    page = bl.page(cache.shape[2])
    flat = cache.view(-1)
    for name, val in fields.items():
        data = val.view(torch.uint8).reshape(val.shape[0], 2) if val.dtype != torch.uint8 else val
        idx = _field_bytes_index(page, page[name], blk, t, h)
        flat[idx.reshape(-1)] = data.reshape(-1)


def _read_fields(bl: ByteLayout, cache: torch.Tensor, blk, t, h) -> dict[str, torch.Tensor]:
    page = bl.page(cache.shape[2])
    flat = cache.view(-1)
    out = {}
    for f in bl.fields:
        data = flat[_field_bytes_index(page, page[f.name], blk, t, h)]
        out[f.name] = data.contiguous().view(torch.float16).reshape(-1) if f.dtype == "fp16" else data
    return out


# ---------------------------------------------------------------- validation
def _fail(what: str, given, allowed: str, hint: str) -> ValueError:
    return ValueError(f"{what}: got {given}; expected {allowed}. {hint}")


def check_cache(spec: LayoutSpec, cache: torch.Tensor, num_kv_heads: int | None = None) -> None:
    bl = derive_layout(spec)
    if not isinstance(cache, torch.Tensor) or cache.dtype != torch.uint8 or cache.dim() != 4:
        raise _fail("cache", _describe(cache), f"uint8 [num_blocks, {spec.block_size}, num_kv_heads, {bl.slot_bytes}]",
                    "Allocate it with tqgen.reference.allocate(spec, num_blocks, num_kv_heads).")
    _, bs, h, slot = cache.shape
    if bs != spec.block_size or slot != bl.slot_bytes or (num_kv_heads is not None and h != num_kv_heads):
        raise _fail("cache shape", tuple(cache.shape),
                    f"[num_blocks, {spec.block_size}, {num_kv_heads or 'num_kv_heads'}, {bl.slot_bytes}] for {spec.token}",
                    "The cache must come from allocate() with the same spec.")
    if not cache.is_contiguous():
        raise _fail("cache", "a non-contiguous tensor", "a contiguous tensor", "Use cache.contiguous() or allocate().")


def _describe(x) -> str:
    if isinstance(x, torch.Tensor):
        return f"{x.dtype} {list(x.shape)} on {x.device}"
    return type(x).__name__


def _check_kv(spec: LayoutSpec, name: str, x: torch.Tensor, n: int | None, h: int) -> None:
    if not isinstance(x, torch.Tensor) or x.dtype not in KV_DTYPES or x.dim() != 3:
        raise _fail(name, _describe(x), f"float16 or bfloat16 [N, {h}, {spec.head_dim}]", f"Cast with {name}.to(torch.bfloat16).")
    if x.shape[1] != h or x.shape[2] != spec.head_dim or (n is not None and x.shape[0] != n):
        raise _fail(f"{name} shape", list(x.shape), f"[{n if n is not None else 'N'}, {h}, {spec.head_dim}]",
                    "num_kv_heads must match the cache and head_dim the spec.")


# ---------------------------------------------------------------- public API
def allocate(spec: LayoutSpec, num_blocks: int, num_kv_heads: int, device="cpu") -> torch.Tensor:
    """Zeroed uint8 cache [num_blocks, block_size, num_kv_heads, slot_bytes]."""
    if num_blocks < 1 or num_kv_heads < 1:
        raise _fail("allocate", f"num_blocks={num_blocks}, num_kv_heads={num_kv_heads}", "positive integers", "")
    return torch.zeros(num_blocks, spec.block_size, num_kv_heads, derive_layout(spec).slot_bytes,
                       dtype=torch.uint8, device=device)


def check_store_args(spec: LayoutSpec, key, value, cache, slot_mapping) -> None:
    flags = store_flags(spec, key, value, cache, slot_mapping)
    if flags is not None:
        raise_slot_errors(spec, cache, flags.tolist())  # one host read


def store_flags(spec: LayoutSpec, key, value, cache, slot_mapping) -> torch.Tensor | None:
    """check_store_args without its host read: the host checks, then [min, max] of slot_mapping (int64, on its
    device; None for no tokens) for ``raise_slot_errors``, so that a caller can read them with its own values."""
    check_cache(spec, cache)
    h = cache.shape[2]
    _check_kv(spec, "key", key, None, h)
    _check_kv(spec, "value", value, key.shape[0], h)
    if value.dtype != key.dtype:
        raise _fail("value dtype", value.dtype, f"the key dtype {key.dtype}", "Cast both to one dtype.")
    n = key.shape[0]
    if (not isinstance(slot_mapping, torch.Tensor) or slot_mapping.dtype not in (torch.int32, torch.int64)
            or slot_mapping.shape != (n,)):
        raise _fail("slot_mapping", _describe(slot_mapping), f"int32 [{n}]", "One slot per token; -1 skips a token.")
    for t in (key, value, slot_mapping):
        if t.device != cache.device:
            raise _fail("device", f"{t.device} vs cache on {cache.device}", "one device", "Move tensors with .to(cache.device).")
    return torch.stack([slot_mapping.min(), slot_mapping.max()]).to(torch.int64) if n else None


def raise_slot_errors(spec: LayoutSpec, cache, host: list[int]) -> None:
    """The slot range error of a slot_mapping's [min, max] read back."""
    lo, hi = host
    limit = cache.shape[0] * spec.block_size
    if lo < -1 or hi >= limit:
        raise _fail("slot_mapping", f"values in [{lo}, {hi}]", f"-1 (skip) or 0..{limit - 1} (num_blocks·block_size - 1)",
                    "Check the block allocation.")


def store(spec: LayoutSpec, key: torch.Tensor, value: torch.Tensor, cache: torch.Tensor,
          slot_mapping: torch.Tensor) -> None:
    """Quantise key/value [N, Hk, D] into their slots; slot -1 skips the token."""
    check_store_args(spec, key, value, cache, slot_mapping)
    bl = derive_layout(spec)
    n, h, d = key.shape
    keep = slot_mapping >= 0
    if not bool(keep.any()):
        return
    slots = slot_mapping[keep].to(torch.int64)
    k = key[keep].reshape(-1, d)
    v = value[keep].reshape(-1, d)
    fields = encode_keys(spec, k) | encode_values(spec, v)
    m = slots.shape[0]
    blk = (slots // spec.block_size)[:, None].expand(m, h).reshape(-1)
    t = (slots % spec.block_size)[:, None].expand(m, h).reshape(-1)
    hh = torch.arange(h, device=cache.device)[None, :].expand(m, h).reshape(-1)
    _write_fields(bl, cache, fields, blk, t, hh)


def check_tables(spec, cache, block_table, seq_lens) -> None:
    """block_table [B, max_blocks] and seq_lens [B]: types and shapes, then every value on the tables' device (one
    host read): lengths in 0..max_blocks·block_size, every block a sequence uses inside the cache."""
    flags = table_flags(spec, cache, block_table, seq_lens)
    if flags is not None:
        raise_table_errors(spec, cache, block_table, flags.cpu().tolist())


def table_flags(spec, cache, block_table, seq_lens) -> torch.Tensor | None:
    """check_tables without its host read: the type and shape checks, then the values to read back (int64 on the
    tables' device, seq_lens and a flag a sequence: one of its blocks lies outside the cache; None for no sequences)
    for ``raise_table_errors``, so that a caller can read them with its own values at once."""
    if not isinstance(block_table, torch.Tensor) or block_table.dim() != 2 or block_table.dtype not in (torch.int32, torch.int64):
        raise _fail("block_table", _describe(block_table), "int32 [B, max_blocks]", "")
    b = block_table.shape[0]
    if not isinstance(seq_lens, torch.Tensor) or seq_lens.shape != (b,) or seq_lens.dtype not in (torch.int32, torch.int64):
        raise _fail("seq_lens", _describe(seq_lens), f"int32 [{b}]", "One length per sequence.")
    if not b:
        return None
    # every value check on the tables' device, read back at once: one host sync a call (not two a sequence) and
    # few small kernels (each costs host time, and the GPU idles behind the sync while they run)
    dev = block_table.device
    lens = seq_lens if seq_lens.device == dev else seq_lens.to(dev)
    nblk = (lens + (spec.block_size - 1)) // spec.block_size
    used = _col_index(block_table.shape[1], dev) < nblk[:, None]
    bad_row = ((block_table.clamp(0, cache.shape[0] - 1) != block_table) & used).any(dim=1)
    return torch.cat([lens.to(torch.int64), bad_row.to(torch.int64)])


def raise_table_errors(spec, cache, block_table, host: list[int]) -> None:
    """The value errors of ``table_flags``' vector read back (``host``: its 2·B values)."""
    b = block_table.shape[0]
    lens, bad = host[:b], host[b:2 * b]
    mn, mx = min(lens), max(lens)
    if mn < 0:
        raise _fail("seq_lens", f"min {mn}", "values ≥ 0", "")
    cap = block_table.shape[1] * spec.block_size
    if mx > cap:
        raise _fail("seq_lens", f"max {mx}", f"≤ max_blocks·block_size = {cap}", "Widen the block table.")
    if any(bad):
        i = bad.index(1)
        nb = -(-lens[i] // spec.block_size)
        raise _fail(f"block_table[{i}]", f"entries {block_table[i, :nb].tolist()}", f"0..{cache.shape[0] - 1}",
                    "Every block a sequence uses must exist in the cache.")


@functools.lru_cache(maxsize=32)
def _col_index(n: int, device: torch.device) -> torch.Tensor:
    """0 .. n-1 on ``device`` (the block-table check's column index, made once per width)."""
    return torch.arange(n, device=device)


def _gather_seq(spec, bl, cache, block_table, seq_lens, i, *, rotated=False):
    n = int(seq_lens[i])
    h = cache.shape[2]
    pos = torch.arange(n, device=cache.device)
    blk = block_table[i].to(cache.device)[pos // spec.block_size]
    t = pos % spec.block_size
    blk = blk[:, None].expand(n, h).reshape(-1)
    tt = t[:, None].expand(n, h).reshape(-1)
    hh = torch.arange(h, device=cache.device)[None, :].expand(n, h).reshape(-1)
    f = _read_fields(bl, cache, blk, tt, hh)
    k = decode_keys(spec, f, rotated=rotated).reshape(n, h, spec.head_dim)
    v = decode_values(spec, f).reshape(n, h, spec.head_dim)
    return k, v


def dequant(spec: LayoutSpec, cache: torch.Tensor, block_table: torch.Tensor, seq_lens: torch.Tensor,
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Cache → float32 K (original, un-rotated domain) and V, [B, Hk, max_len, D]; zeros past seq_len."""
    check_cache(spec, cache)
    check_tables(spec, cache, block_table, seq_lens)
    bl = derive_layout(spec)
    b, h, d = block_table.shape[0], cache.shape[2], spec.head_dim
    max_len = int(seq_lens.max()) if b else 0
    K = torch.zeros(b, h, max_len, d, dtype=torch.float32, device=cache.device)
    V = torch.zeros_like(K)
    for i in range(b):
        k, v = _gather_seq(spec, bl, cache, block_table, seq_lens, i)
        K[i, :, : k.shape[0]] = k.transpose(0, 1)
        V[i, :, : v.shape[0]] = v.transpose(0, 1)
    return K, V


def dequant_outputs(spec: LayoutSpec, cache, block_table, seq_lens, max_len: int | None, check: bool,
                    dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The dequant's checks and outputs, shared by the kernel launchers: (K, V, max_len), K and V empty
    ``dtype`` [B, Hk, max_len, D] on the cache's device; max_len is the longest sequence when not given (a host
    sync: pass max_len to avoid it)."""
    if check:
        check_cache(spec, cache)
        check_tables(spec, cache, block_table, seq_lens)
    if max_len is None:
        max_len = int(seq_lens.max()) if seq_lens.numel() else 0
    k = torch.empty(block_table.shape[0], cache.shape[2], max_len, spec.head_dim, dtype=dtype, device=cache.device)
    return k, torch.empty_like(k), max_len


def check_decode_args(spec: LayoutSpec, query, cache, block_table, seq_lens, sinks=None, sliding_window=None,
                      query_dtypes=(torch.float16, torch.bfloat16, torch.float32)) -> None:
    """Every decode input check, shared by the oracle and the kernel launchers."""
    check_cache(spec, cache)
    check_tables(spec, cache, block_table, seq_lens)
    check_query(spec, query, block_table.shape[0], cache.shape[2], sinks, sliding_window, query_dtypes)


def check_query(spec: LayoutSpec, query, rows: int, hk: int, sinks=None, sliding_window=None,
                query_dtypes=(torch.float16, torch.bfloat16, torch.float32)) -> None:
    """The host-side decode checks of the query [rows, Hq, D], sinks and window (no device reads)."""
    if not isinstance(query, torch.Tensor) or query.dim() != 3 or query.shape[2] != spec.head_dim \
            or query.shape[0] != rows or query.dtype not in query_dtypes:
        names = "/".join({torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[d] for d in query_dtypes)
        raise _fail("query", _describe(query), f"{names} [{rows}, Hq, {spec.head_dim}]", "")
    hq = query.shape[1]
    if hq % hk:
        raise _fail("num_q_heads", hq, f"a multiple of num_kv_heads={hk}", "GQA groups must be whole.")
    if sinks is not None and (not isinstance(sinks, torch.Tensor) or sinks.shape != (hq,)):
        raise _fail("sinks", _describe(sinks), f"float32 [{hq}] (one logit per query head)", "")
    if sliding_window is not None and (not isinstance(sliding_window, int) or sliding_window < 1):
        raise _fail("sliding_window", sliding_window, "None or a positive int", "")


def decode(spec: LayoutSpec, query: torch.Tensor, cache: torch.Tensor, block_table: torch.Tensor,
           seq_lens: torch.Tensor, *, scale: float | None = None, sinks: torch.Tensor | None = None,
           sliding_window: int | None = None) -> torch.Tensor:
    """One query token per sequence → float32 [B, Hq, D]; softmax in float64 over the dequantised cache."""
    check_decode_args(spec, query, cache, block_table, seq_lens, sinks, sliding_window)
    hk, hq = cache.shape[2], query.shape[1]
    g = hq // hk
    scale = 1.0 / math.sqrt(spec.head_dim) if scale is None else float(scale)
    bl = derive_layout(spec)
    out = torch.zeros(query.shape[0], hq, spec.head_dim, dtype=torch.float32, device=cache.device)
    for i in range(query.shape[0]):
        n = int(seq_lens[i])
        if n == 0:
            continue
        k, v = _gather_seq(spec, bl, cache, block_table, seq_lens, i)
        k = k.double().repeat_interleave(g, dim=1)  # [n, Hq, D]
        v = v.double().repeat_interleave(g, dim=1)
        logits = torch.einsum("hd,nhd->hn", query[i].double(), k) * scale  # [Hq, n]
        if sliding_window is not None:
            logits[:, : max(0, n - sliding_window)] = -math.inf
        m = logits.max(-1, keepdim=True).values
        if sinks is not None:
            m = torch.maximum(m, sinks.double().to(m.device)[:, None])
        p = torch.exp(logits - m)
        den = p.sum(-1, keepdim=True)
        if sinks is not None:
            den = den + torch.exp(sinks.double().to(m.device)[:, None] - m)
        out[i] = (torch.einsum("hn,nhd->hd", p, v) / den).float()
    return out
