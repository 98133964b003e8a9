"""Byte layouts (tqgen/layout.py) and bit packing (tqgen.reference.pack_bits), DESIGN §1.5 and §2.

Golden numbers are computed here by hand from vLLM's formulas, independently of tqgen:
K data = ceil(D·kb/8) (D for fp8), + 2 (fp16 norm) for Lloyd-Max keys, V data = ceil(D·vb/8),
+ 2 (fp16 scale) + 2 (fp16 zero), the slot rounded up to even — and checked against the literal
DESIGN §2 table at D=128. Everything here is integer arithmetic: every comparison is exact.
"""

import math
import random

import numpy as np
import pytest
import torch

from tqgen import LayoutSpec, derive_layout
from tqgen import reference as ref

PRESET_NAMES = ["k8v4", "4bit_nc", "k3v4_nc", "3bit_nc"]
HEAD_DIMS = [64, 96, 128, 256]
KV_HEADS = [1, 2, 8]
# preset -> (fp8 keys?, key bits, value bits), DESIGN §2 preset table
QUANT = {"k8v4": (True, 8, 4), "4bit_nc": (False, 4, 4), "k3v4_nc": (False, 3, 4), "3bit_nc": (False, 3, 3)}


def make_spec(preset, d, layout, block_size=16, **kw):
    fp8 = QUANT[preset][0]
    rot = {"rotation": "orthogonal"} if d == 96 and not fp8 else {}  # Hadamard needs a power of two
    return LayoutSpec.from_preset(preset, layout=layout, head_dim=d, block_size=block_size, **rot, **kw)


