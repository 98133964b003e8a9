"""Unquantised baselines the benchmark compares against: a bf16 *paged* decode built on torch alone.

Issue 6 asks for every decode row's speed-up over a bf16 paged decode "if one is available". flash-attn's
``flash_attn_with_kvcache`` is used where it is installed (``tqgen.bench``); without it, torch's FlexAttention
gives one: ``flex_attention`` over a page pool ``[1, Hk, n_pages * page, D]`` with a ``BlockMask`` whose KV
block indices are each sequence's pages (a block table), compiled by torch into its flex-decoding Triton kernel
(split-KV, the GQA group in the tile's rows; a group that is not a power of two, as GQA 3, is padded with zero
query rows, whose outputs are dropped: flex-decoding refuses other groups and torch would fall back to its
prefill kernel). Pages wholly inside a sequence are "full" blocks (no mask
evaluated); only a sequence's last, partial page runs the mask.

The mask function must say exactly which keys a query sees (eager FlexAttention, as on the CPU, evaluates it on
every position and ignores the block sparsity): a key slot is visible to sequence ``b`` when its page belongs
to ``b`` and its logical position is below ``b``'s length.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch.nn.functional as F

#: page size of the flex baseline (FlexAttention's default sparse block size; its decode kernel walks a
#: block in sub-tiles, so a page must be a multiple of them)
FLEX_PAGE = 128


def flex_available() -> str | None:
    """None when FlexAttention can be imported, else why not."""
    try:
        from torch.nn.attention.flex_attention import BlockMask, flex_attention  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return f"torch.nn.attention.flex_attention not importable ({type(e).__name__}: {e})"
    return None


class FlexPagedDecode:
    """A bf16 paged decode: ``self(q)`` with q ``[B, Hq, D]`` attends each sequence's first ``seq_lens[b]``
    tokens in the page pool ``k_pool`` / ``v_pool`` ``[1, Hk, n_pages * page, D]``, its pages listed in
    ``block_table[b]`` (logical page j of sequence b is physical page ``block_table[b, j]``). Returns
    ``[B, Hq, D]``. ``compiled=True`` runs ``torch.compile(flex_attention)`` (a GPU's Triton kernel);
    ``False`` the eager reference (CPU tests)."""

    def __init__(self, k_pool, v_pool, block_table, seq_lens: Sequence[int], *, page: int = FLEX_PAGE,
                 compiled: bool = True, scale: float | None = None, split_kv: int | None = None):
        import torch
        from torch.nn.attention.flex_attention import BlockMask

        if k_pool.dim() != 4 or k_pool.shape[0] != 1 or k_pool.shape != v_pool.shape:
            raise ValueError(f"FlexPagedDecode: k_pool / v_pool must both be [1, Hk, n_pages * page, D]; got "
                             f"{tuple(k_pool.shape)} and {tuple(v_pool.shape)}")
        slots = k_pool.shape[2]
        if slots % page:
            raise ValueError(f"FlexPagedDecode: the pool's {slots} slots are not whole pages of {page}")
        n_pages = slots // page
        lens = [int(x) for x in seq_lens]
        b = len(lens)
        if block_table.dim() != 2 or block_table.shape[0] != b:
            raise ValueError(f"FlexPagedDecode: block_table must be [B={b}, pages a sequence]; got "
                             f"{tuple(block_table.shape)}")
        width = block_table.shape[1]
        if any(x < 1 or x > width * page for x in lens):
            raise ValueError(f"FlexPagedDecode: every length must be in 1..{width * page} (block table of "
                             f"{width} pages of {page}); got {lens}")
        dev = k_pool.device
        bt = block_table.to(device="cpu", dtype=torch.int64)
        if bt.numel() and (int(bt.min()) < 0 or int(bt.max()) >= n_pages):
            raise ValueError(f"FlexPagedDecode: block_table entries must be pages 0..{n_pages - 1}")
        # which sequence owns a page and which of its pages it is (-1: nobody's)
        owner = torch.full((n_pages,), -1, dtype=torch.int64)
        logical = torch.zeros(n_pages, dtype=torch.int64)
        full_n = torch.zeros(b, 1, 1, dtype=torch.int32)
        part_n = torch.zeros(b, 1, 1, dtype=torch.int32)
        full_i = torch.zeros(b, 1, 1, n_pages, dtype=torch.int32)
        part_i = torch.zeros(b, 1, 1, n_pages, dtype=torch.int32)
        for s, n in enumerate(lens):
            used = -(-n // page)
            pages = bt[s, :used]
            if int((owner[pages] >= 0).sum()) or len(set(pages.tolist())) != used:
                raise ValueError(f"FlexPagedDecode: sequence {s}'s pages {pages.tolist()} are shared with "
                                 f"another sequence or repeated")
            owner[pages] = s
            logical[pages] = torch.arange(used)
            whole = n // page
            full_n[s] = whole
            full_i[s, 0, 0, :whole] = pages[:whole].to(torch.int32)
            if n % page:
                part_n[s] = 1
                part_i[s, 0, 0, 0] = int(pages[whole])
        owner, logical = owner.to(dev), logical.to(dev)
        lens_t = torch.tensor(lens, dtype=torch.int64, device=dev)

        def mask_mod(bi, h, q_idx, kv_idx):
            p = kv_idx // page
            return (owner[p] == bi) & (logical[p] * page + kv_idx % page < lens_t[bi])

        self.block_mask = BlockMask.from_kv_blocks(
            part_n.to(dev), part_i.to(dev), full_n.to(dev), full_i.to(dev),
            BLOCK_SIZE=(page, page), mask_mod=mask_mod, seq_lengths=(1, slots))
        self.k_pool, self.v_pool = k_pool, v_pool
        self.scale = scale
        # flex-decoding's own split count: 2 programs an SM over B * Hk (get_split_k), i.e. one split a KV
        # head at B * Hk >= 66 on 132 SMs; ``split_kv`` overrides it (a torch kernel option)
        self.kernel_options = {"SPLIT_KV": int(split_kv)} if split_kv else None
        self.fn = _compiled_flex() if compiled else _eager_flex()

    def __call__(self, q) -> Any:
        b, hq, d = q.shape
        hk = self.k_pool.shape[1]
        if hq % hk:
            raise ValueError(f"FlexPagedDecode: {hq} query heads are not a multiple of the pool's {hk} KV heads")
        g = hq // hk
        g2 = 1 << (g - 1).bit_length()  # flex-decoding packs a power-of-two group: pad the group with zero rows
        if g2 != g:
            q = F.pad(q.view(b, hk, g, d), (0, 0, 0, g2 - g)).view(b, hk * g2, d)
        with _compile_limits():
            out = self.fn(q.unsqueeze(2), self.k_pool, self.v_pool, block_mask=self.block_mask,
                          scale=self.scale if self.scale is not None else d ** -0.5, enable_gqa=g2 != 1,
                          **({"kernel_options": self.kernel_options} if self.kernel_options else {})).squeeze(2)
        if g2 != g:
            out = out.view(b, hk, g2, d)[:, :, :g].reshape(b, hq, d)
        return out


def gather_pages(pool, pages, n: int, page: int = FLEX_PAGE):
    """The first ``n`` token slots of a sequence whose pages (in order) are ``pages``, out of a pool
    ``[1, Hk, n_pages * page, D]``: ``[1, Hk, n, D]`` contiguous (the baseline's oracle, and the bench's check)."""
    import torch
    idx = (pages.long().view(-1, 1) * page + torch.arange(page, device=pool.device)).reshape(-1)[:n]
    return pool[:, :, idx]


_COMPILED: list = []
#: compiled flex entries one process may hold (one a shape and option set: a benchmark sweeps many)
RECOMPILE_LIMIT = 256


def _compile_limits():
    """Dynamo's recompile limit (8 by default) raised for these calls, and an error instead of its silent
    fallback to eager flex_attention once hit (which materialises every score: hundreds of GiB at the
    benchmark's shapes, and no longer the kernel being measured)."""
    import contextlib

    import torch
    cfg = torch._dynamo.config
    keys = {k: v for k, v in (("recompile_limit", RECOMPILE_LIMIT), ("cache_size_limit", RECOMPILE_LIMIT),
                              ("fail_on_recompile_limit_hit", True)) if hasattr(cfg, k)}
    return cfg.patch(**keys) if keys else contextlib.nullcontext()


def _compiled_flex():
    if not _COMPILED:
        import torch
        from torch.nn.attention.flex_attention import flex_attention
        _COMPILED.append(torch.compile(flex_attention, dynamic=False))
    return _COMPILED[0]


def _eager_flex():
    from torch.nn.attention.flex_attention import flex_attention
    return flex_attention
