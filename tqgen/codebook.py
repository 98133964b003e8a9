"""Lloyd-Max codebooks for N(0, 1/D) coordinates (DESIGN §1.1), solved once and cached.

Independently computed here (no tables copied): Lloyd's iteration on the standard normal —
thresholds are the midpoints of adjacent centroids, each centroid the conditional mean of its
cell — in float64 to convergence, then scaled by σ = 1/sqrt(D) and rounded to float32.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _pdf(x: np.ndarray) -> np.ndarray:
    return _INV_SQRT_2PI * np.exp(-0.5 * x * x)


def _cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.vectorize(math.erf)(x / _SQRT2))


@lru_cache(maxsize=None)
def _unit_levels(bits: int) -> tuple[tuple[float, ...], float]:
    """Optimal levels for N(0,1) with 2**bits cells and the resulting MSE (float64)."""
    n = 2**bits
    c = np.linspace(-2.5, 2.5, n) if n > 2 else np.array([-0.8, 0.8])
    for _ in range(10000):
        t = np.concatenate(([-np.inf], 0.5 * (c[:-1] + c[1:]), [np.inf]))
        pa, pb = _pdf(t[:-1]), _pdf(t[1:])
        pa[0] = pb[-1] = 0.0
        mass = _cdf(t[1:]) - _cdf(t[:-1])
        new = (pa - pb) / mass
        if np.max(np.abs(new - c)) < 1e-13:
            c = new
            break
        c = new
    # MSE = E[X²] - Σ mass_i c_i²  (centroids are conditional means)
    t = np.concatenate(([-np.inf], 0.5 * (c[:-1] + c[1:]), [np.inf]))
    mass = _cdf(t[1:]) - _cdf(t[:-1])
    mse = 1.0 - float(np.sum(mass * c * c))
    return tuple(float(v) for v in c), mse


@dataclass(frozen=True)
class Codebook:
    head_dim: int
    bits: int
    centroids: np.ndarray  # float32 [2**bits], sorted ascending
    midpoints: np.ndarray  # float32 [2**bits - 1], (c[i] + c[i+1]) / 2 computed in float32
    unit_mse: float  # expected squared error per unit-variance coordinate (== NMSE per unit vector)


@lru_cache(maxsize=None)
def lloyd_max(head_dim: int, bits: int) -> Codebook:
    """Sorted float32 centroids and midpoints for coordinates of a rotated unit vector in R^D."""
    if bits not in (1, 2, 3, 4, 5, 6, 7, 8):
        raise ValueError(f"lloyd_max bits={bits!r} not supported: one of 1..8 (tqgen keys use 2, 3, 4)")
    if not isinstance(head_dim, int) or head_dim < 1:
        raise ValueError(f"lloyd_max head_dim={head_dim!r} not supported: a positive int such as 128")
    levels, mse = _unit_levels(bits)
    c = (np.asarray(levels, dtype=np.float64) / math.sqrt(head_dim)).astype(np.float32)
    mid = ((c[:-1] + c[1:]) / np.float32(2)).astype(np.float32)
    c.setflags(write=False)
    mid.setflags(write=False)
    return Codebook(head_dim, bits, c, mid, mse)


@dataclass(frozen=True)
class SearchGrid:
    """The codebook search ``(y >= midpoints).sum()`` as one table lookup (the stores: C++ ``bucket_grid``, Triton's
    ``tq_store``). For a rotated unit-vector coordinate y (|y| <= 1), t = y·scale + offset lies in (0, cells) and falls
    in cell trunc(t) of a uniform grid fine enough that each cell holds at most one midpoint, none within 2 % of a cell
    edge (so a rounding that moves t across an edge changes nothing; offset is a half-integer, so the midpoint 0 sits
    mid-cell). Cell g: ``below[g]`` midpoints lie left of it; ``inside[g]`` is the index of the one inside it, or -1;
    the code of y is below[g] + (y >= midpoints[inside[g]])."""

    scale: float  # a float32 value
    offset: float
    below: tuple[int, ...]
    inside: tuple[int, ...]
    mid_t: tuple[float, ...]  # each midpoint's t (float64)

    @property
    def last_cell(self) -> int:
        return len(self.below) - 1

    def cell_midpoints(self, midpoints: np.ndarray) -> np.ndarray:
        """float32 [cells]: the midpoint inside each cell (from ``midpoints``, the codebook's), +inf where none."""
        inside = np.asarray(self.inside)
        return np.where(inside >= 0, np.asarray(midpoints, dtype=np.float32)[np.maximum(inside, 0)],
                        np.float32(np.inf)).astype(np.float32)


@lru_cache(maxsize=None)
def search_grid(head_dim: int, bits: int) -> SearchGrid:
    mids = np.asarray(lloyd_max(head_dim, bits).midpoints, dtype=np.float64)
    gap = np.diff(mids).min()
    for fac in np.linspace(0.95, 0.5, 91):
        k = float(np.float32(1.0 / (gap * fac)))
        off = math.ceil(k) + 1.5
        t = mids * k + off
        if (np.minimum(t - np.floor(t), np.ceil(t) - t) > 0.02).all():
            break
    else:  # pragma: no cover - every supported codebook finds a grid in the first steps
        raise AssertionError(f"no search grid for D={head_dim} bits={bits}")
    cells = range(int(2 * off) + 1)
    below = tuple(int((t < g).sum()) for g in cells)
    inside = tuple(next((i for i, x in enumerate(t) if g <= x < g + 1), -1) for g in cells)
    return SearchGrid(k, off, below, inside, tuple(float(x) for x in t))


def _bits16(x: float, bf16: bool) -> int:
    if bf16:
        u = struct.unpack("<I", struct.pack("<f", float(np.float32(x))))[0]
        u += 0x7FFF + ((u >> 16) & 1)
        return (u >> 16) & 0xFFFF
    return int(np.array([x], dtype=np.float16).view(np.uint16)[0])


def lut_words(centroids: np.ndarray, bf16: bool) -> dict[str, list[str]]:
    """16 centroids (zero-padded) as 4 lo-byte and 4 hi-byte little-endian words (fp16 bits, or bf16 rounded to
    nearest even): the byte-permute lookup tables of the C++ and the Triton (NVIDIA) decodes."""
    vals = list(centroids) + [0.0] * (16 - len(centroids))
    bits = [_bits16(v, bf16) for v in vals]
    lo = [sum((bits[4 * j + i] & 0xFF) << (8 * i) for i in range(4)) for j in range(4)]
    hi = [sum((bits[4 * j + i] >> 8) << (8 * i) for i in range(4)) for j in range(4)]
    return {"lo": [f"0x{w:08x}" for w in lo], "hi": [f"0x{w:08x}" for w in hi]}
