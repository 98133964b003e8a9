"""The Triton decode's inline PTX (NVIDIA renderings only) run on the CPU by a small emulator of the PTX it uses.

Every ``asm`` block of the rendered sm90 kernels is parsed and executed on numpy words by ``tqgen.ptx_emu`` (and.b32,
or.b32, shr.b32, shl.b32, prmt.b32 in its default mode, mov.b32 into 16-bit halves, cvt.rn.f16x2.e4m3x2) and its
outputs compared exactly with what the portable code computes for the same inputs: fp16 centroids (and squared centroids) of the spec's
Lloyd-Max codebook, the bf16 / fp16 ``BIAS + code`` patterns of value codes, exact fp16 values of e4m3fn bytes.
Exact: every output is a table lookup or a bit pattern, so any difference is a bug. The same kernels run against
the reference on the H200 (tests/test_triton_gpu.py).
"""

import re

import numpy as np
import pytest

from tqgen.build import preset_spec_for_target
from tqgen.codebook import lloyd_max
from tqgen.ir import LayoutSpec, Target
from tqgen.lower_triton import make_variant, render_triton
from tqgen.ptx_emu import e4m3_to_f16_bits, run_asm

def _asm_blocks(src: str) -> dict[str, list[tuple[str, int]]]:
    """{helper name: [(asm body, number of outputs), ...]} of every ``_ptx_*`` helper in a rendered kernel."""
    out: dict[str, list[tuple[str, int]]] = {}
    for m in re.finditer(r"^def (_ptx_\w+)\(.*?(?=^@triton\.jit|^# ----|\Z)", src, re.S | re.M):
        blocks = re.findall(r'asm="""\{(.*?)\}""".*?constraints="([^"]+)"', m.group(0), re.S)
        out[m.group(1)] = [(body, c.count("=")) for body, c in blocks]
    return out


def _f16(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).astype(np.float16).view(np.uint16).astype(np.uint64)


def _pair(lo, hi):
    return lo | (hi << np.uint64(16))


def _kernel(preset: str, layout: str, head_dim: int = 128) -> tuple[LayoutSpec, dict]:
    spec = preset_spec_for_target(preset, Target.SM90, layout=layout, head_dim=head_dim)
    return spec, _asm_blocks(render_triton(make_variant(spec, "sm90")))


RNG = np.random.default_rng(14)
# every byte value in every position of a word (the other bytes random), plus random words
WORDS = np.concatenate([(RNG.integers(0, 2 ** 32, 256, dtype=np.uint64) & ~np.uint64(0xFF << (8 * k)))
                        | (np.arange(256, dtype=np.uint64) << np.uint64(8 * k)) for k in range(4)]
                       + [RNG.integers(0, 2 ** 32, 4096, dtype=np.uint64)])


def _bytes(w, k):
    return (w >> np.uint64(8 * k)) & np.uint64(0xFF)


@pytest.mark.parametrize("layout", ["soa", "aos"])
def test_k4_lookups_are_the_codebook(layout):
    """_ptx_k4 (and AoS's _ptx_k4sq): four bytes of two 4-bit codes -> fp16 centroids (squares) of the low and the
    high nibbles, two per output register in element order (SoA at head_dim 64: its words would meet the query in
    dots of 64 / 8 < 16)."""
    spec, blocks = _kernel("4bit_nc", layout, 64 if layout == "soa" else 128)
    c = lloyd_max(spec.head_dim, spec.key_bits).centroids
    tables = {"_ptx_k4": _f16(c)} | ({"_ptx_k4sq": _f16(np.float32(c) ** 2)} if layout == "aos" else {})
    assert set(tables) <= set(blocks) and blocks["_ptx_k4"]
    for name, t in tables.items():
        (body, n), = blocks[name]
        outs = run_asm(body, n, [WORDS])
        lo = [t[(_bytes(WORDS, k) & np.uint64(15)).astype(np.int64)] for k in range(4)]
        hi = [t[(_bytes(WORDS, k) >> np.uint64(4)).astype(np.int64)] for k in range(4)]
        want = [_pair(lo[0], lo[1]), _pair(lo[2], lo[3]), _pair(hi[0], hi[1]), _pair(hi[2], hi[3])]
        for i, (g, w) in enumerate(zip(outs, want)):
            np.testing.assert_array_equal(g, w, err_msg=f"{name} output ${i}")