def golden(preset, d):
    """vLLM's formulas, by hand: (KD, K norm bytes, VD, unaligned sum, slot)."""
    fp8, kb, vb = QUANT[preset]
    kd = d if fp8 else -(-d * kb // 8)
    knorm = 0 if fp8 else 2
    vd = -(-d * vb // 8)
    raw = kd + knorm + vd + 2 + 2
    slot = raw + (raw & 1)
    return kd, knorm, vd, raw, slot


# --------------------------------------------------------------------- golden sizes, AoS offsets
@pytest.mark.parametrize("layout", ["aos", "soa"])
@pytest.mark.parametrize("d", HEAD_DIMS, ids=lambda d: f"d{d}")
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_golden_slot_sizes_and_aos_offsets(preset, d, layout):
    kd, knorm, vd, raw, slot = golden(preset, d)
    bl = derive_layout(make_spec(preset, d, layout))
    assert (bl.kd, bl.vd, bl.slot_bytes_unaligned, bl.slot_bytes) == (kd, vd, raw, slot)
    sizes = {f.name: f.nbytes for f in bl.fields}
    offs = {f.name: f.aos_offset for f in bl.fields}
    want_names = ["k_data"] + (["k_norm"] if knorm else []) + ["v_data", "v_scale", "v_zero"]
    assert [f.name for f in bl.fields] == want_names  # AoS order: K data | K norm | V data | V scale | V zero
    assert sizes == {"k_data": kd, **({"k_norm": 2} if knorm else {}), "v_data": vd, "v_scale": 2, "v_zero": 2}
    assert offs["k_data"] == 0
    if knorm:
        assert offs["k_norm"] == kd
    assert offs["v_data"] == kd + knorm
    assert offs["v_scale"] == kd + knorm + vd
    assert offs["v_zero"] == kd + knorm + vd + 2
    assert slot % 2 == 0 and slot - raw in (0, 1)


# DESIGN §2 table at D=128, literally: field -> (first byte, last byte); slot bytes
DESIGN_D128 = {
    "k8v4": ({"k_data": (0, 127), "v_data": (128, 191), "v_scale": (192, 193), "v_zero": (194, 195)}, 196),
    "4bit_nc": ({"k_data": (0, 63), "k_norm": (64, 65), "v_data": (66, 129), "v_scale": (130, 131),
                 "v_zero": (132, 133)}, 134),
    "k3v4_nc": ({"k_data": (0, 47), "k_norm": (48, 49), "v_data": (50, 113), "v_scale": (114, 115),
                 "v_zero": (116, 117)}, 118),
    "3bit_nc": ({"k_data": (0, 47), "k_norm": (48, 49), "v_data": (50, 97), "v_scale": (98, 99),
                 "v_zero": (100, 101)}, 102),
}


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_design_table_at_d128(preset):
    want, slot = DESIGN_D128[preset]
    for layout in ("aos", "soa"):
        bl = derive_layout(LayoutSpec.from_preset(preset, layout=layout))
        got = {f.name: (f.aos_offset, f.aos_offset + f.nbytes - 1) for f in bl.fields}
        assert got == want and bl.slot_bytes == slot
        page = bl.page(4)
        if layout == "aos":  # the page addresses are the slot offsets
            assert {fa.name: fa.offset for fa in page.fields} == {k: v[0] for k, v in want.items()}


# --------------------------------------------------------------------------------- addressing
@pytest.mark.parametrize("h", KV_HEADS, ids=lambda h: f"h{h}")
@pytest.mark.parametrize("d", HEAD_DIMS, ids=lambda d: f"d{d}")
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_aos_addresses_index_the_cache_tensor(preset, d, h):
    """AoS: byte(t, h) of a field = ((t·H + h)·slot + offset), i.e. cache[blk, t, h, offset]."""
    bl = derive_layout(make_spec(preset, d, "aos"))
    page = bl.page(h)
    slot = bl.slot_bytes
    assert page.meta_offset == 0
    for f in bl.fields:
        fa = page[f.name]
        assert (fa.offset, fa.token_stride, fa.head_stride, fa.nbytes) == (f.aos_offset, h * slot, slot, f.nbytes)


@pytest.mark.parametrize("block_size", [16, 64], ids=lambda b: f"b{b}")
@pytest.mark.parametrize("h", KV_HEADS, ids=lambda h: f"h{h}")
@pytest.mark.parametrize("d", HEAD_DIMS, ids=lambda d: f"d{d}")
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_soa_regions_follow_the_formula(preset, d, h, block_size):
    """SoA: data [block_size][H][KD+VD] at 0; fp16 [H][F][block_size] at META = block_size·H·(KD+VD)."""
    kd, knorm, vd, raw, slot = golden(preset, d)
    spec = make_spec(preset, d, "soa", block_size=block_size)
    page = derive_layout(spec).page(h)
    bs = block_size
    meta = bs * h * (kd + vd)
    metas = (["k_norm"] if knorm else []) + ["v_scale", "v_zero"]  # F = 3, or 2 for fp8 keys
    f_count = len(metas)
    assert page.meta_offset == meta
    assert page.block_bytes == bs * h * slot
    assert meta + h * f_count * bs * 2 == bs * h * raw <= page.block_bytes  # the tail is only the even padding
    for t in range(bs):
        for hh in range(h):
            data = (t * h + hh) * (kd + vd)
            assert page["k_data"].byte(t, hh) == data
            assert page["v_data"].byte(t, hh) == data + kd
            for fi, name in enumerate(metas):
                assert page[name].byte(t, hh) == meta + ((hh * f_count + fi) * bs + t) * 2
    for name in metas:  # one head's scalars of one field are contiguous (one vector load)
        assert page[name].token_stride == 2 and page[name].nbytes == 2


@pytest.mark.parametrize("h", KV_HEADS, ids=lambda h: f"h{h}")
@pytest.mark.parametrize("d", HEAD_DIMS, ids=lambda d: f"d{d}")
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_aos_and_soa_pages_have_the_same_size(preset, d, h):
    aos = derive_layout(make_spec(preset, d, "aos"))
    soa = derive_layout(make_spec(preset, d, "soa"))
    assert aos.page(h).block_bytes == soa.page(h).block_bytes == aos.page_bytes(h) == soa.page_bytes(h)
    assert aos.slot_bytes == soa.slot_bytes


def _owners(page, block_size):
    """How many (field, token, head) address each byte of one block — every byte enumerated."""
    count = np.zeros(page.block_bytes, dtype=np.int64)
    t = np.arange(block_size)[:, None]
    h = np.arange(page.num_kv_heads)[None, :]
    for fa in page.fields:
        starts = (fa.offset + t * fa.token_stride + h * fa.head_stride).reshape(-1)
        idx = (starts[:, None] + np.arange(fa.nbytes)[None, :]).reshape(-1)
        assert idx.min() >= 0 and idx.max() < page.block_bytes, fa.name  # inside the block
        count += np.bincount(idx, minlength=page.block_bytes)
    return count


@pytest.mark.parametrize("layout", ["aos", "soa"])
@pytest.mark.parametrize("d", HEAD_DIMS, ids=lambda d: f"d{d}")
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_every_block_byte_has_at_most_one_owner(preset, d, layout):
    for h in KV_HEADS:
        for bs in (16, 32):
            spec = make_spec(preset, d, layout, block_size=bs)
            bl = derive_layout(spec)
            count = _owners(bl.page(h), bs)
            assert count.max() == 1, f"overlap in {spec.token} H={h}"
            # the unowned bytes are exactly the even-padding of every slot
            assert int((count == 0).sum()) == bs * h * (bl.slot_bytes - bl.slot_bytes_unaligned)


def test_padding_exists_where_the_sum_is_odd():
    # D=8 with 3-bit keys and 4-bit values: 3 + 2 + 4 + 4 = 13 bytes -> 14; the test above must see a hole
    spec = LayoutSpec(head_dim=8, key_bits=3, value_bits=4)
    bl = derive_layout(spec)
    assert (bl.slot_bytes_unaligned, bl.slot_bytes) == (13, 14)
    for layout in ("aos", "soa"):
        s = spec.replace(layout=layout)
        count = _owners(derive_layout(s).page(2), 16)
        assert count.max() == 1 and int((count == 0).sum()) == 16 * 2


# ------------------------------------------------------------------------------------ packing
def bit_by_bit_pack(codes: list[int], bits: int) -> list[int]:
    """DESIGN §1.5, one bit at a time: element i occupies stream bits [i·b, (i+1)·b); stream bit j is
    bit (j mod 8) of byte floor(j/8)."""
    out = [0] * math.ceil(len(codes) * bits / 8)
    for i, c in enumerate(codes):
        for k in range(bits):
            j = i * bits + k
            if (c >> k) & 1:
                out[j // 8] |= 1 << (j % 8)
    return out


@pytest.mark.parametrize("d", [8, 64, 96, 128, 256], ids=lambda d: f"d{d}")
@pytest.mark.parametrize("bits", [2, 3, 4, 8])
def test_pack_bits_matches_a_bit_by_bit_packer(bits, d):
    rng = random.Random(1000 * bits + d)
    rows = [[rng.randrange(2**bits) for _ in range(d)] for _ in range(6)]
    rows[0] = [2**bits - 1] * d  # all ones
    rows[1] = [0] * d
    codes = torch.tensor(rows, dtype=torch.int64)
    packed = ref.pack_bits(codes, bits)
    want = torch.tensor([bit_by_bit_pack(r, bits) for r in rows], dtype=torch.uint8)
    assert packed.dtype == torch.uint8 and packed.shape == (6, d * bits // 8)
    assert torch.equal(packed, want)
    assert torch.equal(ref.unpack_bits(packed, bits, d), codes)
    # the packed width is the layout's field size
    for layout in ("aos", "soa"):
        if bits in (2, 3, 4) and d % 8 == 0:
            spec = LayoutSpec(layout=layout, head_dim=d, key_bits=bits, value_bits=bits,
                              rotation="orthogonal" if d == 96 else "hadamard")
            assert derive_layout(spec).kd == packed.shape[1] == derive_layout(spec).vd


def test_pack_bits_handles_leading_dims():
    codes = torch.randint(0, 8, (2, 3, 5, 16), generator=torch.Generator().manual_seed(0))
    packed = ref.pack_bits(codes, 3)
    assert packed.shape == (2, 3, 5, 6)
    assert packed.reshape(-1, 6).tolist() == [bit_by_bit_pack(r, 3) for r in codes.reshape(-1, 16).tolist()]


def test_4bit_element_2j_is_the_low_nibble_of_byte_j():
    codes = torch.tensor([[0x3, 0xA, 0xF, 0x1, 0x0, 0x7]])
    packed = ref.pack_bits(codes, 4)
    assert packed.tolist() == [[0xA3, 0x1F, 0x70]]
    for j in range(3):
        assert packed[0, j] & 0xF == codes[0, 2 * j] and packed[0, j] >> 4 == codes[0, 2 * j + 1]


def test_3bit_packs_8_elements_into_3_bytes():
    codes = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 0]])
    # stream (LSB first): 1=100 2=010 3=110 4=001 5=101 6=011 7=111 0=000
    # byte0 bits0-7 = 1,0,0,0,1,0,1,1 -> 0b11010001 = 0xD1; byte1 = 0,0,0,1,1,0,1,0 -> 0x58;
    # byte2 = 1,1,1,1,1,0,0,0 -> 0x1F
    assert ref.pack_bits(codes, 3).tolist() == [[0xD1, 0x58, 0x1F]]
    scheme = derive_layout(LayoutSpec(key_bits=3)).fields[0].pack
    assert (scheme.group_elements, scheme.group_bytes, scheme.nbytes) == (8, 3, 48)
