"""Lloyd-Max codebooks, rotations and the key quantizer's quality (DESIGN §1.1, §1.3).

Quantisation goes through the reference oracle (tqgen.reference.encode_keys / decode_keys), the same
code that writes and reads cache bytes. The measured numbers are printed (pytest -s shows them) and
repeated in each assertion message.
"""

import math

import numpy as np
import pytest
import torch

from tqgen import LayoutSpec, SpecError, lloyd_max, rotation_matrix
from tqgen import reference as ref
from tqgen.rotation import sylvester_hadamard

# DESIGN §1.1: positive half of the levels in units of σ, and the distortion per unit vector
LEVELS = {
    1: [0.7979],
    2: [0.4528, 1.5104],
    3: [0.2451, 0.7560, 1.3439, 2.1519],
    4: [0.1284, 0.3880, 0.6568, 0.9423, 1.2562, 1.6180, 2.0690, 2.7326],
}
NMSE_THEORY = {1: 0.3634, 2: 0.1175, 3: 0.03455, 4: 0.00950}


# ----------------------------------------------------------------------------------- codebook
@pytest.mark.parametrize("d", [64, 96, 128, 256], ids=lambda d: f"d{d}")
@pytest.mark.parametrize("bits", [1, 2, 3, 4])
def test_centroids_match_the_design_table(bits, d):
    cb = lloyd_max(d, bits)
    c = cb.centroids
    assert c.dtype == np.float32 and c.shape == (2**bits,)
    assert np.all(np.diff(c) > 0)  # sorted ascending, distinct
    # symmetric about 0: c[i] = -c[n-1-i]; both halves come from one float64 solve rounded to float32,
    # so they agree to the float32 rounding of the largest level (2^-24 relative)
    np.testing.assert_allclose(c, -c[::-1], rtol=0, atol=float(np.abs(c).max()) * 2**-23)
    sigma = 1 / math.sqrt(d)
    # the table has 4 significant digits: 1e-3 relative is what it can confirm
    np.testing.assert_allclose(c[2 ** (bits - 1):] / sigma, LEVELS[bits], rtol=1e-3)
    # midpoints are the means of adjacent centroids (computed in float32)
    assert cb.midpoints.dtype == np.float32 and cb.midpoints.shape == (2**bits - 1,)
    np.testing.assert_array_equal(cb.midpoints, (c[:-1] + c[1:]) / np.float32(2))
    np.testing.assert_allclose(cb.unit_mse, NMSE_THEORY[bits], rtol=1e-3)  # the solver's own distortion
    assert lloyd_max(d, bits) is cb  # solved once and cached


def test_d128_levels_from_the_design_text():
    # DESIGN §1.1 quotes these at D=128 (σ = 0.0884) to 4 decimals: |error| ≤ 0.5e-4 from rounding
    np.testing.assert_allclose(lloyd_max(128, 3).centroids[4:], [0.0217, 0.0668, 0.1188, 0.1902], rtol=0, atol=0.5e-4)
    assert abs(float(lloyd_max(128, 4).centroids[-1]) - 0.2415) <= 0.5e-4


def test_codebook_rejects_bad_arguments():
    with pytest.raises(ValueError, match="bits=9"):
        lloyd_max(128, 9)
    with pytest.raises(ValueError, match="head_dim=0"):
        lloyd_max(0, 4)


# ------------------------------------------------------------------------------------ rotation
ROTATIONS = [("hadamard", 64), ("hadamard", 128), ("hadamard", 256), ("rht", 64), ("rht", 128), ("rht", 256),
             ("orthogonal", 64), ("orthogonal", 96), ("orthogonal", 128), ("orthogonal", 256)]


