"""Rotations Π (DESIGN §1.3): keys are stored as y = x̂·Πᵀ; queries are rotated the same way.

- ``hadamard``: Sylvester Hadamard / sqrt(D); symmetric and orthonormal (vLLM's, byte-compatible).
- ``rht``: Π = H·diag(s), s = seeded ±1 signs (splitmix64, stable across numpy versions). Removes
  the adversarial inputs of plain Hadamard (a key along a Hadamard row).
- ``orthogonal``: a seeded random orthogonal matrix for any D (e.g. 96), Q of a QR decomposition
  with a positive diagonal of R, applied as a GEMM.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .ir import Reason, Rotation, SpecError, is_power_of_two

_MASK64 = (1 << 64) - 1


def _splitmix64(seed: int, n: int) -> list[int]:
    out, x = [], seed & _MASK64
    for _ in range(n):
        x = (x + 0x9E3779B97F4A7C15) & _MASK64
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        out.append(z ^ (z >> 31))
    return out


def random_signs(head_dim: int, seed: int) -> np.ndarray:
    """Deterministic ±1 float32 vector of length head_dim."""
    return np.array([1.0 if (v >> 63) == 0 else -1.0 for v in _splitmix64(seed, head_dim)], dtype=np.float32)


def _uniform(seed: int, n: int) -> np.ndarray:
    return (np.array([v >> 11 for v in _splitmix64(seed, n)], dtype=np.float64) + 0.5) / float(1 << 53)


def sylvester_hadamard(n: int) -> np.ndarray:
    """Unnormalised ±1 Hadamard matrix of order n (a power of two), float64."""
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h


@lru_cache(maxsize=None)
def _rotation(head_dim: int, kind: Rotation, seed: int) -> np.ndarray:
    d = head_dim
    if kind in (Rotation.HADAMARD, Rotation.RHT):
        if not is_power_of_two(d):
            raise SpecError([Reason("rotation", str(kind), ["orthogonal"],
                                    f"Sylvester Hadamard needs head_dim a power of two (given {d}); "
                                    "use rotation='orthogonal'")], "cannot build rotation")
        h = sylvester_hadamard(d) / np.sqrt(d)
        if kind is Rotation.RHT:
            h = h * random_signs(d, seed).astype(np.float64)[None, :]
        m = h
    elif kind is Rotation.ORTHOGONAL:
        u1, u2 = _uniform(seed, d * d), _uniform(seed ^ 0x5DEECE66D, d * d)
        g = (np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)).reshape(d, d)  # Box-Muller
        q, r = np.linalg.qr(g)
        m = q * np.sign(np.diag(r))[None, :]
    else:
        raise SpecError([Reason("rotation", str(kind), ["hadamard", "rht", "orthogonal"],
                                "rotation 'none' has no matrix (fp8 keys cast as they are)")],
                        "cannot build rotation")
    out = m.astype(np.float32)
    out.setflags(write=False)
    return out


def rotation_matrix(head_dim: int, kind: str | Rotation = "hadamard", seed: int = 0) -> np.ndarray:
    """Orthonormal float32 Π [D, D]; store y = x̂·Πᵀ, recover x̂ = y·Π."""
    return _rotation(int(head_dim), Rotation.parse(kind, "rotation"), int(seed))