def test_k3_lookups_are_the_codebook():
    """_ptx_k3 (3-bit keys, no norm correction, below head_dim 128): four int32 codes -> their fp16 centroids, every
    combination."""
    spec, blocks = _kernel("k3v4_nc", "soa", 64)
    t = _f16(lloyd_max(spec.head_dim, spec.key_bits).centroids)
    codes = np.stack(np.meshgrid(*[np.arange(8, dtype=np.uint64)] * 4, indexing="ij"), -1).reshape(-1, 4)
    (body, n), = blocks["_ptx_k3"]
    out = run_asm(body, n, [codes[:, i] for i in range(4)])
    want = [_pair(t[codes[:, 0].astype(int)], t[codes[:, 1].astype(int)]),
            _pair(t[codes[:, 2].astype(int)], t[codes[:, 3].astype(int)])]
    for g, w in zip(out, want):
        np.testing.assert_array_equal(g, w)
    assert "_ptx_k3" not in _kernel("k3v4_nc", "aos")[1]  # the norm-corrected AoS keys keep the table gather


def _nibble(w, j):
    return (w >> np.uint64(4 * j)) & np.uint64(15)


def test_k4_parts_are_the_codebook():
    """_ptx_k4p (SoA 4-bit keys at head_dim 128: int32 words): two words of eight 4-bit codes -> part j = the fp16
    centroid of code j (head dim 8i + j) of each word, the first word in the low half."""
    spec, blocks = _kernel("4bit_nc", "soa")
    t = _f16(lloyd_max(spec.head_dim, spec.key_bits).centroids)
    assert "_ptx_k4" not in blocks and "_ptx_v4" not in blocks  # the byte helpers are not rendered beside them
    (body, n), = blocks["_ptx_k4p"]
    a, b = WORDS, np.roll(WORDS[::-1], 7)
    outs = run_asm(body, n, [a, b])
    assert n == 8
    for j, g in enumerate(outs):
        want = _pair(t[_nibble(a, j).astype(np.int64)], t[_nibble(b, j).astype(np.int64)])
        np.testing.assert_array_equal(g, want, err_msg=f"part {j}")


@pytest.mark.parametrize("preset", ["k3v4_nc", "3bit_nc"])
def test_k3_parts_are_the_codebook(preset):
    """_ptx_k3p (SoA 3-bit keys at head_dim 128: 3-byte groups as int32 words): two groups of eight 3-bit codes -> part
    j = the fp16 centroid of code j (bits 3j .. 3j + 2, head dim 8g + j) of each group, the first group in the low
    half; bits above the group's 24 are ignored. Every code in every position (the others random), random groups."""
    spec, blocks = _kernel(preset, "soa")
    t = _f16(lloyd_max(spec.head_dim, spec.key_bits).centroids)
    assert "_ptx_k3" not in blocks  # the per-code helper is not rendered beside it
    (body, n), = blocks["_ptx_k3p"]
    every = np.concatenate([(RNG.integers(0, 2 ** 32, 8, dtype=np.uint64) & ~np.uint64(7 << (3 * j)))
                            | (np.arange(8, dtype=np.uint64) << np.uint64(3 * j)) for j in range(8)])
    a = np.concatenate([np.repeat(every, 64), RNG.integers(0, 2 ** 32, 4096, dtype=np.uint64)])
    b = np.concatenate([np.tile(every, 64), RNG.integers(0, 2 ** 32, 4096, dtype=np.uint64)])
    outs = run_asm(body, n, [a, b])
    assert n == 8
    for j, g in enumerate(outs):
        code = [((w >> np.uint64(3 * j)) & np.uint64(7)).astype(np.int64) for w in (a, b)]
        np.testing.assert_array_equal(g, _pair(t[code[0]], t[code[1]]), err_msg=f"part {j}")