@pytest.mark.parametrize("kind,d", ROTATIONS, ids=[f"{k}-d{d}" for k, d in ROTATIONS])
def test_rotation_is_orthonormal_float32(kind, d):
    m = rotation_matrix(d, kind, 3)
    assert m.dtype == np.float32 and m.shape == (d, d)
    # each float32 entry is within 2^-24 (relative) of an exactly orthonormal matrix M; with unit rows,
    # |(M+Δ)(M+Δ)ᵀ - I|_ij ≤ 2·2^-24 by Cauchy-Schwarz (+ float64 product error, < 1e-12)
    m64 = m.astype(np.float64)
    tol = 2**-23 + 1e-12
    assert np.abs(m64 @ m64.T - np.eye(d)).max() <= tol
    assert np.abs(m64.T @ m64 - np.eye(d)).max() <= tol


@pytest.mark.parametrize("d", [64, 128, 256], ids=lambda d: f"d{d}")
def test_hadamard_is_symmetric_sylvester(d):
    m = rotation_matrix(d, "hadamard")
    np.testing.assert_array_equal(m, m.T)
    np.testing.assert_array_equal(m, (sylvester_hadamard(d) / np.sqrt(d)).astype(np.float32))  # vLLM's matrix


def test_rht_is_hadamard_times_seeded_signs():
    h = rotation_matrix(128, "hadamard")
    a, a2, b = rotation_matrix(128, "rht", 1), rotation_matrix(128, "rht", 1), rotation_matrix(128, "rht", 2)
    np.testing.assert_array_equal(a, a2)  # deterministic for a seed
    assert not np.array_equal(a, b)  # differs with the seed
    for m in (a, b):
        signs = np.sign(m[0] / h[0])  # Π = H·diag(s): column j is H's column j times s_j
        assert set(np.unique(signs)) == {-1.0, 1.0}
        np.testing.assert_array_equal(m, h * signs[None, :])
    assert not np.array_equal(rotation_matrix(96, "orthogonal", 1), rotation_matrix(96, "orthogonal", 2))
    np.testing.assert_array_equal(rotation_matrix(96, "orthogonal", 1), rotation_matrix(96, "orthogonal", 1))


@pytest.mark.parametrize("kind", ["hadamard", "rht"])
@pytest.mark.parametrize("d", [96, 80, 112], ids=lambda d: f"d{d}")
def test_hadamard_for_non_power_of_two_raises(kind, d):
    with pytest.raises(SpecError) as e:
        rotation_matrix(d, kind)  # never a wrong-sized matrix (vLLM builds 128x128 for D=96)
    assert "power of two" in str(e.value) and "orthogonal" in str(e.value)


def test_no_rotation_matrix_for_none():
    with pytest.raises(SpecError, match="has no matrix"):
        rotation_matrix(128, "none")


# ------------------------------------------------------------------------------- NMSE, bias
def _nmse_per_key(spec: LayoutSpec, keys: torch.Tensor) -> torch.Tensor:
    kt = ref.decode_keys(spec, ref.encode_keys(spec, keys))
    return ((kt - keys) ** 2).sum(-1) / (keys ** 2).sum(-1)


@pytest.mark.parametrize("bits", [3, 4])
def test_nmse_on_random_unit_vectors_matches_theory(bits):
    """20k uniformly random unit vectors at D=128, hadamard rotation, no norm correction, no fold.

    Tolerance 3 %: the sampling error is small (per-vector NMSE has ≈ 25 % relative spread, so the
    mean of 20k has ≈ 0.2 %); the rest is the finite-D effect — a rotated unit vector's coordinates
    follow a scaled Beta law with lighter tails than N(0, 1/D) (measured ≈ -2 % at D=128)."""
    g = torch.Generator().manual_seed(100 + bits)
    x = torch.randn(20000, 128, generator=g)
    x = x / x.norm(dim=-1, keepdim=True)
    spec = LayoutSpec(key_bits=bits, norm_correction=False, fold_norm=False)
    nmse = float(_nmse_per_key(spec, x).mean())
    theory = NMSE_THEORY[bits]
    msg = f"{bits}-bit NMSE measured {nmse:.5f}, theory {theory} ({100 * (nmse / theory - 1):+.2f} %)"
    print(msg)
    assert abs(nmse - theory) <= 0.03 * theory, msg
    assert nmse < 2.72 * 4.0**-bits, msg  # the TurboQuant paper's upper bound


