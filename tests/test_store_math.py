"""The C++ store's arithmetic shortcuts, checked on the CPU against what they replace.

1. ``bucket_grid``: the codebook search as one table lookup (cell trunc(y·K + OFF), one midpoint
   compare) gives the reference's index ``(y >= midpoints).sum()`` for every y, except where y is
   within 1e-6 of a midpoint (the fp32 rounding of y·K + OFF, |Δt| ≤ 2^-24·2·OFF, moves a tie by at
   most ~1e-6/K·OFF·2 in y; tqgen.testing allows index flips within FLIP_DELTA = 1e-5). The c² table
   the fold reads by the found code is c[code]² rounded once to fp32.
2. Value codes: q = fma(fma(-q0, s, x), r, q0) with r = RN(1/s), q0 = RN(x·r) is the correctly
   rounded x/s (Markstein), checked with exact rational arithmetic on random and adversarial inputs
   (quotients within a few ulps of k + 1/2, where rounding decides the code)."""

from fractions import Fraction

import numpy as np
import pytest

from tqgen.codebook import lloyd_max
from tqgen.lower_cuda import bucket_grid, store_chunk


def _f32(s: str) -> np.float32:
    return np.float32(float(s.rstrip("f")))


@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("bits", [2, 3, 4])
def test_bucket_grid_is_the_codebook_search(head_dim, bits):
    g = bucket_grid(head_dim, bits)
    k, off = _f32(g["scale"]), _f32(g["offset"])
    codes = np.array([e[0] for e in g["entries"]])
    mids_t = np.array([_f32(e[1]) for e in g["entries"]], dtype=np.float32)
    c2 = np.array([_f32(x) for x in g["c2"]], dtype=np.float32)
    cb = lloyd_max(head_dim, bits)
    mids = np.asarray(cb.midpoints, dtype=np.float64)
    rng = np.random.default_rng(bits * 1000 + head_dim)
    y = np.concatenate([
        rng.normal(0, 1 / np.sqrt(head_dim), 200_000),  # the rotated unit-vector coordinates
        rng.uniform(-1, 1, 50_000),  # the whole range |y| <= 1
        (mids[:, None] + rng.uniform(-1e-4, 1e-4, (len(mids), 2000))).ravel(),  # around every midpoint
        (((np.arange(len(codes) + 1) - float(off)) / float(k))[:, None]
         + rng.uniform(-1e-6, 1e-6, (len(codes) + 1, 200))).ravel(),  # around every cell edge
        [-1.0, 1.0, 0.0, -0.0],
    ]).astype(np.float32)
    y = y[np.abs(y) <= 1]
    t = (y.astype(np.float64) * np.float64(k) + np.float64(off)).astype(np.float32)  # one fma rounding
    cell = np.trunc(t).astype(np.int64)
    assert cell.min() >= 0 and cell.max() < len(codes), "every |y| <= 1 has a cell"
    up = t >= mids_t[cell]
    got = codes[cell] + up
    want = (y.astype(np.float64)[:, None] >= mids[None, :]).sum(-1)
    near = np.abs(y.astype(np.float64)[:, None] - mids[None, :]).min(-1) <= 1e-6
    assert (got[~near] == want[~near]).all(), int((got[~near] != want[~near]).sum())
    assert (np.abs(got[near] - want[near]) <= 1).all()
    c = np.asarray(cb.centroids, dtype=np.float64)
    assert len(c2) == 1 << bits
    np.testing.assert_allclose(c2[got].astype(np.float64), c[got] ** 2, rtol=2 ** -24)  # one fp32 rounding


def test_store_chunks_fill_whole_words():
    for bits in (2, 3, 4, 8):
        ch = store_chunk(bits)
        assert ch % 8 == 0 and ch * bits % 32 == 0 and 32 % ch == 0


def _rn32(x: Fraction) -> Fraction:
    """x rounded to the nearest float32 (ties to even), normal range."""
    if x == 0:
        return Fraction(0)
    sign = -1 if x < 0 else 1
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    ulp = Fraction(2) ** (e - 23)
    m, rem = divmod(a, ulp)
    if rem > ulp / 2 or (rem == ulp / 2 and m % 2 == 1):
        m += 1
    return sign * m * ulp


def _markstein(x: np.float32, s: np.float32) -> Fraction:
    fx, fs = Fraction(float(x)), Fraction(float(s))
    r = _rn32(1 / fs)
    q0 = _rn32(fx * r)
    rem = _rn32(-q0 * fs + fx)
    return _rn32(rem * r + q0)


def test_value_division_without_division_is_correctly_rounded():
    rng = np.random.default_rng(5)
    pairs = []
    for _ in range(3000):  # realistic rows: lo/hi of bf16 values, 15 levels
        lo, hi = np.sort(rng.normal(0, 3, 2)).astype(np.float32)
        s = np.float32(np.float32(hi - lo) / np.float32(15))
        pairs.append((np.float32(rng.uniform(0, float(hi - lo))), s))
        kq = rng.integers(0, 15)
        base = np.float32((kq + 0.5) * float(s))  # quotient near k + 1/2: the rounding decides the code
        for u in range(-3, 4):
            pairs.append((np.nextafter(base, np.float32(np.inf if u > 0 else -np.inf)) if u else base, s))
    for _ in range(500):  # wide exponent range
        s = np.float32(2.0 ** rng.uniform(-26, 14) * rng.uniform(1, 2))
        pairs.append((np.float32(s * rng.uniform(0, 15)), s))
    bad = [(x, s) for x, s in pairs if x > 1e-30 and _markstein(x, s) != Fraction(float(np.float32(x) / s))]
    assert not bad, bad[:5]


@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("bits", [2, 3, 4])
def test_search_grid_compared_in_y_is_the_codebook_search_exactly(head_dim, bits):
    """The Triton store's lookup (tq_store): cell = trunc(clamp(y·K + OFF)) in fp32, code = below[cell] + (y >=
    midpoints[inside[cell]]), the midpoint compared in y as the reference does: equal to (y >= midpoints).sum() for
    every y, no index flips, including a few ulps around every midpoint (ties go up), around every cell edge, NaN
    (code 0), ±0 and |y| a little past 1."""
    from tqgen.codebook import search_grid
    g = search_grid(head_dim, bits)
    mids = np.asarray(lloyd_max(head_dim, bits).midpoints, dtype=np.float32)
    below, inside = np.array(g.below), np.array(g.inside)
    gmid = np.where(inside >= 0, mids[np.maximum(inside, 0)], np.float32(np.inf)).astype(np.float32)
    rng = np.random.default_rng(7 * bits + head_dim)
    ulps = np.arange(-4, 5, dtype=np.int32)
    around_mids = (mids.view(np.int32)[:, None] + ulps[None, :]).ravel().view(np.float32)
    edges = ((np.arange(len(below) + 1) - g.offset) / g.scale).astype(np.float32)
    y = np.concatenate([rng.normal(0, 1 / np.sqrt(head_dim), 100_000).astype(np.float32), around_mids,
                        (edges[:, None] + rng.uniform(-1e-6, 1e-6, (len(edges), 50))).ravel().astype(np.float32),
                        np.array([0.0, -0.0, 1.0, -1.0, 1.0001, -1.0001, np.nan], dtype=np.float32)])
    tg = y * np.float32(g.scale) + np.float32(g.offset)
    cell = np.where(tg == tg, np.minimum(np.maximum(tg, 0), len(below) - 1), 0).astype(np.int32)
    got = below[cell] + (y >= gmid[cell])
    want = (y[:, None] >= mids[None, :]).sum(-1)
    assert (got == want).all(), y[got != want][:8]
