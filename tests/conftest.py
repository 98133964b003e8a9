"""Test setup: without a CUDA device, Triton kernels run in the CPU interpreter."""

import os

import pytest

try:
    import torch
    _CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    _CUDA = False

if not _CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("TQGEN_CACHE_DIR", os.path.join(os.path.dirname(__file__), "..", ".tqgen-cache"))


def pytest_collection_modifyitems(config, items):
    if _CUDA:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU: run on the H200 (bench/results/ has the recorded run)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def sdpa_calls(monkeypatch):
    """The runtime's SDPA calls, recorded: (batch, query rows) of each ``tqgen_runtime.api._attention_batch`` call."""
    import tqgen_runtime.api as api
    calls: list[tuple[int, int]] = []
    sdpa = api._attention_batch
    monkeypatch.setattr(api, "_attention_batch", lambda q, *a: calls.append(tuple(q.shape[:2])) or sdpa(q, *a))
    return calls
