"""NVRTC builds of the generated CUDA kernels (tqgen.nvrtc: the runtime's compiler where nvcc is absent), on the CPU.

CI installs the NVRTC wheel matching its nvcc (nvidia-cuda-nvrtc 13.0.88, nvcc V13.0.88) and sets CI_REQUIRE_NVRTC=1:
there a missing library is a failure, elsewhere the build tests skip. The GPU side (an NVRTC-built variant decoding
against the reference, the runtime choosing it without nvcc) is tests/test_runtime_gpu.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import toolchain

from tqgen import nvrtc
from tqgen.build import preset_spec_for_target
from tqgen.compile_cpp import ToolchainMissing
from tqgen.ir import Target
from tqgen.lower_cuda import KERNEL_NAMES, make_variant, render_cuda

SNAPSHOT = Path(__file__).parent / "data" / "sass_tile_sm90.json"


def _nvrtc_or_skip() -> str:
    try:
        return nvrtc.find_nvrtc()
    except ToolchainMissing as e:
        toolchain.missing(f"NVRTC ({e})", toolchain.NVRTC)


def _build(tmp_path, preset, layout, head_dim):
    """NVRTC's build of the default sm90 variant, checked to hold every entry point and its decode's tile profile."""
    from tqgen import sass
    _nvrtc_or_skip()
    spec = preset_spec_for_target(preset, Target.SM90, layout=layout, head_dim=head_dim)
    src = tmp_path / "kernel.cu"
    src.write_text(render_cuda(make_variant(spec, Target.SM90)))
    r = nvrtc.compile_cuda_nvrtc(src, "sm90", tmp_path / "out")
    assert r.ok, r.log[-3000:]
    assert r.output.is_file() and r.output.read_bytes()[:4] == b"\x7fELF"
    assert set(r.kernels) == {n for pair in KERNEL_NAMES.values() for n in pair}, sorted(r.kernels)
    try:
        prof = sass.tile_profile(r.output, head_dim)
    except ToolchainMissing as e:  # CI installs cuobjdump / nvdisasm with the C++ toolchain
        toolchain.missing(f"the SASS tools ({e})")
    return r, prof, json.loads(SNAPSHOT.read_text()), f"d{head_dim}/{layout}/{preset}"


@pytest.mark.parametrize("layout", ["aos", "soa"])
@pytest.mark.parametrize("preset", ["k8v4", "4bit_nc", "k3v4_nc", "3bit_nc"])
def test_nvrtc_builds_the_head_dim_128_decodes_nvcc_builds(tmp_path, preset, layout):
    """Every default head_dim-128 sm90 variant through NVRTC (the shim headers standing in for cuda_fp16.h and
    stdint.h): it compiles, every entry point is in the cubin, no kernel spills, and the decode's tile loop has exactly
    the SASS instructions a 16-token tile of the committed nvcc snapshot (tests/data/sass_tile_sm90.json), all and
    without the rare path: the kernels the GPU benchmarks measured, not just kernels that build."""
    r, prof, snap, key = _build(tmp_path, preset, layout, 128)
    assert r.spills == 0, r.kernels
    assert (prof.per_tile, prof.hot_per_tile) == (snap["per_tile"][key], snap["hot_per_tile"][key]), key


@pytest.mark.parametrize("preset,layout", [("4bit_nc", "aos"), ("k3v4_nc", "soa"), ("3bit_nc", "soa")])
def test_nvrtc_builds_head_dim_64_decodes(tmp_path, preset, layout):
    """At head_dim 64 NVRTC's build is the same loop up to its shared-memory address arithmetic: NVRTC's front end
    keeps shared pointers 64-bit where nvcc's keeps them 32-bit, which moves the SoA decodes' tile loops by up to
    4.3 of ~230 instructions (SoA 3bit_nc 228.3 vs 232.7; SoA 4bit_nc's build spills 112 bytes at its 80-register
    bound, nvcc's 16, at the same time on the H200: bench/results/h200-2026-12-04-nvrtc.md; nvcc stays the first
    choice, tqgen.nvrtc.cuda_compiler). Here: no spills, every entry point, the hot tile loop within 5 instructions
    of the nvcc snapshot."""
    r, prof, snap, key = _build(tmp_path, preset, layout, 64)
    assert r.spills == 0, r.kernels
    assert abs(prof.hot_per_tile - snap["hot_per_tile"][key]) <= 5, (key, prof.hot_per_tile)


def test_nvrtc_reports_a_compile_error(tmp_path):
    """A source that does not compile: ok False, NVRTC's message and the line in the log, no cubin left behind."""
    _nvrtc_or_skip()
    src = tmp_path / "bad.cu"
    src.write_text('#include <stdint.h>\nextern "C" __global__ void k(uint32_t* p) { p[0] = undefined_name; }\n')
    r = nvrtc.compile_cuda_nvrtc(src, "sm90", tmp_path)
    assert not r.ok and r.output is None
    assert "undefined_name" in r.log and "NVRTC_ERROR_COMPILATION" in r.log, r.log
    assert not list(tmp_path.glob("*.cubin"))


