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
alone (batch 1) would be (tests/test_hf.py: same greedy tokens, same pages).
The outputs at pad positions are zeros (nothing attends them). ``get_seq_length`` is the padded
length (what transformers counts); ``seq_lens()`` holds the rows' real lengths. Refused with a
ValueError that names what was given: right padding or padding between real tokens, a batch size
other than the cache's, beam search (``reorder_cache``) and re-batching a filled cache
(``batch_repeat_interleave`` / ``batch_select_indices``). The batch size is fixed by the first call;
``reset()`` frees the cache for another.

Host cost: the quantised layers share one page table (they take in the same tokens, so their slots are
the same, each layer in its own pool of pages) and one runtime; the first quantised layer of a forward
plans the step (real tokens, slots, block table, lengths) and copies its index tensors to the device in
one transfer; each layer then makes one store call for the whole batch and, in a generation step (one
token a row), one decode call; longer continuation chunks go through ``prefill`` with host lengths. No
device value is read back but the 4D mask's diagonal, once a forward
(bench/results/h200-2026-12-04-hf-host.md).

Attention options the model passes: ``sliding_window`` (Mistral, Qwen2, Gemma 3, gpt-oss's sliding
layers: the keys a query attends, itself included) and ``s_aux`` (gpt-oss's attention sinks, a logit a
query head) go to the kernels (variants without them are passed over); logit soft-capping (Gemma 2) and
attention dropout (training) are refused with a ValueError: the kernels cannot compute them, and the
scores would silently be wrong.

