"""Engine helpers: which layers keep a bf16 KV cache, and one page pool per cache format.

Pure Python (no torch import), so an engine can plan its caches before it touches a device.

    import tqgen, tqgen_runtime.engine as eng
    kw = eng.from_hf_config(hf_config)              # num_layers + whichever layer-type list exists
    skip = set(eng.boundary_skip_layers(**kw))      # e.g. [0, 1, 28, 29] for a dense 30-layer model
    tq = tqgen.LayoutSpec.from_preset("4bit_nc")
    groups = eng.plan_layer_groups(kw["num_layers"], lambda i: "bf16" if i in skip else tq)
    # [LayerGroup(spec='bf16', layers=[0, 1, 28, 29]), LayerGroup(spec=LayoutSpec(...), layers=[2, ..., 27])]
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, NamedTuple

__all__ = [
    "ATTENTION_TYPES", "NON_ATTENTION_TYPES", "KNOWN_LAYER_TYPES", "DEFAULT_BOUNDARY_LAYERS",
    "LayerGroup", "attention_layers", "boundary_skip_layers", "from_hf_config", "is_hybrid",
    "plan_layer_groups",
]

#: Layers that attend over a KV cache (sliding / chunked windows are attention too).
ATTENTION_TYPES: frozenset[str] = frozenset({
    "full_attention",            # HF layer_types (Llama, Qwen, Gemma, gpt-oss, ...)
    "sliding_attention",         # HF layer_types (Gemma 2/3, gpt-oss, Mistral)
    "sliding_window_attention",
    "chunked_attention",         # HF layer_types (Llama 4)
    "attention",                 # layers_block_type (Jamba, Granite-MoE-hybrid, Nemotron-H, ...)
    "hybrid",                    # layers_block_type (Zamba 2: mamba + shared attention block)
})
#: Layers with no (or no softmax) KV cache: their presence makes a model hybrid.
NON_ATTENTION_TYPES: frozenset[str] = frozenset({
    "linear_attention",          # Qwen3-Next, MiniMax (HF layer_types)
    "mamba", "mamba2", "ssm",    # Jamba, Zamba, Bamba, Falcon-H1, Nemotron-H
    "conv",                      # LFM2
    "recurrent",                 # RecurrentGemma
    "mlp", "moe",                # Nemotron-H MLP-only / MoE-only blocks
})
KNOWN_LAYER_TYPES: frozenset[str] = ATTENTION_TYPES | NON_ATTENTION_TYPES
#: vLLM's TurboQuant boundary protection keeps this many attention layers unquantized at each end.
DEFAULT_BOUNDARY_LAYERS = 2

_LIST_NAMES = ("layer_types", "layers_block_type", "attn_type_list")


# ------------------------------------------------------------------ validation helpers
def _check_count(name: str, value: Any, hint: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer; given {value!r}. {hint}")
    return value


def _as_list(name: str, value: Any, num_layers: int) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{name} must be a list with one entry per layer; given {type(value).__name__} {value!r}. "
                         f"Pass the config's {name} list as it is (e.g. config.{name}).")
    values = list(value)
    if len(values) != num_layers:
        raise ValueError(f"{name} has {len(values)} entries but num_layers is {num_layers}; they must be equal "
                         f"(one entry per layer). Check that num_layers is the config's num_hidden_layers and "
                         f"that {name} belongs to the same (text) config.")
    return values


def _attention_mask(num_layers: int, layer_types: Sequence[str] | None,
                    layers_block_type: Sequence[str] | None,
                    attn_type_list: Sequence[int] | None) -> list[bool]:
    """Per layer: True when it is an attention layer. Every given list is validated; they must agree."""
    _check_count("num_layers", num_layers, "Pass the model's num_hidden_layers, e.g. 32.")
    masks: dict[str, list[bool]] = {}
    known = ", ".join(sorted(KNOWN_LAYER_TYPES))
    for name, value in (("layer_types", layer_types), ("layers_block_type", layers_block_type)):
        if value is None:
            continue
        mask = []
        for i, t in enumerate(_as_list(name, value, num_layers)):
            token = t.strip().lower() if isinstance(t, str) else t
            if token in ATTENTION_TYPES:
                mask.append(True)
            elif token in NON_ATTENTION_TYPES:
                mask.append(False)
            else:
                raise ValueError(f"{name}[{i}] is {t!r}, an unknown layer type; known types: {known}. "
                                 f"Attention types (KV cache): {', '.join(sorted(ATTENTION_TYPES))}. If this is a "
                                 f"new layer kind, add it to ATTENTION_TYPES or NON_ATTENTION_TYPES in "
                                 f"tqgen_runtime.engine.")
        masks[name] = mask
    if attn_type_list is not None:
        mask = []
        for i, t in enumerate(_as_list("attn_type_list", attn_type_list, num_layers)):
            if isinstance(t, str) or t not in (0, 1):
                raise ValueError(f"attn_type_list[{i}] is {t!r}; allowed: 1 (full softmax attention) or "
                                 f"0 (linear attention), as in MiniMax configs.")
            mask.append(t == 1)
        masks["attn_type_list"] = mask
    if not masks:  # no per-layer description: every layer is (full) attention
        return [True] * num_layers
    (first_name, first), *rest = masks.items()
    for name, mask in rest:
        if mask != first:
            i = next(j for j, (a, b) in enumerate(zip(first, mask)) if a != b)
            raise ValueError(f"{first_name} and {name} disagree at layer {i} ({first_name}: "
                             f"{'attention' if first[i] else 'not attention'}, {name}: "
                             f"{'attention' if mask[i] else 'not attention'}); pass only one of "
                             f"{', '.join(_LIST_NAMES)}.")
    return first


# ------------------------------------------------------------------ layer types
def attention_layers(num_layers: int, layer_types: Sequence[str] | None = None,
                     layers_block_type: Sequence[str] | None = None,
                     attn_type_list: Sequence[int] | None = None) -> list[int]:
    """Indices of the layers that attend over a KV cache, ascending.

    Detection, from whichever lists are given (each must have ``num_layers`` entries; several given
    must agree; none given means every layer is full attention):

    * ``layer_types`` (HF): ``full_attention``, ``sliding_attention``, ``chunked_attention`` are
      attention; ``linear_attention``, ``mamba``, ``conv``, ... are not.
    * ``layers_block_type`` (Jamba / Zamba / Nemotron-H): ``attention`` (and Zamba 2's ``hybrid``)
      are attention; ``mamba``, ``mlp``, ``moe`` are not.
    * ``attn_type_list`` (MiniMax): 1 = full softmax attention, 0 = linear attention.

    Type strings are compared case-insensitively; an unknown one raises ValueError listing the known
    ones (``KNOWN_LAYER_TYPES``).
    """
    mask = _attention_mask(num_layers, layer_types, layers_block_type, attn_type_list)
    return [i for i, a in enumerate(mask) if a]


def is_hybrid(num_layers: int, layer_types: Sequence[str] | None = None,
              layers_block_type: Sequence[str] | None = None,
              attn_type_list: Sequence[int] | None = None) -> bool:
    """True when any layer is not an attention layer (mamba, linear attention, conv, ...).

    Sliding-window (or chunked) attention mixed with full attention is *not* hybrid: every layer
    still has a KV cache. Same arguments and validation as :func:`attention_layers`.
    """
    mask = _attention_mask(num_layers, layer_types, layers_block_type, attn_type_list)
    return not all(mask)


def boundary_skip_layers(num_layers: int, n: int = DEFAULT_BOUNDARY_LAYERS,
                         layer_types: Sequence[str] | None = None,
                         layers_block_type: Sequence[str] | None = None,
                         attn_type_list: Sequence[int] | None = None) -> list[int]:
    """Layer indices that keep an unquantized (bf16) KV cache, ascending — vLLM's TurboQuant
    "boundary layer protection".

    * Dense model (every layer is attention; sliding-window / chunked attention counts as
      attention): the first ``n`` and the last ``n`` layers.
    * Hybrid model (any mamba / linear-attention / conv / ... layer): ``[]`` — no boundary skipping.

    Cap: ``n`` is reduced to ``min(n, num_layers // 4)``, so ``2·n <= num_layers // 2`` and at most
    half of the layers are ever left unquantized. Examples: 30 layers, n=2 → ``[0, 1, 28, 29]``;
    4 layers, n=2 → n=1 → ``[0, 3]``; 1–3 layers → ``[]``; n=0 → ``[]``.

    Layer types come from ``layer_types`` / ``layers_block_type`` / ``attn_type_list`` (see
    :func:`attention_layers`); :func:`from_hf_config` extracts them from a HF config. Raises
    ValueError for a negative or non-integer ``n`` or ``num_layers``, a list whose length is not
    ``num_layers``, an unknown layer type, or lists that disagree.
    """
    _check_count("n", n, f"n is the number of boundary layers kept unquantized at each end "
                         f"(vLLM default {DEFAULT_BOUNDARY_LAYERS}); use n=0 to quantize every layer.")
    mask = _attention_mask(num_layers, layer_types, layers_block_type, attn_type_list)
    if not all(mask):  # hybrid: no boundary protection
        return []
    k = min(n, num_layers // 4)
    if k == 0:
        return []
    return list(range(k)) + list(range(num_layers - k, num_layers))


def _get(config: Any, name: str) -> Any:
    if isinstance(config, Mapping):
        return config.get(name)
    try:
        return getattr(config, name, None)
    except Exception:  # a config property that cannot be computed counts as absent
        return None


def from_hf_config(config: Any) -> dict[str, Any]:
    """Keyword arguments for :func:`boundary_skip_layers` (and :func:`attention_layers`,
    :func:`is_hybrid`) from a HF-style config: an object with attributes or a dict.

    Returns ``{"num_layers": config.num_hidden_layers}`` plus whichever of ``layer_types`` /
    ``layers_block_type`` / ``attn_type_list`` the config has and are not None (as lists). When the
    top level has no ``num_hidden_layers`` but a ``text_config`` does (multimodal configs), that
    nested config is used. Raises ValueError when no ``num_hidden_layers`` is found.
    """
    cfg = config
    if _get(cfg, "num_hidden_layers") is None:
        text = _get(cfg, "text_config")
        if text is not None and _get(text, "num_hidden_layers") is not None:
            cfg = text
    num_layers = _get(cfg, "num_hidden_layers")
    if num_layers is None:
        raise ValueError(f"the config ({type(config).__name__}) has no num_hidden_layers (nor a text_config "
                         f"with one); pass an HF model config or a dict like {{'num_hidden_layers': 32, "
                         f"'layer_types': [...]}}, or call boundary_skip_layers(num_layers=...) directly.")
    kwargs: dict[str, Any] = {"num_layers": num_layers}
    for name in _LIST_NAMES:
        value = _get(cfg, name)
        if value is not None:
            kwargs[name] = list(value) if not isinstance(value, (str, bytes)) else value
    return kwargs


# ------------------------------------------------------------------ layer groups
class LayerGroup(NamedTuple):
    """One cache format and the layers that use it; unpacks as ``spec, layers``."""

    spec: Any
    layers: list[int]


def plan_layer_groups(num_layers: int, spec_for_layer: Callable[[int], Any], *,
                      key: Callable[[Any], Hashable] = lambda s: s) -> list[LayerGroup]:
    """Group layers by cache format so mixed per-layer specs waste no page bytes.

    ``spec_for_layer(i)`` names layer ``i``'s format: any object, e.g. a ``tqgen.LayoutSpec`` or the
    string ``"bf16"`` for boundary layers kept unquantized. Layers whose specs have equal
    ``key(spec)`` (default: the spec itself, so it must be hashable) form one group. Each group gets
    its **own page pool** — one cache tensor per group, page size = that spec's page size — so a
    small-slot format is never padded to the largest slot of another group (one shared pool would
    have to size every page for the biggest format).

    Returns ``[LayerGroup(spec, [layer indices]), ...]``: groups in order of their first layer,
    indices ascending; a group's ``spec`` is the one returned for its first layer. Raises
    ValueError for a bad ``num_layers`` or an unhashable key.
    """
    _check_count("num_layers", num_layers, "Pass the model's num_hidden_layers, e.g. 32.")
    groups: dict[Hashable, LayerGroup] = {}
    for i in range(num_layers):
        spec = spec_for_layer(i)
        k = key(spec)
        try:
            group = groups.get(k)
        except TypeError as e:
            raise ValueError(f"layer {i}: the group key {k!r} ({type(k).__name__}) is not hashable ({e}); "
                             f"use hashable specs (e.g. a frozen tqgen.LayoutSpec or a string) or pass "
                             f"key=... returning a hashable value (e.g. key=repr).") from None
        if group is None:
            groups[k] = LayerGroup(spec, [i])
        else:
            group.layers.append(i)
    return list(groups.values())
