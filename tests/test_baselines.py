"""The bf16 paged-decode baseline (`tqgen.baselines.FlexPagedDecode`): each sequence attends exactly its own
pages' first ``len`` tokens, in block-table order, = SDPA over those tokens gathered into a contiguous K/V.

CPU: eager FlexAttention in float64 (the same sums as SDPA's in another order: agreement to ~1e-15; bound
1e-12). GPU: the compiled flex-decoding kernel in bf16 against float32 SDPA on the same bf16 inputs: the
output is a convex combination of bf16 values of magnitude <= ~4, rounded once to bf16 (relative 2^-8: 0.016
at 4) plus the kernel's fp32 accumulation; bound 3e-2.
"""

import pytest
import torch
import torch.nn.functional as F

from tqgen.baselines import FlexPagedDecode, flex_available, gather_pages

pytestmark = pytest.mark.skipif(flex_available() is not None, reason=str(flex_available()))


def _case(b_lens, hq, hk, d, page, dtype, device, spare=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    width = max(-(-n // page) for n in b_lens) + 1
    n_pages = len(b_lens) * width + spare
    kp = torch.randn(1, hk, n_pages * page, d, generator=g).to(device=device, dtype=dtype)
    vp = torch.randn(1, hk, n_pages * page, d, generator=g).to(device=device, dtype=dtype)
    bt = torch.randperm(n_pages, generator=g)[: len(b_lens) * width].view(len(b_lens), width)
    q = torch.randn(len(b_lens), hq, d, generator=g).to(device=device, dtype=dtype)
    return q, kp, vp, bt.to(device)


def _oracle(q, kp, vp, bt, lens, page):
    outs = []
    for s, n in enumerate(lens):
        k, v = gather_pages(kp, bt[s], n, page).double(), gather_pages(vp, bt[s], n, page).double()
        outs.append(F.scaled_dot_product_attention(q[s:s + 1, :, None].double(), k, v,
                                                   enable_gqa=q.shape[1] != kp.shape[1])[:, :, 0])
    return torch.cat(outs)


@pytest.mark.parametrize("hq,hk,d", [(8, 2, 64), (4, 4, 32), (9, 3, 64)])
def test_flex_paged_decode_matches_gathered_sdpa_cpu(hq, hk, d):
    page = 128
    lens = [300, 128, 520, 1, 257]  # a partial last page, one exact page, several, a single token
    q, kp, vp, bt = _case(lens, hq, hk, d, page, torch.float64, "cpu")
    out = FlexPagedDecode(kp, vp, bt, lens, page=page, compiled=False)(q)
    ref = _oracle(q, kp, vp, bt, lens, page)
    assert out.shape == (len(lens), hq, d)
    assert (out - ref).abs().max().item() < 1e-12
    # the other sequences' pages are not seen: new keys on every page outside sequence 0's move only the others
    kp2 = kp.clone()
    mine = set(bt[0, : -(-lens[0] // page)].tolist())
    for p in range(kp.shape[2] // page):
        if p not in mine:
            kp2[:, :, p * page:(p + 1) * page] += torch.randn_like(kp2[:, :, p * page:(p + 1) * page])
    out2 = FlexPagedDecode(kp2, vp, bt, lens, page=page, compiled=False)(q)
    assert torch.equal(out2[0], out[0])
    assert (out2[1:] - out[1:]).abs().max().item() > 1e-3


@pytest.mark.parametrize("bad,needle", [
    (dict(lens=[0, 5]), "every length must be in 1.."),
    (dict(lens=[10_000, 5]), "every length must be in 1.."),
    (dict(shared=True), "shared with another sequence"),
    (dict(pool=(2, 2, 256, 16)), "must both be [1, Hk, n_pages * page, D]"),
])
def test_flex_paged_decode_refuses_bad_input(bad, needle):
    page = 128
    lens = bad.get("lens", [200, 5])
    kp = torch.zeros(bad.get("pool", (1, 2, 8 * page, 16)))
    bt = torch.tensor([[0, 1], [2, 3]])
    if bad.get("shared"):
        bt = torch.tensor([[0, 1], [1, 3]])
    with pytest.raises(ValueError, match=None) as e:
        FlexPagedDecode(kp, kp, bt, lens, page=page, compiled=False)
    assert needle in str(e.value)


@pytest.mark.gpu
@pytest.mark.parametrize("hq,hk,d", [(32, 8, 128), (9, 3, 64)])
def test_flex_paged_decode_compiled_gpu(hq, hk, d):
    page = 128
    lens = [4096, 300, 1, 2048 + 77]
    q, kp, vp, bt = _case(lens, hq, hk, d, page, torch.bfloat16, "cuda")
    out = FlexPagedDecode(kp, vp, bt, lens, page=page, compiled=True)(q)
    ref = _oracle(q, kp, vp, bt, lens, page)
    assert (out.double() - ref).abs().max().item() < 3e-2
