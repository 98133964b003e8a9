"""tqgen.testing.compare_store's rule for rotated fp8 keys (every backend's store tests rest on it): it explains what
a different summation order explains and nothing else. Caches from the reference store, then bytes changed by hand."""
import torch

from tqgen import LayoutSpec
from tqgen import reference as ref
from tqgen.layout import derive_layout
from tqgen.testing import compare_store, special_store_rows

SPEC = LayoutSpec.from_preset("k8v4", layout="soa", rotation="rht", rotation_seed=3)
HK = 2


def _key_byte(cache, slot: int, head: int, i: int, spec=SPEC) -> int:
    """The flat byte index of element i of a slot's fp8 key."""
    bl = derive_layout(spec)
    page = bl.page(cache.shape[2])
    idx = ref._field_bytes_index(page, page["k_data"], torch.tensor(slot // spec.block_size),
                                 torch.tensor(slot % spec.block_size), torch.tensor(head))
    return int(idx[i])


def _case():
    k, v = special_store_rows(SPEC.head_dim, torch.bfloat16)
    key, value = k.reshape(-1, HK, SPEC.head_dim), v.reshape(-1, HK, SPEC.head_dim)
    slots = torch.arange(key.shape[0], dtype=torch.int32)
    want = ref.allocate(SPEC, 2, HK)
    ref.store(SPEC, key, value, want, slots)
    return key, slots, want


def test_unexplained_fp8_byte_is_a_problem():
    """An ordinary row (row 12: slot 6, head 0) with one key byte moved two fp8 steps: not a rounding tie."""
    key, slots, want = _case()
    got = want.clone()
    b = _key_byte(got, 6, 0, 10)
    flat = got.view(-1)
    flat[b] = (int(flat[b]) & 0x80) | min((int(flat[b]) & 0x7F) + 2, 0x7E)
    diff = compare_store(SPEC, got, want, key, slots)
    assert not diff.ok and "away from a rounding tie" in diff.problems[0], diff.summary()
    assert compare_store(SPEC, want.clone(), want, key, slots).ok


def test_huge_keys_cancelling_are_explained():
    """Row 5 holds ±1e30 keys (slot 2, head 1): y = k·Πᵀ is an exact 0 in one summation order and a saturated rounding
    residue (±448) in another; a 0 byte where the reference stored 448 lies inside the summation-error band (which
    is wider than the gap there), an ordinary row's byte changed the same way does not."""
    key, slots, want = _case()
    y = key[2, 1].double() @ ref.rotation(SPEC, "cpu").double().T
    i = int((y.abs() < 1e20).nonzero()[0])  # an element the ±1e30 entries cancel in (exactly 0 in float64)
    got = want.clone()
    flat = got.view(-1)
    b = _key_byte(got, 2, 1, i)
    flat[b] = 0x7E if int(flat[b]) in (0x00, 0x80) else 0x00
    assert compare_store(SPEC, got, want, key, slots).ok
    b = _key_byte(got, 6, 0, 0)
    flat[b] = 0x7E if int(flat[b]) in (0x00, 0x80) else 0x00
    assert not compare_store(SPEC, got, want, key, slots).ok


def test_fnuz_neighbours_across_zero_are_explained():
    """fp8 e4m3fnuz has no -0 (0x80 is its NaN), so the negative neighbour of 0 (0x00) is -2^-10 (0x81): bytes that
    differ by 129 yet are adjacent values. A one-hot key of -2^-8 at head_dim 64 rotates to y = ±2^-11 exactly (the
    Hadamard's 1/8), the tie between 0 and ±2^-10, which the reference rounds to even (0x00); 0x81 where y = -2^-11 is
    the other side of that tie (explained; the simulated gfx942 store differs so, tests/test_cpu_sim.py), 0x82 is
    not."""
    spec = LayoutSpec.from_preset("k8v4", layout="soa", head_dim=64, rotation="hadamard", key_codec="fp8_e4m3fnuz")
    key = torch.zeros(2, 1, 64, dtype=torch.bfloat16)
    key[0, 0, 5] = -2.0 ** -8
    key[1, 0] = torch.linspace(-1, 1, 64)
    value = torch.ones(2, 1, 64, dtype=torch.bfloat16)
    slots = torch.arange(2, dtype=torch.int32)
    want = ref.allocate(spec, 1, 1)
    ref.store(spec, key, value, want, slots)
    y = key[0, 0].double() @ ref.rotation(spec, "cpu").double().T
    i = int((y == -2.0 ** -11).nonzero()[0])
    b = _key_byte(want, 0, 0, i, spec)
    assert int(want.view(-1)[b]) == 0x00
    for byte, ok in ((0x81, True), (0x82, False)):
        got = want.clone()
        got.view(-1)[b] = byte
        assert compare_store(spec, got, want, key, slots).ok is ok, hex(byte)