The registered attention acts only on a layer whose K/V a ``TurboQuantCache`` has just taken in
(``update`` hands the layer over, the attention consumes it); any other call — the model run later
with its default ``DynamicCache``, or with ``use_cache=False`` — runs the model's own attention (its eager
function where it ran eager attention before, SDPA otherwise) with the usual masks, so constructing a
``TurboQuantCache`` never changes what the model computes without one.
"""

from __future__ import annotations

import sys

import torch
from transformers import AttentionInterface
from transformers.cache_utils import Cache, CacheLayerMixin
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

from .api import _attention as attend
from .api import attend_first_chunks
from .api import load
from .engine import boundary_skip_layers, from_hf_config

ATTN_NAME = "tqgen_cache"
# id(model config) -> the layer whose new K/V a TurboQuantCache just took in and whose attention is next.
# Consumed by that attention call; a call with nothing pending is not ours (another cache, or none).
_PENDING: dict[int, "TurboQuantLayer"] = {}
# id(model config) -> the attention implementation the model had before its first TurboQuantCache ("eager" or
# "sdpa"): what a call that is not ours runs (gpt-oss's sinks, say, need its eager attention)
_FALLBACK: dict[int, str] = {}

_LEFT_PADDING_HINT = ("Pad on the left: tokenizer.padding_side = 'left' before tokenizing the batch (HF's setting for "
                      "decoder-only generation), and pass its attention_mask; or generate each sequence alone.")


class _Step:
    """One forward's new tokens, planned once for every quantised layer (they store the same tokens in the same slots,
    each layer in its own pool of pages). Index tensors are on the device, made by one host-to-device copy."""

    def __init__(self, pages: "_Pages", counts: list[int], t: int, device):
        before = list(pages.lengths)
        bs = pages.block_size
        slots: list[int] = []
        for r, n in enumerate(counts):
            start = before[r]
            table = pages.tables[r]
            need = -(-(start + n) // bs) - len(table)
            if need > 0:
                table += range(pages.blocks_used, pages.blocks_used + need)
                pages.blocks_used += need
            slots += [table[p // bs] * bs + p % bs for p in range(start, start + n)]
            pages.lengths[r] = start + n
        self.blocks = pages.blocks_used  # pages a layer's pool must have for this step
        real = [(r, n) for r, n in enumerate(counts) if n]
        # the real tokens in row order: their positions among the b * t new ones (None: every token is real)
        self.all_real = all(n == t for n in counts)
        take = [] if self.all_real else [r * t + j for r, n in real for j in range(t - n, t)]
        self.fresh: list[tuple[int, int, int]] = []  # (row, first real token, new tokens): no history, raw K/V
        hist: list[tuple[int, int, int]] = []  # the same for rows that continue a sequence
        a = 0
        for r, n in real:
            (hist if before[r] else self.fresh).append((r, a, n))
            a += n
        self.hist_rows = [r for r, _, _ in hist]
        # hist tokens among the real ones (None: all of them); their positions among the b * t (None: the same)
        self.hist_all = len(hist) == len(real)
        hsel = [] if self.hist_all else [a + j for _, a, n in hist for j in range(n)]
        hpos = [] if self.all_real and self.hist_all else [r * t + j for r, _, n in hist for j in range(t - n, t)]
        self.lens_host = torch.tensor([pages.lengths[r] for r in self.hist_rows], dtype=torch.int32)
        qsl = [0]
        for _, _, n in hist:
            qsl.append(qsl[-1] + n)
        self.qsl_host = torch.tensor(qsl, dtype=torch.int32)
        self.one_each = all(n == 1 for _, _, n in hist)  # a generation step: one decode call
        width, table = pages.padded(self.hist_rows)
        parts = [slots, take, hsel, hpos, table, self.lens_host.tolist()]
        flat = torch.tensor([x for p in parts for x in p], dtype=torch.int32).to(device, non_blocking=True)
        views, o = [], 0
        for p in parts:
            views.append(flat[o:o + len(p)])
            o += len(p)
        self.slots, take_d, hsel_d, hpos_d, table_d, self.lens = views
        self.take = None if self.all_real else take_d
        self.hsel = None if self.hist_all else hsel_d
        self.hpos = None if self.all_real and self.hist_all else hpos_d
        self.block_table = table_d.view(len(hist), width)


class _Pages:
    """The page tables of a TurboQuantCache's quantised layers, one set for all of them: every quantised layer takes
    in the same tokens, so its slots are the same (in its own pool of pages). Rows own their pages; a row's real
    tokens fill slots 0, 1, ... of them."""

    def __init__(self, block_size: int):
        self.block_size = block_size
        self.clear()

    def clear(self) -> None:
        self.tables: list[list[int]] = []  # per row: the page indices it owns, in order
        self.lengths: list[int] = []  # real (non-pad) tokens stored per row
        self.blocks_used = 0
        self.step: tuple | None = None  # (key, _Step) of the last forward

    def rows(self, b: int) -> None:
        """A batch of ``b`` rows (the first call after a clear)."""
        if not self.tables:
            self.tables = [[] for _ in range(b)]
            self.lengths = [0] * b

    def plan(self, key, counts: list[int], t: int, device) -> _Step:
        if self.step is None or self.step[0] != key:
            self.step = (key, _Step(self, counts, t, device))
        return self.step[1]

    def padded(self, rows) -> tuple[int, list[int]]:
        """(width, the rows' tables as one row-major list, each padded with zeros to the widest)."""
        width = max([len(self.tables[r]) for r in rows] + [1])
        flat = [0] * (len(rows) * width)
        for i, r in enumerate(rows):
            flat[i * width:i * width + len(self.tables[r])] = self.tables[r]
        return width, flat

    def block_table(self, rows, device) -> torch.Tensor:
        width, flat = self.padded(rows)
        return torch.tensor(flat, dtype=torch.int32).view(len(rows), width).to(device)


class TurboQuantLayer(CacheLayerMixin):
    """One attention layer: paged packed K/V (its own pool of pages; the page tables are the cache's, shared by its
    quantised layers) or raw K/V for a boundary layer."""

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
        self.raw_lengths: list[int] = []  # a boundary layer's real tokens per row
        self.new_tokens = 0
        self.new_kv = None  # the K/V of the last update, stored by the attention (which knows the padding)

    @property
    def lengths(self) -> list[int]:
        """Real (non-pad) tokens taken in per row."""
        return self.owner.pages.lengths if self.quantize else self.raw_lengths

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        self.dtype = key_states.dtype
        if not self.quantize:  # a quantised layer's runtime and pool come with its first attention call
            self.keys = key_states[:, :, :0]
            self.values = value_states[:, :, :0]
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        b = key_states.shape[0]
        if self.batch is None:
            self.batch = b
            self.raw_lengths = [0] * b
            if self.quantize:
                self.owner.pages.rows(b)
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
    def pool(self, blocks: int) -> torch.Tensor:
        """This layer's pages, grown (doubling) to hold at least ``blocks`` (made on first use)."""
        if self.paged is None:
            self.paged = self.kv.allocate(blocks)
        have = self.paged.shape[0]
        if blocks > have:
            bigger = self.kv.allocate(max(blocks, 2 * have))
            bigger[:have] = self.paged
            self.paged = bigger
        return self.paged

    def block_table(self, rows: list[int] | None = None) -> torch.Tensor:
        """int32 [B, max pages]: each row's pages (unused entries 0; seq_lens bounds what is read)."""
        pages = self.owner.pages
        return pages.block_table(range(len(pages.tables)) if rows is None else rows, self.device)

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
        if self.quantize:
            self.owner.pages.clear()
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
        self.pages = _Pages(block_size)  # the quantised layers' page tables (one set: they store the same tokens)
        self._runtimes: dict = {}  # (head_dim, kv heads, device, flags) -> the loaded runtime, shared by the layers
        self._valid = None  # (4D mask, padded length, per-row real-token mask): one decision per forward
        super().__init__(layers=[TurboQuantLayer(self, i, i not in self.skip) for i in range(n)])
        AttentionInterface.register(ATTN_NAME, tqgen_attention)
        # masks as for SDPA: ours reads only which new tokens are real; the fallback path (calls without a
        # TurboQuantCache) uses them as SDPA does
        ALL_MASK_ATTENTION_FUNCTIONS.register(ATTN_NAME, sdpa_mask)
        if config._attn_implementation != ATTN_NAME:
            _FALLBACK[id(config)] = config._attn_implementation
        model.set_attn_implementation(ATTN_NAME)

    def runtime(self, head_dim: int, num_kv_heads: int, device, sinks: bool = False, sliding_window: bool = False):
        """The tqgen runtime for layers of this shape (loaded once, shared by every quantised layer of the cache);
        ``sinks`` / ``sliding_window``: whether its calls use them (variants without them are passed over). Every such
        runtime has the same page format: a layer's pool serves any of them."""
        key = (head_dim, num_kv_heads, str(device), sinks, sliding_window)
        if key not in self._runtimes:
            self._runtimes[key] = load(self.preset, layout=self.layout, head_dim=head_dim, num_kv_heads=num_kv_heads,
                                       num_q_heads=self.num_q_heads, block_size=self.block_size, dtype=torch.bfloat16,
                                       device=device, sinks=sinks, sliding_window=sliding_window, **self.overrides)
        return self._runtimes[key]

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
        return _fallback(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)
    b, hq, t, d = query.shape
    window, sinks = _attention_options(module, dropout, hq, kwargs)
    if not layer.quantize:  # raw K/V; row r's real tokens are its last lengths[r] + n columns
        out = query.new_zeros(b, t, hq, d)  # pad positions: zeros (no real token attends them)
        for r, n in enumerate(layer.owner.new_token_rows(layer, attention_mask, b, t)):
            if n:
                total = layer.lengths[r] + n
                k = key[r, :, key.shape[2] - total:].transpose(0, 1)
                v = value[r, :, value.shape[2] - total:].transpose(0, 1)
                q = query[r, :, t - n:].transpose(0, 1).contiguous()
                out[r, t - n:] = attend(q, k, v, layer.lengths[r], scaling, sinks, window)
                layer.lengths[r] = total
        return out, None
    new_k, new_v = layer.new_kv
    layer.new_kv = None
    pages = layer.owner.pages
    step_key = (layer.length, t)  # the same for every layer of one forward
    step = pages.step[1] if pages.step is not None and pages.step[0] == step_key else None
    if step is None:  # the forward's first quantised layer: check the padding, plan the slots and tables
        step = pages.plan(step_key, layer.owner.new_token_rows(layer, attention_mask, b, t), t, query.device)
    # the cache's runtime for this shape (variants that take sinks / a window where the model uses them)
    layer.kv = layer.owner.runtime(d, new_k.shape[1], query.device, sinks is not None, window is not None)
    return _attend_stored(layer, step, query, new_k, new_v, scaling, sinks, window)


def _fallback(module, query, key, value, attention_mask, **kwargs):
    """The model's own attention for a call that is not a TurboQuantCache's: its eager function where the model ran
    eager attention before (the masks are SDPA's boolean ones: made additive for it), SDPA otherwise."""
    if _FALLBACK.get(id(module.config)) == "eager":
        eager = getattr(sys.modules.get(type(module).__module__), "eager_attention_forward", None)
        if eager is not None:
            if attention_mask is not None and attention_mask.dtype == torch.bool:
                attention_mask = torch.zeros(attention_mask.shape, dtype=query.dtype, device=query.device).masked_fill(
                    ~attention_mask, torch.finfo(query.dtype).min)
            return eager(module, query, key, value, attention_mask, **kwargs)
    return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)


