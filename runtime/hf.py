"""HF transformers integration: a ``Cache`` whose K/V live in tqgen's paged packed format.

    from tqgen_runtime.hf import TurboQuantCache
    cache = TurboQuantCache(model, preset="4bit_nc", layout="soa")   # also routes attention through tqgen
    out = model.generate(**inputs, past_key_values=cache, max_new_tokens=64)   # transformers >= 5.2x: cache=cache

Each attention layer owns a paged tqgen cache (``tqgen_runtime.load`` on the model's device: the
Triton kernels on a GPU, the reference or the interpreter on the CPU). ``update`` takes in the new
post-RoPE K/V; the registered attention function stores them through ``kv.store`` and attends through
the runtime: the first chunk of a sequence on its raw K/V (cast to bf16, the kernels' dtype), later
chunks and every generated token through ``kv.prefill(..., stored=True)`` — the decode kernel for a few
tokens, dequant + SDPA for long chunks — so each token attends the stored (quantised) K/V of every
token before it and of itself. That is the function ``tqgen eval`` computes: teacher-forced through
this cache, the logits equal the eval path's with the same chunking (tests/test_hf.py).
Boundary layers (``boundary_skip_layers`` of the model config) keep a plain bf16/fp32 cache.

Batches: one cache holds a batch of sequences, one row each, with its own block table and its own
length in the paged cache. Padding is **not stored**: a batch of prompts of different lengths must be
left-padded (``tokenizer.padding_side = "left"``, as HF recommends for decoder-only generation) and
come with its ``attention_mask``; each row's pad tokens are dropped (the attention function reads which
new tokens are real from the 4D mask transformers builds out of the attention_mask) and its real tokens
occupy slots 0, 1, ... of its own pages, so a row is stored and attended exactly as the same prompt
alone (batch 1) would be, with the same per-row kernel calls (tests/test_hf.py: same greedy tokens).
The outputs at pad positions are zeros (nothing attends them). ``get_seq_length`` is the padded
length (what transformers counts); ``seq_lens()`` holds the rows' real lengths. Refused with a
ValueError that names what was given: right padding or padding between real tokens, a batch size
other than the cache's, beam search (``reorder_cache``) and re-batching a filled cache
(``batch_repeat_interleave`` / ``batch_select_indices``). The batch size is fixed by the first call;
``reset()`` frees the cache for another.

The registered attention acts only on a layer whose K/V a ``TurboQuantCache`` has just taken in
(``update`` hands the layer over, the attention consumes it); any other call — the model run later
with its default ``DynamicCache``, or with ``use_cache=False`` — is plain SDPA with the usual masks,
so constructing a ``TurboQuantCache`` never changes what the model computes without one.
"""

from __future__ import annotations

import math

import torch
from transformers import AttentionInterface
from transformers.cache_utils import Cache, CacheLayerMixin
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

from .api import _attention as attend
from .api import load
from .engine import boundary_skip_layers, from_hf_config

ATTN_NAME = "tqgen_cache"
# id(model config) -> the layer whose new K/V a TurboQuantCache just took in and whose attention is next.
# Consumed by that attention call; a call with nothing pending is not ours (another cache, or none).
_PENDING: dict[int, "TurboQuantLayer"] = {}

_LEFT_PADDING_HINT = ("Pad on the left: tokenizer.padding_side = 'left' before tokenizing the batch (HF's setting for "
                      "decoder-only generation), and pass its attention_mask; or generate each sequence alone.")


