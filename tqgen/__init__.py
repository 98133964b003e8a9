"""tqgen — a compiler-style generator of TurboQuant KV-cache kernels.

``import tqgen`` is light: it imports neither torch nor triton. The torch reference oracle is
``tqgen.reference`` (imported on first use).
"""

from __future__ import annotations

import importlib
from typing import Any

from .ir import (
    Backend, KeyCodec, Layout, LayoutSpec, PRESETS, Reason, Rotation, SpecError, Target, check_target,
    parse_target,
)
from .layout import ByteLayout, PackScheme, PageAddressing, derive_layout

__version__ = "0.1.0"

__all__ = [
    "Backend", "ByteLayout", "KeyCodec", "Layout", "LayoutSpec", "PRESETS", "PackScheme", "PageAddressing",
    "Reason", "Rotation", "SpecError", "Target", "check_target", "derive_layout", "lloyd_max", "parse_target",
    "rotation_matrix", "__version__",
]

_LAZY = {"lloyd_max": ("tqgen.codebook", "lloyd_max"), "rotation_matrix": ("tqgen.rotation", "rotation_matrix")}


def __getattr__(name: str) -> Any:  # PEP 562: numpy-using helpers load on first use
    if name in _LAZY:
        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(mod), attr)
    if name == "reference":
        return importlib.import_module("tqgen.reference")
    raise AttributeError(f"module 'tqgen' has no attribute {name!r}")