def _attention_options(module, dropout, hq: int, kwargs) -> tuple[int | None, torch.Tensor | None]:
    """(sliding window, sinks) of this attention call, from what the model passes (Mistral / Qwen2 / Gemma 3 /
    gpt-oss: ``sliding_window``; gpt-oss: ``s_aux``, a sink logit a query head); refuses what the kernels cannot do."""
    name = type(module).__name__
    if kwargs.get("softcap"):
        raise ValueError(f"TurboQuantCache: {name} asks for attention logit soft-capping (softcap="
                         f"{kwargs['softcap']}, Gemma 2); tqgen's kernels compute plain softmax attention, so its "
                         "scores would be wrong. Use the model's own cache for this model.")
    if dropout:
        raise ValueError(f"TurboQuantCache: {name} asks for attention dropout {dropout} (training mode); the cache is "
                         "for inference: call model.eval() first.")
    window = kwargs.get("sliding_window")
    if window is not None and (not isinstance(window, int) or window < 1):
        raise ValueError(f"TurboQuantCache: {name} passed sliding_window={window!r}; expected None or a positive int "
                         "(the keys a query attends, itself included).")
    sinks = kwargs.get("s_aux")
    if sinks is not None:
        sinks = sinks.detach().float().reshape(-1)
        if sinks.numel() != hq:
            raise ValueError(f"TurboQuantCache: {name} passed s_aux (attention sinks) of shape {tuple(kwargs['s_aux'].shape)}; "
                             f"expected one sink logit a query head ({hq}).")
    return window, sinks