def test_inner_product_bias_shrinks_toward_one_with_bits():
    """The MSE quantizer shrinks: with centroids at their cell means, E[<x, x̃>] = E[‖x̃‖²] = 1 - NMSE
    for a unit x, so E[<q, k̃>] / E[<q, k>] ≈ 1 - NMSE(b) < 1 for q = k + independent noise.
    Tolerance 0.01 absolute around 1 - NMSE(b): finite-D NMSE is ≈ 2 % below the table (≤ 0.003 here)
    and the noise term's sampling error over 8k pairs is < 0.002."""
    g = torch.Generator().manual_seed(7)
    k = torch.randn(8000, 128, generator=g) * (0.5 + torch.rand(8000, 1, generator=g))  # varied norms
    q = k + 0.7 * torch.randn(8000, 128, generator=g)  # correlated with k: <q, k> clearly positive
    ratios = {}
    for bits in (2, 3, 4):
        spec = LayoutSpec(key_bits=bits, norm_correction=False, fold_norm=False)
        kt = ref.decode_keys(spec, ref.encode_keys(spec, k))
        ratios[bits] = float((q * kt).sum(-1).mean() / (q * k).sum(-1).mean())
    msg = "E<q,k~>/E<q,k> by bits: " + ", ".join(f"{b}: {r:.4f}" for b, r in ratios.items())
    print(msg)
    assert ratios[2] < ratios[3] < ratios[4] < 1, msg  # shrinks toward 1 from below
    for bits, r in ratios.items():
        assert abs(r - (1 - NMSE_THEORY[bits])) < 0.01, msg


# --------------------------------------------------------------------------------- adversarial
def test_keys_along_hadamard_rows_break_plain_hadamard_but_not_rht():
    """Keys equal to rows of the Sylvester Hadamard matrix (D=128), scaled by random norms.

    Plain `hadamard` rotates row i to the one-hot vector e_i: one coordinate 1, the others 0, the worst
    case for a codebook built for N(0, 1/D) coordinates (measured NMSE ≈ 0.59 at 4 bit, 60x theory).

    `rht` (Π = H·diag(s)) maps row i to the Walsh transform of the random sign vector s, permuted by i:
    for ONE seed all 128 rows quantize alike (a single random vector's NMSE, ≈ 25-45 % spread between
    seeds). RHT's guarantee is over the random signs, so the mean is taken over 256 seeds, cycling
    through all 128 rows (8 rows per seed, every row 16 times): standard error ≈ 2 %, tolerance 10 %."""
    rows = torch.from_numpy(sylvester_hadamard(128)).float()
    g = torch.Generator().manual_seed(0)
    norms = 0.5 + 3 * torch.rand(128, 1, generator=g)
    keys = rows * norms

    had = _nmse_per_key(LayoutSpec(key_bits=4, norm_correction=False, rotation="hadamard"), keys)
    theory = NMSE_THEORY[4]

    one_seed = _nmse_per_key(LayoutSpec(key_bits=4, norm_correction=False, rotation="rht", rotation_seed=0), keys)
    per_seed = []
    for seed in range(256):
        idx = (torch.arange(8) + 8 * seed) % 128
        spec = LayoutSpec(key_bits=4, norm_correction=False, rotation="rht", rotation_seed=seed)
        per_seed.append(float(_nmse_per_key(spec, keys[idx]).mean()))
    rht = float(np.mean(per_seed))
    msg = (f"adversarial keys, 4 bit: hadamard NMSE {float(had.mean()):.5f}, rht NMSE {rht:.5f} (mean of 256 seeds, "
           f"{100 * (rht / theory - 1):+.1f} % vs theory {theory}); rht seed 0 alone: {float(one_seed.mean()):.5f}")
    print(msg)
    assert float(had.min()) > 3 * theory, msg  # every single row is far off, not just the average
    assert abs(rht - theory) <= 0.10 * theory, msg
    # the explanation above: within one seed the 128 rows quantize alike (only the fp16 norm differs)
    assert float(one_seed.std() / one_seed.mean()) < 0.05, msg
