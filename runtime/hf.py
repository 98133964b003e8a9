"""HF transformers integration: a ``Cache`` whose K/V live in tqgen's paged packed format.

    from tqgen_runtime.hf import TurboQuantCache
    cache = TurboQuantCache(model, preset="4bit_nc", layout="soa")   # also routes attention through tqgen
    out = model.generate(**inputs, past_key_values=cache, max_new_tokens=64)   # transformers >= 5.2x: cache=cache

Each attention layer owns a paged tqgen cache (``tqgen_runtime.load`` on the model's device: the
Triton kernels on a GPU, the reference or the interpreter on the CPU). ``update`` stores the new
post-RoPE K/V through ``kv.store``; the registered attention function then attends through the
runtime: the first chunk of a sequence on its raw K/V (cast to bf16, the kernels' dtype), later chunks
and every generated token through ``kv.prefill(..., stored=True)`` — the decode kernel for a few
tokens, dequant + SDPA for long chunks — so each token attends the stored (quantised) K/V of every
token before it and of itself. That is the function ``tqgen eval`` computes: teacher-forced through
this cache, the logits equal the eval path's with the same chunking (tests/test_hf.py).
Boundary layers (``boundary_skip_layers`` of the model config) keep a plain bf16/fp32 cache.
One sequence per cache (batch size 1).

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
# id(model config) -> the layer whose new K/V a TurboQuantCache just stored and whose attention is next.
# Consumed by that attention call; a call with nothing pending is not ours (another cache, or none).
_PENDING: dict[int, "TurboQuantLayer"] = {}


class TurboQuantLayer(CacheLayerMixin):
    """One attention layer: paged packed K/V (or raw K/V for a boundary layer)."""

    is_sliding = False

    def __init__(self, owner: "TurboQuantCache", layer_idx: int, quantize: bool):
        super().__init__()
        self.owner, self.layer_idx, self.quantize = owner, layer_idx, quantize
        self.length = 0
        self.kv = None
        self.paged = None
        self.new_tokens = 0

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        self.dtype = key_states.dtype
        if self.quantize:
            o = self.owner
            self.kv = load(o.preset, layout=o.layout, head_dim=key_states.shape[-1],
                           num_kv_heads=key_states.shape[1], num_q_heads=o.num_q_heads, block_size=o.block_size,
                           dtype=torch.bfloat16, device=key_states.device, **o.overrides)
            self.paged = self.kv.allocate(4)
        else:
            self.keys = key_states[:, :, :0]
            self.values = value_states[:, :, :0]
        self.is_initialized = True

    def _grow(self, need_tokens: int) -> None:
        bs = self.kv.spec.block_size
        have = self.paged.shape[0]
        need = math.ceil(need_tokens / bs)
        if need > have:
            bigger = self.kv.allocate(max(need, 2 * have))
            bigger[:have] = self.paged
            self.paged = bigger

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if key_states.shape[0] != 1:
            raise ValueError(f"TurboQuantCache holds one sequence; got batch {key_states.shape[0]}. "
                             "Use one cache per sequence.")
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        t = key_states.shape[2]
        self.new_tokens = t
        _PENDING[self.owner.key] = self
        if not self.quantize:
            self.keys = torch.cat([self.keys, key_states], dim=2)
            self.values = torch.cat([self.values, value_states], dim=2)
            self.length += t
            return self.keys, self.values
        self._grow(self.length + t)
        k = key_states[0].transpose(0, 1).to(torch.bfloat16).contiguous()
        v = value_states[0].transpose(0, 1).to(torch.bfloat16).contiguous()
        slots = torch.arange(self.length, self.length + t, dtype=torch.int32, device=self.device)
        self.kv.store(k, v, self.paged, slots)
        self.length += t
        return key_states, value_states  # the new states; the attention reads the history from the pages

    def block_table(self) -> torch.Tensor:
        return torch.arange(self.paged.shape[0], dtype=torch.int32, device=self.device)[None]

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.length + query_length, 0

    def get_seq_length(self) -> int:
        return self.length

    def get_max_length(self) -> int:
        return -1

    def reset(self) -> None:
        self.length = 0
        if self.paged is not None:
            self.paged.zero_()
        if not self.quantize and self.is_initialized:
            self.keys = self.keys[:, :, :0]
            self.values = self.values[:, :, :0]

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError("TurboQuantCache cannot crop: packed slots are not rewound (no assisted decoding)")


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
        super().__init__(layers=[TurboQuantLayer(self, i, i not in self.skip) for i in range(n)])
        AttentionInterface.register(ATTN_NAME, tqgen_attention)
        # masks as for SDPA: used by the fallback path (calls without a TurboQuantCache); ours ignores them
        ALL_MASK_ATTENTION_FUNCTIONS.register(ATTN_NAME, sdpa_mask)
        model.set_attn_implementation(ATTN_NAME)


def tqgen_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """Attention for layers of a TurboQuantCache (registered as ``tqgen_cache``); plain SDPA otherwise."""
    layer = _PENDING.pop(id(module.config), None)
    if layer is None or layer.layer_idx != module.layer_idx or layer.new_tokens != query.shape[2]:
        # not a TurboQuantCache forward (e.g. the model run again with its own DynamicCache): earlier
        # versions attended a stale cache here and generated garbage
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    q = query[0].transpose(0, 1).contiguous()  # [T, Hq, D]
    t = q.shape[0]
    offset = layer.length - t
    if not layer.quantize:
        k, v = key[0].transpose(0, 1), value[0].transpose(0, 1)
        return attend(q, k, v, offset, scaling, None, None)[None], None
    if offset == 0:  # first chunk: raw K/V in the kernels' dtype, as the runtime's prefill does
        k, v = key[0].transpose(0, 1), value[0].transpose(0, 1)
        bf = torch.bfloat16
        return attend(q.to(bf), k.to(bf), v.to(bf), 0, scaling, None, None).to(query.dtype)[None], None
    kv = layer.kv
    dev = q.device
    out = kv.prefill(q.to(torch.bfloat16), None, None, layer.paged, None, layer.block_table(),
                     torch.tensor([layer.length], dtype=torch.int32, device=dev),
                     torch.tensor([0, t], dtype=torch.int32, device=dev), scale=scaling, stored=True)
    return out.to(query.dtype)[None], None
