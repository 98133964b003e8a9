"""eval/h200_hf.py (the H200 HF report) runs end to end on the CPU: --quick --tiny (random-init 2-layer
SmolLM2-shaped model, reference kernels) in ~15 s, and its report has every table."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")
ROOT = Path(__file__).resolve().parent.parent


def test_h200_hf_script_quick_on_cpu(tmp_path):
    out = tmp_path / "hf.md"
    r = subprocess.run([sys.executable, str(ROOT / "eval" / "h200_hf.py"), "--device", "cpu", "--quick", "--tiny",
                        "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    md = out.read_text()
    assert md in r.stdout  # the same report on stdout
    assert "random-init LlamaForCausalLM with SmolLM2-135M's shape, 2 layers" in md
    # (a) generation: every KV cache at batch 1 and 3; the reference agrees with itself
    assert "| unquantized | 1 | 3/3 | 1.00 | 8.0 | [8, 8, 8] | — |" in md
    for kv in ("unquantized", "k8v4 soa", "4bit_nc soa"):
        assert re.search(rf"^\| {kv} \| 1 \| \d/3 \| [\d.]+ \| [\d.]+ \| \[[\d, ]+\] \| — \|$", md, re.M), kv
        assert re.search(rf"^\| {kv} \| 3 \| \d/3 \| [\d.]+ \| [\d.]+ \| \[[\d, ]+\] \| \d/3 \|$", md, re.M), kv
        # perplexity and timing rows
        assert re.search(rf"^\| {kv} \| [\d.]+ \| [+-][\d.]+ % \| [\d.]+ \|$", md, re.M), kv
        assert re.search(rf"^\| {kv} \| 1 \| [\d.]+ \| [\d.]+ \|$", md, re.M), kv
        assert re.search(rf"^\| {kv} \| 3 \| [\d.]+ \| [\d.]+ \|$", md, re.M), kv
    # (b) kernels: both layers quantised (2 layers: no boundary layers), reference forced on the CPU
    for kv in ("k8v4 soa", "4bit_nc soa"):
        assert f"| {kv} | cpu | 2 | `reference` | `reference` | `reference` |" in md
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["n_new"] == 8 and data["perplexity"]["tokens"] == 96
    assert len(data["tokens"]["k8v4 soa b3"]) == 3 and all(len(t) == 8 for t in data["tokens"]["k8v4 soa b3"])
    assert all(row["ppl"] > 1 for row in data["perplexity"]["rows"])
