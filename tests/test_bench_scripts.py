"""The benchmark and debug scripts under bench/ (run on the GPU machine, where a broken one costs device minutes):
every Python script compiles, every shell script parses (``bash -n``), and every name a script imports from tqgen,
tqgen_runtime or bench/cuda_h200.py exists (a renamed or removed helper shows here, on the CPU)."""

import ast
import importlib
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PY = sorted((ROOT / "bench").rglob("*.py"))
SH = sorted((ROOT / "bench").rglob("*.sh"))
_TOP = ast.parse((ROOT / "bench" / "cuda_h200.py").read_text()).body
HELPERS = {n.name for n in _TOP if isinstance(n, (ast.FunctionDef, ast.ClassDef))} | {
    t.id for n in _TOP if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}  # cuda_h200's names


def test_there_are_scripts():
    assert len(PY) > 50 and len(SH) > 20 and (ROOT / "bench" / "cuda_h200.py") in PY


@pytest.mark.parametrize("path", PY, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_script_compiles_and_its_imports_exist(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    compile(tree, str(path), "exec")
    missing = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        names = [a.name for a in node.names if a.name != "*"]
        if node.module == "cuda_h200":
            missing += [f"cuda_h200.{n}" for n in names if n not in HELPERS]
        elif node.module.split(".")[0] in ("tqgen", "tqgen_runtime"):
            mod = importlib.import_module(node.module)
            missing += [f"{node.module}.{n}" for n in names if not hasattr(mod, n) and not (
                hasattr(mod, "__path__") and importlib.util.find_spec(f"{node.module}.{n}"))]  # a submodule
    assert not missing, missing


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash absent")
@pytest.mark.parametrize("path", SH, ids=lambda p: str(p.relative_to(ROOT)))
def test_shell_script_parses(path):
    r = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
