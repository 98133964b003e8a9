"""Compile-only: every default-matrix Triton variant compiles for its GPU target on this CPU machine
(PTX+cubin for sm80..sm90, AMDGCN+hsaco for gfx90a/gfx942/gfx950) with zero spills and no scratch,
and emits matrix instructions (mma/wgmma, v_mfma) in the decode kernel. One process per target:
Triton reuses per-process target state (TOOLCHAIN.md).
"""

import json
import os
import subprocess
import sys

import pytest

from tqgen.compile_check import GPU_TARGETS

pytestmark = pytest.mark.slow


def compile_check(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """``python -m tqgen.compile_check ARGS`` in its own process (no interpreter, its own Triton cache): the run and
    its JSON report."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton-cache")
    out = tmp_path / "report.json"
    r = subprocess.run([sys.executable, "-m", "tqgen.compile_check", *args, "--json", str(out)],
                       capture_output=True, text=True, env=env, timeout=1800)
    assert out.exists(), r.stdout[-2000:] + r.stderr[-3000:]
    return r, json.loads(out.read_text())


@pytest.mark.parametrize("target", [str(t) for t in GPU_TARGETS])
def test_compiles_without_spills(target, tmp_path):
    r, reports = compile_check(tmp_path, "--target", target)
    assert reports, "no kernels compiled"
    bad = [f"{x['kernel']} {x['variant']}: spills={x['spills']} scratch={x['scratch']} {x['error']}"
           for x in reports if not x["ok"]]
    assert not bad, "\n".join(bad)
    decode = [x for x in reports if x["kernel"] == "tq_decode_split"]
    assert decode and all(x["matrix_ops"] > 0 for x in decode), "decode must use mma / MFMA"
    assert r.returncode == 0


@pytest.mark.parametrize("head_dim", [16, 256])
def test_sm90_decode_at_the_edge_head_dims(head_dim, tmp_path):
    """The sm90 Triton decode at head_dim 16 and 256 (the Triton-only sizes): compiles for every preset x layout (at
    16 the 4-bit keys' split query halves would be dots of K = 8 < 16: they keep the gather) without spills or a
    stack frame (at 256 the one- and two-warp tiles of D <= 128 spilled up to 1.7 KB: a head_dim-256 override)."""
    r, reports = compile_check(tmp_path, "--target", "sm90", "--head-dim", str(head_dim), "--kernel", "tq_decode_split")
    assert len(reports) == 8 and all(x["kernel"] == "tq_decode_split" for x in reports)
    assert all(f"-d{head_dim}-" in x["variant"] for x in reports)
    bad = [f"{x['variant']}: spills={x['spills']} scratch={x['scratch']} {x['error']}" for x in reports if not x["ok"]]
    assert not bad, "\n".join(bad)
    assert r.returncode == 0


@pytest.mark.parametrize("target,args", [("sm90", ("--head-dim", "96")), ("gfx942", ("--head-dim", "80")),
                                         ("sm90", ("--rotation", "orthogonal"))], ids=lambda x: str(x))
def test_padded_head_dims_and_the_orthogonal_rotation(target, args, tmp_path):
    """A head_dim no power of two (padded to the next one; its Lloyd-Max specs take the orthogonal rotation) and the
    orthogonal rotation at 128: every preset x layout and kernel compiles without spills or a stack frame (the
    rotation's dots: 16 rows x ROT_COLUMNS columns on the target's warps; whole [D, D] dots kept up to 7.4 KB of stack
    on sm90); on NVIDIA those dots are bf16x6 tensor-core dots (mma in the store, the query rotation and the dequant)."""
    r, reports = compile_check(tmp_path, "--target", target, *args)
    tag = f"-d{args[1]}-" if args[0] == "--head-dim" else "-d128-"
    assert len(reports) >= 52 and all(tag in x["variant"] for x in reports)
    bad = [f"{x['kernel']} {x['variant']}: spills={x['spills']} scratch={x['scratch']} {x['error']}"
           for x in reports if not x["ok"]]
    assert not bad, "\n".join(bad)
    rotated = [x for x in reports if "orthogonal" in x["variant"] and x["kernel"] in ("tq_store", "tq_prep_query",
                                                                                      "tq_dequant")]
    assert len(rotated) == 18  # 6 Lloyd-Max variants x 3 kernels (fp8 keys stay unrotated)
    if target.startswith("sm"):
        assert all(x["matrix_ops"] > 0 for x in rotated), [x for x in rotated if not x["matrix_ops"]]
    assert r.returncode == 0