@pytest.mark.parametrize("preset", ["4bit_nc", "k8v4", "k3v4_nc"])
def test_v4_parts_are_biased_patterns(preset):
    """_ptx_v4p (SoA 4-bit values at head_dim 128: int32 words): two words of eight 4-bit codes -> part j = code j of
    each word as bf16 0x43cc (128 + c), then fp16 0x64cc (1024 + c), the first word in the low half."""
    _, blocks = _kernel(preset, "soa")
    a, b = WORDS, np.roll(WORDS[::-1], 7)
    for (body, n), magic in zip(blocks["_ptx_v4p"], (0x4300, 0x6400)):
        outs = run_asm(body, n, [a, b])
        assert n == 8
        for j, g in enumerate(outs):
            want = _pair(np.uint64(magic) | _nibble(a, j), np.uint64(magic) | _nibble(b, j))
            np.testing.assert_array_equal(g, want, err_msg=f"part {j}, magic {magic:#x}")
    assert len(blocks["_ptx_v4p"]) == 2


@pytest.mark.parametrize("preset", ["4bit_nc", "k8v4", "k3v4_nc"])
def test_v4_codes_are_biased_patterns(preset):
    """_ptx_v4 (AoS; SoA at head_dim 64): four bytes of two 4-bit value codes -> bf16 0x43cc (128 + c), then fp16
    0x64cc (1024 + c), low nibbles then high nibbles; the patterns are the values the portable _codes_biased
    builds."""
    _, blocks = _kernel(preset, "aos")
    for (body, n), magic in zip(blocks["_ptx_v4"], (0x4300, 0x6400)):
        outs = run_asm(body, n, [WORDS])
        lo = [np.uint64(magic) | (_bytes(WORDS, k) & np.uint64(15)) for k in range(4)]
        hi = [np.uint64(magic) | (_bytes(WORDS, k) >> np.uint64(4)) for k in range(4)]
        want = [_pair(lo[0], lo[1]), _pair(lo[2], lo[3]), _pair(hi[0], hi[1]), _pair(hi[2], hi[3])]
        for g, w in zip(outs, want):
            np.testing.assert_array_equal(g, w)
    assert len(blocks["_ptx_v4"]) == 2


@pytest.mark.parametrize("layout", ["soa", "aos"])
def test_v3_parts_are_biased_patterns(layout):
    """_ptx_v3: two 24-bit words of eight 3-bit value codes -> part j = code j of each word as BIAS + code (bf16,
    then fp16), word 0 in the low half."""
    _, blocks = _kernel("3bit_nc", layout)
    w = RNG.integers(0, 2 ** 24, (2, 20000), dtype=np.uint64)
    # word 0 of the first 64 pairs: every (code a at even j, code b at odd j); word 1 the reverse
    ab = [(a, b) for a in range(8) for b in range(8)]
    w[0, :64] = [sum((a if j % 2 == 0 else b) << (3 * j) for j in range(8)) for a, b in ab]
    w[1, :64] = [sum((b if j % 2 == 0 else a) << (3 * j) for j in range(8)) for a, b in ab]
    for (body, n), magic in zip(blocks["_ptx_v3"], (0x4300, 0x6400)):
        outs = run_asm(body, n, [w[0], w[1]])
        assert n == 8
        for j, g in enumerate(outs):
            want = _pair(np.uint64(magic) | ((w[0] >> np.uint64(3 * j)) & np.uint64(7)),
                         np.uint64(magic) | ((w[1] >> np.uint64(3 * j)) & np.uint64(7)))
            np.testing.assert_array_equal(g, want, err_msg=f"part {j}, magic {magic:#x}")