class TurboQuantLayer(CacheLayerMixin):
    """One attention layer: paged packed K/V, one block table per batch row (or raw K/V for a boundary layer)."""

    is_sliding = False

    def __init__(self, owner: "TurboQuantCache", layer_idx: int, quantize: bool):
        super().__init__()
        self.owner, self.layer_idx, self.quantize = owner, layer_idx, quantize
        self.kv = None
        self.paged = None
        self._clear()

    def _clear(self) -> None:
        self.length = 0  # token columns taken in, pads included (transformers' view of the sequence length)
        self.batch: int | None = None
        self.lengths: list[int] = []  # real (non-pad) tokens stored per row
        self.tables: list[list[int]] = []  # per row: the page indices it owns, in order
        self.blocks_used = 0
        self.new_tokens = 0
        self.new_kv = None  # the K/V of the last update, stored by the attention (which knows the padding)

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        self.dtype = key_states.dtype
        if self.quantize:
            o = self.owner
            self.kv = load(o.preset, layout=o.layout, head_dim=key_states.shape[-1],
                           num_kv_heads=key_states.shape[1], num_q_heads=o.num_q_heads, block_size=o.block_size,
                           dtype=torch.bfloat16, device=key_states.device, **o.overrides)
            self.paged = self.kv.allocate(key_states.shape[0])  # a page per row to start; doubles as rows grow
        else:
            self.keys = key_states[:, :, :0]
            self.values = value_states[:, :, :0]
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        b = key_states.shape[0]
        if self.batch is None:
            self.batch = b
            self.lengths = [0] * b
            self.tables = [[] for _ in range(b)]
        elif b != self.batch:
            raise ValueError(f"TurboQuantCache holds a batch of {self.batch} sequences; got a batch of {b}. "
                             "The batch size is fixed by the first call: use one cache per batch (a new "
                             "TurboQuantCache, or cache.reset() to empty this one).")
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        t = key_states.shape[2]
        self.new_tokens = t
        self.length += t
        _PENDING[self.owner.key] = self
        if not self.quantize:  # raw, pads included: the attention reads each row's real (last) columns
            self.keys = torch.cat([self.keys, key_states], dim=2)
            self.values = torch.cat([self.values, value_states], dim=2)
            return self.keys, self.values
        self.new_kv = (key_states, value_states)
        return key_states, value_states  # the attention stores them and reads the history from the pages

    # ------------------------------------------------------------------ pages
    def _slots(self, row: int, start: int, n: int) -> torch.Tensor:
        """Slots of tokens start..start+n-1 of ``row``, taking new pages from the pool as needed."""
        bs = self.kv.spec.block_size
        table = self.tables[row]
        need = math.ceil((start + n) / bs) - len(table)
        if need > 0:
            have = self.paged.shape[0]
            if self.blocks_used + need > have:
                bigger = self.kv.allocate(max(self.blocks_used + need, 2 * have))
                bigger[:have] = self.paged
                self.paged = bigger
            table += range(self.blocks_used, self.blocks_used + need)
            self.blocks_used += need
        pos = torch.arange(start, start + n)
        page = torch.tensor(table, dtype=torch.int64)[pos // bs]
        return (page * bs + pos % bs).to(device=self.device, dtype=torch.int32)

    def block_table(self, rows: list[int] | None = None) -> torch.Tensor:
        """int32 [B, max pages]: each row's pages (unused entries 0; seq_lens bounds what is read)."""
        rows = range(len(self.tables)) if rows is None else rows
        width = max([len(self.tables[r]) for r in rows] + [1])
        bt = torch.zeros(len(rows), width, dtype=torch.int32)
        for i, r in enumerate(rows):
            bt[i, :len(self.tables[r])] = torch.tensor(self.tables[r], dtype=torch.int32)
        return bt.to(self.device)

    def seq_lens(self) -> torch.Tensor:
        """int32 [B]: the real (stored) tokens of each row."""
        return torch.tensor(self.lengths, dtype=torch.int32, device=self.device)

    # ------------------------------------------------------------------ transformers' Cache API
    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.length + query_length, 0

    def get_seq_length(self) -> int:
        return self.length

    def get_max_length(self) -> int:
        return -1

    def reset(self) -> None:
        if self.paged is not None:
            self.paged.zero_()
        if not self.quantize:  # raw K/V are re-created (the next batch may have another size)
            self.keys = self.values = None
            self.is_initialized = False
        self._clear()

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError("TurboQuantCache cannot crop: packed slots are not rewound (no assisted decoding)")

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        raise ValueError(f"TurboQuantCache got a beam reorder (beam_idx {beam_idx.tolist()}); beam search is not "
                         "supported (rows own their pages, nothing is copied between them). Use num_beams=1 "
                         "(greedy or sampling).")

    def _refuse_batch_change(self, what: str) -> None:
        if self.length:
            raise ValueError(f"TurboQuantCache got {what} after {self.length} tokens; only an empty cache can "
                             "change its batch. Expand the inputs before the first call (or use a new cache).")
        self.batch = None

    def batch_repeat_interleave(self, repeats: int) -> None:
        self._refuse_batch_change(f"batch_repeat_interleave({repeats})")

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._refuse_batch_change(f"batch_select_indices({indices.tolist()})")


class TurboQuantCache(Cache):
    """A transformers ``Cache`` holding K/V in tqgen's paged packed format (see module docstring)."""

    def __init__(self, model, preset: str = "4bit_nc", layout: str = "soa", *, block_size: int = 16,
                 skip_layers: list[int] | None = None, **overrides):
        config = model.config
        self.preset, self.layout, self.block_size, self.overrides = preset, layout, block_size, overrides
        self.num_q_heads = config.num_attention_heads
        hf = from_hf_config(config)
        n = hf["num_layers"]
        self.skip = set(boundary_skip_layers(**hf) if skip_layers is None else skip_layers)
        self.key = id(config)
        self._valid = None  # (4D mask, padded length, per-row real-token mask): one decision per forward
        super().__init__(layers=[TurboQuantLayer(self, i, i not in self.skip) for i in range(n)])
        AttentionInterface.register(ATTN_NAME, tqgen_attention)
        # masks as for SDPA: ours reads only which new tokens are real; the fallback path (calls without a
        # TurboQuantCache) uses them as SDPA does
        ALL_MASK_ATTENTION_FUNCTIONS.register(ATTN_NAME, sdpa_mask)
        model.set_attn_implementation(ATTN_NAME)

    def new_token_rows(self, layer: TurboQuantLayer, attention_mask, b: int, t: int) -> list[int]:
        """How many of the ``t`` new tokens of each row are real, from the 4D mask (None: all); checks that
        the padding is on the left (pads only before a row's first real token)."""
        cached = self._valid
        if cached is not None and cached[0] is attention_mask and cached[1] == layer.length:
            real = cached[2]
        else:
            real = _real_new_tokens(attention_mask, b, t, layer.length)
            self._valid = (attention_mask, layer.length, real)
        counts = []
        for row, flags in enumerate(real):
            n = sum(flags)
            left = all(flags[t - n:])  # real tokens form a suffix of the chunk
            if not left or (n < t and layer.lengths[row] > 0):
                where = ("after its first real token" if layer.lengths[row] > 0 and left
                         else "between or after real tokens")
                raise ValueError(f"TurboQuantCache: batch row {row} has pad tokens {where} (its attention_mask for "
                                 f"the {t} new tokens: {[int(f) for f in flags]}, after {layer.lengths[row]} real "
                                 "tokens); only left padding is supported (pads before a row's first token). "
                                 + _LEFT_PADDING_HINT)
            counts.append(n)
        return counts


def _real_new_tokens(attention_mask, b: int, t: int, total: int) -> list[list[bool]]:
    """Per row, whether each of the last ``t`` of ``total`` key columns is a real token: a real token
    attends itself (the diagonal of transformers' causal ∧ padding mask), a pad attends nothing."""
    if attention_mask is None:
        return [[True] * t for _ in range(b)]
    m = attention_mask
    if m.dim() != 4 or m.shape[0] not in (1, b) or m.shape[2] != t or m.shape[3] != total:
        raise ValueError(f"TurboQuantCache: got an attention mask of shape {tuple(m.shape)}; expected the 4D "
                         f"mask transformers builds, [{b}, 1, {t}, {total}] (batch, 1, new tokens, cached + new "
                         "tokens). Pass a 2D attention_mask [batch, tokens] (left padding) and let the model build it.")
    i = torch.arange(t, device=m.device)
    diag = m[:, 0, i, total - t + i]
    real = diag if diag.dtype == torch.bool else diag == 0  # an additive float mask: 0 where attended
    return real.expand(b, t).tolist()


def tqgen_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """Attention for layers of a TurboQuantCache (registered as ``tqgen_cache``); plain SDPA otherwise."""
    layer = _PENDING.pop(id(module.config), None)
    if layer is None or layer.layer_idx != module.layer_idx or layer.new_tokens != query.shape[2]:
        # not a TurboQuantCache forward (e.g. the model run again with its own DynamicCache): earlier
        # versions attended a stale cache here and generated garbage
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    b, hq, t, d = query.shape
    counts = layer.owner.new_token_rows(layer, attention_mask, b, t)
    out = query.new_zeros(b, t, hq, d)  # pad positions: zeros (no real token attends them)
    bf = torch.bfloat16

    def rows(x, r, n):  # row r's real new tokens, [n, H, D]
        return x[r, :, t - n:].transpose(0, 1)

    if not layer.quantize:  # raw K/V; row r's real tokens are its last lengths[r] + n columns
        for r, n in enumerate(counts):
            if n:
                total = layer.lengths[r] + n
                k = key[r, :, key.shape[2] - total:].transpose(0, 1)
                v = value[r, :, value.shape[2] - total:].transpose(0, 1)
                out[r, t - n:] = attend(rows(query, r, n).contiguous(), k, v, layer.lengths[r], scaling, None, None)
                layer.lengths[r] = total
        return out, None
    kv = layer.kv
    new_k, new_v = layer.new_kv
    layer.new_kv = None
    hist = []  # rows that continue a sequence: attend through the paged cache
    for r, n in enumerate(counts):  # store each row's real tokens (per row: the same calls as batch 1)
        if not n:
            continue
        k, v = rows(new_k, r, n).to(bf).contiguous(), rows(new_v, r, n).to(bf).contiguous()
        slots = layer._slots(r, layer.lengths[r], n)  # may grow layer.paged: before reading it
        kv.store(k, v, layer.paged, slots)
        q = rows(query, r, n).contiguous()
        if layer.lengths[r] == 0:  # first chunk: raw K/V in the kernels' dtype, as the runtime's prefill does
            out[r, t - n:] = attend(q.to(bf), k, v, 0, scaling, None, None).to(query.dtype)
        else:
            hist.append((r, n, q))
        layer.lengths[r] += n
    if hist:
        rs = [r for r, _, _ in hist]
        qsl = [0]
        for _, n, _ in hist:
            qsl.append(qsl[-1] + n)
        # lengths and boundaries as host tensors (the prefill reads nothing back); the tables are this cache's own
        o = kv.prefill(torch.cat([q for _, _, q in hist]).to(bf), None, None, layer.paged, None, layer.block_table(rs),
                       torch.tensor([layer.lengths[r] for r in rs], dtype=torch.int32),
                       torch.tensor(qsl, dtype=torch.int32), scale=scaling, stored=True, check=False)
        for (r, n, _), a in zip(hist, qsl):
            out[r, t - n:] = o[a:a + n].to(query.dtype)
    return out, None
