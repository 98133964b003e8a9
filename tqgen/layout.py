"""Physical byte layout of a TurboQuant paged cache — the only place byte arithmetic happens.

Cache tensor: ``uint8 [num_blocks, block_size, num_kv_heads, slot_bytes]``; one slot is one
(token, kv-head). Field sizes for one slot::

    K data   ceil(D·kb/8) bytes (D for fp8 keys), LSB-first bit stream of codebook indices
    K norm   2 bytes, fp16 (Lloyd-Max keys only; ‖k‖ or ‖k‖/‖c[idx]‖ when folded)
    V data   ceil(D·vb/8) bytes, LSB-first bit stream of uniform codes
    V scale  2 bytes, fp16
    V zero   2 bytes, fp16 (the vector minimum)
    slot_bytes = sum, rounded up to even (u16 alignment of the fp16 fields)

AoS — fields in this order inside each slot; the block is ``[block_size][H][slot]``::

    | K data | K norm | V data | V scale | V zero | (pad) |

SoA — the same bytes per block, re-interpreted::

    offset 0:     data region  [block_size][H][KD + VD]        (K data then V data per token-head)
    offset META:  fp16 region  [H][F][block_size]              F = (k_norm, v_scale, v_zero) or
                                                               (v_scale, v_zero) for fp8 keys
    META = block_size · H · (KD + VD); the block's last bytes are padding when slot_bytes is
    rounded up.

Every field of either layout is addressed the same way, so kernels never branch on layout::

    byte(block, t, h) = block·block_bytes + field.offset + t·field.token_stride + h·field.head_stride
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from .ir import KeyCodec, Layout, LayoutSpec, Rotation

FP16_BYTES = 2


@dataclass(frozen=True, slots=True)
class PackScheme:
    """LSB-first bit stream: element i occupies bits [i·bits, (i+1)·bits)."""

    bits: int
    elements: int  # per vector (head_dim)

    @property
    def nbytes(self) -> int:
        return math.ceil(self.elements * self.bits / 8)

    @property
    def group_elements(self) -> int:
        """Smallest run of elements that fills whole bytes (4-bit: 2, 3-bit: 8, 2-bit: 4)."""
        return math.lcm(8, self.bits) // self.bits

    @property
    def group_bytes(self) -> int:
        return math.lcm(8, self.bits) // 8

    @property
    def groups(self) -> int:
        """Byte groups per vector."""
        return self.elements // self.group_elements

    @property
    def levels(self) -> int:
        """Largest code, 2**bits - 1."""
        return (1 << self.bits) - 1

    @property
    def name(self) -> str:
        return f"lsb{self.bits}x{self.group_elements}in{self.group_bytes}"


@dataclass(frozen=True, slots=True)
class SlotField:
    name: str  # k_data, k_norm, v_data, v_scale, v_zero
    nbytes: int
    dtype: str  # "packed" (see pack), "fp8_*", "fp16"
    pack: PackScheme | None
    aos_offset: int  # byte offset inside an AoS slot
    what: str


@dataclass(frozen=True, slots=True)
class FieldAddress:
    """Where one field of (token t, head h) lives inside a block, for a given number of heads."""

    name: str
    offset: int
    token_stride: int
    head_stride: int
    nbytes: int

    def byte(self, t: int, h: int) -> int:
        return self.offset + t * self.token_stride + h * self.head_stride


@dataclass(frozen=True, slots=True)
class PageAddressing:
    """Addresses of every field inside one block for ``num_kv_heads`` heads."""

    layout: Layout
    num_kv_heads: int
    block_size: int
    block_bytes: int
    fields: tuple[FieldAddress, ...]
    meta_offset: int  # SoA: start of the fp16 region; AoS: 0 (metadata lives in the slots)

    def __getitem__(self, name: str) -> FieldAddress:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"no field {name!r}; fields: {[f.name for f in self.fields]}")

    def as_dict(self) -> dict:
        return {f.name: {"offset": f.offset, "token_stride": f.token_stride, "head_stride": f.head_stride,
                         "bytes": f.nbytes} for f in self.fields} | {"block_bytes": self.block_bytes}


@dataclass(frozen=True, slots=True)
class ByteLayout:
    spec: LayoutSpec
    fields: tuple[SlotField, ...]
    slot_bytes: int  # aligned (even)
    slot_bytes_unaligned: int

    def __getitem__(self, name: str) -> SlotField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"no field {name!r}; fields: {[f.name for f in self.fields]}")

    def has(self, name: str) -> bool:
        return any(f.name == name for f in self.fields)

    @property
    def kd(self) -> int:
        return self["k_data"].nbytes

    @property
    def vd(self) -> int:
        return self["v_data"].nbytes

    @property
    def meta_fields(self) -> tuple[str, ...]:
        """fp16 scalar fields in SoA order."""
        return tuple(f.name for f in self.fields if f.dtype == "fp16")

    def page(self, num_kv_heads: int) -> PageAddressing:
        return _page(self, num_kv_heads)

    def page_bytes(self, num_kv_heads: int) -> int:
        return self.spec.block_size * num_kv_heads * self.slot_bytes

    def to_dict(self, num_kv_heads: int | None = None) -> dict:
        out = {
            "spec": self.spec.to_dict(),
            "slot_bytes": self.slot_bytes,
            "fields": [
                {"name": f.name, "bytes": f.nbytes, "dtype": f.dtype, "aos_offset": f.aos_offset,
                 "pack": f.pack.name if f.pack else None}
                for f in self.fields
            ],
        }
        if num_kv_heads is not None:
            out["page"] = self.page(num_kv_heads).as_dict()
        return out


@lru_cache(maxsize=None)
def derive_layout(spec: LayoutSpec) -> ByteLayout:
    """Slot fields, sizes and AoS offsets (vLLM's formulas) for one spec."""
    d = spec.head_dim
    items: list[tuple[str, int, str, PackScheme | None, str]] = []
    if spec.key_codec is KeyCodec.LLOYD_MAX:
        kp = PackScheme(spec.key_bits, d)
        items.append(("k_data", kp.nbytes, "packed", kp, f"{spec.key_bits}-bit Lloyd-Max indices"))
        items.append(("k_norm", FP16_BYTES, "fp16",
                      None, "‖k‖/‖c[idx]‖ (folded)" if spec.fold_norm else "‖k‖"))
    else:
        items.append(("k_data", d, str(spec.key_codec), None,
                      "fp8 key elements" if spec.rotation is Rotation.NONE else "fp8 of k·Πᵀ (rotated)"))
    vp = PackScheme(spec.value_bits, d)
    items.append(("v_data", vp.nbytes, "packed", vp, f"{spec.value_bits}-bit uniform codes"))
    items.append(("v_scale", FP16_BYTES, "fp16", None, "(max-min)/(2^b-1)"))
    items.append(("v_zero", FP16_BYTES, "fp16", None, "min"))
    fields, off = [], 0
    for name, nbytes, dtype, pack, what in items:
        fields.append(SlotField(name, nbytes, dtype, pack, off, what))
        off += nbytes
    return ByteLayout(spec=spec, fields=tuple(fields), slot_bytes=off + (off % 2), slot_bytes_unaligned=off)


@lru_cache(maxsize=None)
def _page(bl: ByteLayout, h: int) -> PageAddressing:
    if not isinstance(h, int) or h < 1:
        raise ValueError(f"num_kv_heads must be a positive int, got {h!r}")
    spec, bs, slot = bl.spec, bl.spec.block_size, bl.slot_bytes
    block_bytes = bs * h * slot
    if spec.layout is Layout.AOS:
        addrs = tuple(FieldAddress(f.name, f.aos_offset, h * slot, slot, f.nbytes) for f in bl.fields)
        return PageAddressing(spec.layout, h, bs, block_bytes, addrs, 0)
    data = bl.kd + bl.vd
    meta = bs * h * data
    metas = bl.meta_fields
    addrs = []
    for f in bl.fields:
        if f.dtype == "fp16":
            fi = metas.index(f.name)
            addrs.append(FieldAddress(f.name, meta + fi * bs * FP16_BYTES, FP16_BYTES,
                                      len(metas) * bs * FP16_BYTES, FP16_BYTES))
        else:
            start = 0 if f.name == "k_data" else bl.kd
            addrs.append(FieldAddress(f.name, start, h * data, data, f.nbytes))
    assert meta + h * len(metas) * bs * FP16_BYTES <= block_bytes
    return PageAddressing(spec.layout, h, bs, block_bytes, tuple(addrs), meta)


def pow2_divisor(n: int, cap: int = 16) -> int:
    """The largest power of two (at most ``cap``) dividing ``n``."""
    a = 1
    while a < cap and n % (2 * a) == 0:
        a *= 2
    return a


def field_alignment(spec: LayoutSpec, field: str) -> int:
    """Largest power of two (≤ 16) dividing every byte address of ``field`` for any number of heads (1-16): its
    offset, strides and the page size (the kernels' widest safe load of the field)."""
    bl = derive_layout(spec)
    g = 0
    for h in range(1, 17):
        page = bl.page(h)
        fa = page[field]
        for x in (fa.offset, fa.token_stride, fa.head_stride, page.block_bytes):
            g = math.gcd(g, x)
    return pow2_divisor(g)