def _tokens(x: torch.Tensor, step: _Step) -> torch.Tensor:
    """[B, H, T, D] -> the real tokens in row order, [N, H, D] in bf16 (one copy)."""
    b, h, t, d = x.shape
    x = x.transpose(1, 2)
    if step.take is None:
        return x.to(torch.bfloat16, memory_format=torch.contiguous_format).view(b * t, h, d)
    return x.reshape(b * t, h, d).index_select(0, step.take).to(torch.bfloat16)


def _attend_stored(layer: TurboQuantLayer, step: _Step, query, new_k, new_v, scaling, sinks, window):
    """A quantised layer's forward: store the real new tokens (one call), attend the first chunks on their raw K/V
    and every continuation through the paged cache (one decode call for a generation step, one prefill call
    otherwise)."""
    kv = layer.kv
    b, hq, t, d = query.shape
    k, v = _tokens(new_k, step), _tokens(new_v, step)
    paged = layer.pool(step.blocks)
    kv.store(k, v, paged, step.slots, check=False)  # slots from this cache's own tables
    q = _tokens(query, step)
    flat = None if step.all_real and step.hist_all else query.new_zeros(b * t, hq, d)  # pads: zeros
    # first chunks: raw K/V in the kernels' dtype, as the runtime's prefill does (similar lengths in one call)
    attend_first_chunks(q, k, v, [(a, n, r * t + t - n) for r, a, n in step.fresh], flat, scaling, sinks, window)
    if step.hist_rows:
        qh = q if step.hsel is None else q.index_select(0, step.hsel)
        if step.one_each:  # a generation step: one token a row, one decode call
            o = kv.decode(qh, paged, step.block_table, step.lens, scale=scaling, sinks=sinks, sliding_window=window,
                          check=False)
        else:  # lengths and boundaries as host tensors: the prefill reads nothing back
            o = kv.prefill(qh, None, None, paged, None, step.block_table, step.lens_host, step.qsl_host,
                           scale=scaling, sinks=sinks, sliding_window=window, stored=True, check=False)
        if flat is None:
            return o.to(query.dtype).view(b, t, hq, d), None
        flat.index_copy_(0, step.hpos, o.to(flat.dtype))
    return flat.view(b, t, hq, d), None
