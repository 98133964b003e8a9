"""The README's runtime example runs as written (CPU: Triton interpreter or reference)."""

from pathlib import Path

import pytest
import torch

README = Path(__file__).resolve().parents[1] / "README.md"


def _block(heading: str) -> str:
    text = README.read_text()
    section = text[text.index(heading):]
    start = section.index("```python") + len("```python")
    return section[start:section.index("```", start)]


@pytest.mark.skipif(torch.cuda.is_available(), reason="the GPU run is examples/demo.py on the H200")
def test_runtime_example_runs(capsys):
    exec(compile(_block("## Runtime: `import tqgen_runtime`"), "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "[0, 1, 28, 29]" in out and "triton:gfx950_mfma" in out


def test_hf_generation_example_runs(capsys):
    """The HF snippet generates through TurboQuantCache (CPU: reference backend) and prints the text."""
    text = README.read_text()
    section = text[text.index("HF generation with the cache in packed form"):]
    start = section.index("```python") + len("```python")
    code = section[start:section.index("```", start)].replace("max_new_tokens=32", "max_new_tokens=8")
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out.startswith("A list comprehension in Python is")