def test_e4m3_pairs_are_exact():
    """_ptx_e4m3: every pair of e4m3fn bytes -> their exact fp16 values (the emulated cvt decodes by formula; the
    portable path's tl.float8e4nv -> fp16 cast is exact too)."""
    spec, blocks = _kernel("k8v4", "soa")
    (body, n), = blocks["_ptx_e4m3"]
    w = np.arange(2 ** 16, dtype=np.uint64)
    w = w | (w[::-1] << np.uint64(16))
    out = run_asm(body, n, [w])
    want = [_pair(e4m3_to_f16_bits(_bytes(w, 0)), e4m3_to_f16_bits(_bytes(w, 1))),
            _pair(e4m3_to_f16_bits(_bytes(w, 2)), e4m3_to_f16_bits(_bytes(w, 3)))]
    for g, x in zip(out, want):
        np.testing.assert_array_equal(g, x)
    # spot values of the decoder itself: 0x38 = 1.0, 0x7e = 448 (the largest), 0x01 = 2^-9, 0xb8 = -1.0
    assert [np.uint16(e4m3_to_f16_bits(np.array([b]))[0]).view(np.float16) for b in (0x38, 0x7E, 0x01, 0xB8)] \
        == [1.0, 448.0, 2.0 ** -9, -1.0]


def test_only_nvidia_renders_ptx():
    """AMD renderings (and the CPU interpreter's) keep the portable code: no inline assembly at all."""
    for target in ("gfx942", "gfx950", "cpu"):
        spec = preset_spec_for_target("4bit_nc", Target.parse(target, "target"), layout="soa")
        assert "inline_asm_elementwise" not in render_triton(make_variant(spec, target))
    spec = preset_spec_for_target("4bit_nc", Target.SM80, layout="soa")
    src = render_triton(make_variant(spec, "sm80"))
    assert "_ptx_k4p(" in src and "_ptx_v4p(" in src
    # sm80 has no e4m3 conversion instruction: its fp8 keys keep Triton's cast
    assert "_ptx_e4m3" not in render_triton(make_variant(preset_spec_for_target("k8v4", Target.SM80, layout="soa"),
                                                         "sm80"))


def test_word_parts_only_where_fields_are_4_byte_aligned():
    """The eight-part path (int32 words of eight 4-bit codes, or 3-byte groups of eight 3-bit key codes) is rendered
    exactly where every byte address of the field is 4-byte aligned and head_dim / 8 >= 16: SoA at head_dim 128 and
    256 (4-bit keys and values, 3-bit keys; fp8 keys leave their 4-bit values to it; 3-bit values keep their own
    parts), never AoS (2-byte-aligned 134- / 118- / 102-byte slots) and not at head_dim 64; NVIDIA only. The 3-byte
    groups come from aligned words (_load_groups3, portable) wherever a 3-bit field is 4-byte aligned."""
    from tqgen.lower_triton import _render_inputs

    def parts(preset, layout, d=128, target=Target.SM90, **kw):
        spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=d, **kw)
        c = _render_inputs(spec, "generic", target)
        return c["k_parts"], c["v4_parts"]

    assert parts("4bit_nc", "soa") == (8, 8) and parts("4bit_nc", "soa", 256) == (8, 8)
    assert parts("4bit_nc", "soa", fold_norm=False) == (8, 8)  # the norm correction takes the squared parts
    assert parts("k8v4", "soa") == (0, 8) and parts("k3v4_nc", "soa") == (8, 8) and parts("3bit_nc", "soa") == (8, 0)
    for preset in ("4bit_nc", "k8v4", "k3v4_nc", "3bit_nc"):
        assert parts(preset, "aos") == (0, 0) and parts(preset, "soa", 64) == (0, 0)
    # 3-bit keys with the decode-time norm correction keep the per-code table gather
    assert parts("3bit_nc", "soa", fold_norm=False) == (0, 0)

    def groups3(preset, layout, target=Target.SM90, d=128):
        c = _render_inputs(LayoutSpec.from_preset(preset, layout=layout, head_dim=d), "generic", target)
        return c["k_groups3"], c["v_groups3"]

    assert groups3("3bit_nc", "soa") == (True, True) == groups3("3bit_nc", "soa", Target.GFX942, 64)
    assert groups3("k3v4_nc", "soa") == (True, False) and groups3("4bit_nc", "soa") == (False, False)
    assert groups3("3bit_nc", "aos") == (False, False) == groups3("k3v4_nc", "aos")
    assert parts("4bit_nc", "soa", block_size=64) == (8, 8)
    assert parts("4bit_nc", "soa", target=Target.GFX942) == (0, 0)
