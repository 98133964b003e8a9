"""Every default-matrix CUDA C++ variant (and the portable fragment path the HIP variants use)
against the reference oracle and the Triton variant of the same spec, on a real GPU.

Store: tqgen.testing.compare_store's rule (V and fp8 bytes identical; Lloyd-Max index flips only
at a midpoint within 1e-5). Decode: max error relative to max |out| ≤ tqgen.testing.DECODE_TOL,
against the reference and against Triton. Dequant (fp32 out): the reference's float32 values
within 1e-5 relative (the only difference is the fp32 summation order of the inverse rotation).
Run on the H200: ``python -m pytest -q -m gpu tests/test_cuda_gpu.py``.
"""

import pytest
import torch

from tqgen import reference as ref
from tqgen.build import default_matrix
from tqgen.ir import Backend, Vendor
from tqgen.testing import DECODE_TOL, Case, compare_store, rel_err

pytestmark = pytest.mark.gpu

CUDA = [v for v in default_matrix()[0] if v.backend is Backend.CUDA]
SHAPES = [
    ([32768, 1, 0, 4099, 16, 1000, 8191, 17], 8, 4, torch.bfloat16),
    ([int(x) for x in torch.randint(1, 2048, (64,), generator=torch.Generator().manual_seed(1))], 2, 8,
     torch.bfloat16),
    ([513, 4096, 77], 4, 1, torch.float16),
    ([3000, 40], 3, 3, torch.bfloat16),
    ([2500, 700], 2, 12, torch.float16),  # two query octets per KV head, the second one partial
]


def _portable(v):
    from tqgen.lower_cuda import make_variant
    return make_variant(v.spec, v.target, "portable")


@pytest.mark.parametrize("variant", CUDA + [_portable(v) for v in CUDA if str(v.target) == "sm90"],
                         ids=lambda v: v.id)
def test_variant_matches_reference(variant):
    from tqgen.cuda_launch import load_variant
    from tqgen.triton_launch import load_triton

    kern = load_variant(variant)
    spec = variant.spec
    dev = torch.device("cuda")
    tri = load_triton(spec, "sm90")
    for i, (lens, hk, g, dt) in enumerate(SHAPES):
        if variant.kind == "portable" and i == 0:
            lens = [4099, 16, 1000]  # the shuffle-emulated fragments are slow: a shorter batch
        case = Case(spec, lens, hk, g, dtype=dt, seed=i).build(dev)
        got = ref.allocate(spec, case["num_blocks"], hk, dev)
        want = ref.allocate(spec, case["num_blocks"], hk, dev)
        kern.store(case["key"], case["value"], got, case["slot_mapping"])
        n = case["key"].shape[0]
        for s in range(0, n, 16384):
            sl = slice(s, s + 16384)
            ref.store(spec, case["key"][sl], case["value"][sl], want, case["slot_mapping"][sl])
        diff = compare_store(spec, got, want, case["key"], case["slot_mapping"])
        assert diff.ok, diff.summary()
        for sinks, window in ((None, None), (case["sinks"], 1000)):
            out = kern.decode(case["query"], want, case["block_table"], case["seq_lens"], sinks=sinks,
                              sliding_window=window)
            exp = ref.decode(spec, case["query"], want, case["block_table"], case["seq_lens"], sinks=sinks,
                             sliding_window=window)
            assert torch.isfinite(out).all()
            err = rel_err(out, exp)
            assert err <= DECODE_TOL[dt], f"decode rel err {err:.2e} > {DECODE_TOL[dt]:.2e} (shape {i})"
            t_out = tri.decode(case["query"], want, case["block_table"], case["seq_lens"], sinks=sinks,
                               sliding_window=window)
            assert rel_err(out, t_out) <= 2 * DECODE_TOL[dt], "cuda and triton disagree"
        if i == 2:
            k, v = kern.dequant(want, case["block_table"], case["seq_lens"], dtype=torch.float32)
            ek, ev = ref.dequant(spec, want, case["block_table"], case["seq_lens"])
            assert rel_err(k, ek) < 1e-5 and rel_err(v, ev) < 1e-6
            kb, vb = kern.dequant(want, case["block_table"], case["seq_lens"], dtype=torch.bfloat16)
            assert rel_err(kb, ek) < 2**-8 and rel_err(vb, ev) < 2**-8
