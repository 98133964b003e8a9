"""tqgen_runtime — what applications import.

    import torch, tqgen_runtime as tqr
    kv = tqr.load("4bit_nc", layout="soa", head_dim=128, num_kv_heads=8, num_q_heads=32,
                  block_size=16, dtype=torch.bfloat16, device="cuda")   # or "cpu"
    cache = kv.allocate(num_blocks)
    kv.store(key, value, cache, slot_mapping)
    out = kv.decode(query, cache, block_table, seq_lens, sinks=None, sliding_window=None)
    out = kv.prefill(query, key, value, cache, slot_mapping, block_table, seq_lens, query_start_loc)
    k, v = kv.dequant(cache, block_table, seq_lens)
    kv.variants   # chosen variant id per kernel
    kv.rejected   # [(candidate, [reasons])] for every candidate passed over
    tqr.plan("4bit_nc", device="gfx950")   # the ordered candidates and reasons, no hardware needed
    tqr.boundary_skip_layers(30)             # [0, 1, 28, 29]: layers kept in bf16
"""

from .api import PREFILL_DECODE_MAX_TOKENS, TurboQuantKV, Workspace, load, plan
from .engine import attention_layers, boundary_skip_layers, from_hf_config, is_hybrid, plan_layer_groups
from .select import SelectionError, chain, detect_target

__all__ = ["PREFILL_DECODE_MAX_TOKENS", "SelectionError", "TurboQuantKV", "Workspace", "attention_layers",
           "boundary_skip_layers", "chain", "detect_target", "from_hf_config", "is_hybrid", "load", "plan",
           "plan_layer_groups"]