def test_find_nvrtc_and_the_compiler_choice(tmp_path, monkeypatch):
    """$TQGEN_NVRTC naming a missing file, $TQGEN_CUDA_COMPILER out of its choices, and no compiler at all are errors
    that say what was given and what to do; without nvcc the choice is NVRTC, with $TQGEN_NVCC set it is nvcc only."""
    import tqgen.compile_cpp as cc

    monkeypatch.setenv("TQGEN_NVRTC", str(tmp_path / "libnvrtc.so"))
    with pytest.raises(ToolchainMissing, match="TQGEN_NVRTC=.*is not a file"):
        nvrtc.find_nvrtc()
    monkeypatch.setenv("TQGEN_CUDA_COMPILER", "clang")
    with pytest.raises(ValueError, match="TQGEN_CUDA_COMPILER='clang': allowed nvcc, nvrtc"):
        nvrtc.cuda_compiler()
    monkeypatch.delenv("TQGEN_CUDA_COMPILER")

    def no_nvcc():
        raise ToolchainMissing("nvcc not found: test")
    monkeypatch.setattr(nvrtc, "find_nvcc", no_nvcc)
    with pytest.raises(ToolchainMissing, match="no CUDA compiler: nvcc not found.*TQGEN_NVRTC"):
        nvrtc.cuda_compiler()
    (tmp_path / "libnvrtc.so").write_bytes(b"")  # found (loading it would fail; the choice only looks)
    assert nvrtc.cuda_compiler() == "nvrtc"
    monkeypatch.setenv("TQGEN_NVCC", str(tmp_path / "nvcc"))  # an explicit nvcc is never replaced by NVRTC
    with pytest.raises(ToolchainMissing, match="nvcc not found: test"):
        nvrtc.cuda_compiler()
    monkeypatch.setattr(nvrtc, "find_nvcc", cc.find_nvcc)
    monkeypatch.setenv("TQGEN_CUDA_COMPILER", "nvrtc")
    assert nvrtc.cuda_compiler() == "nvrtc"
    with pytest.raises(ToolchainMissing, match="cannot load it"):  # an empty file is no library
        nvrtc.Nvrtc.get(str(tmp_path / "libnvrtc.so"))


@pytest.mark.parametrize("preset,layout", [("4bit_nc", "soa"), ("3bit_nc", "aos")])
def test_nvrtc_builds_sm80_variants(tmp_path, preset, layout):
    """The sm_80 renderings (programmatic dependent launch compiled out below sm_90) through NVRTC too: every entry
    point, no spills (A100-class machines without a CUDA toolkit take this path)."""
    _nvrtc_or_skip()
    spec = preset_spec_for_target(preset, Target.SM80, layout=layout)
    src = tmp_path / "kernel.cu"
    src.write_text(render_cuda(make_variant(spec, Target.SM80)))
    r = nvrtc.compile_cuda_nvrtc(src, "sm80", tmp_path)
    assert r.ok, r.log[-3000:]
    assert r.arch == "sm_80" and r.output.name == "kernel.sm80.cubin"
    assert set(r.kernels) == {n for pair in KERNEL_NAMES.values() for n in pair}, sorted(r.kernels)
    assert r.spills == 0, r.kernels
