"""Compile generated CUDA C++ with NVRTC (the runtime compiler library) where nvcc is absent.

A CUDA build of torch installs ``libnvrtc`` (the ``nvidia-cuda-nvrtc`` wheel, or ``nvidia/cu13/lib`` for CUDA 13), so a
machine without the CUDA toolkit can still build the C++ kernels instead of falling back to Triton:

    compile_cuda_nvrtc(Path("k.cu"), "sm90", out)   # -> CompileResult, the same as compile_cpp.compile_cuda's
    compile_cuda_any(Path("k.cu"), "sm90", out)     # nvcc where found, else NVRTC ($TQGEN_CUDA_COMPILER forces one)

The generated sources include ``<cuda_fp16.h>`` and ``<stdint.h>``; NVRTC has neither without a CUDA include tree,
so they come from :data:`SHIM_HEADERS`, which define what the kernels use from them with the same PTX ``cuda_fp16.hpp``
emits (``cvt.f32.f16``, ``cvt.rn.f16.f32``). NVRTC 13.0.88 builds nvcc V13.0.88's head_dim-128 tile loops instruction
for instruction (tests/test_nvrtc.py); at head_dim 64 its front end keeps shared-memory pointers 64-bit (nvcc's 32-bit)
and the SoA loops move by a few instructions. On the H200 all 16 default decodes gave bit-identical outputs at nvcc's
speed (bench/results/h200-2026-12-04-nvrtc.md). Registers and spills come from ptxas's ``-v`` report in the program log
(``parse_ptxas``).

Stdlib only (ctypes); imports neither torch nor triton.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import sys
import time
from pathlib import Path

from .compile_cpp import (CompileResult, ToolchainMissing, compile_cuda, cuda_arch, cubin_out, find_nvcc,
                          ptxas_result)

#: in-memory headers for NVRTC (no CUDA include tree): what the generated kernels use of each
SHIM_HEADERS: dict[str, str] = {
    "stdint.h": """#pragma once
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef long long intptr_t;
typedef unsigned long long uintptr_t;
""",
    "cuda_fp16.h": """#pragma once
struct __half { unsigned short x; };
__device__ __forceinline__ __half __ushort_as_half(unsigned short u) { __half h; h.x = u; return h; }
__device__ __forceinline__ unsigned short __half_as_ushort(__half h) { return h.x; }
__device__ __forceinline__ float __half2float(__half h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.x));
  return f;
}
__device__ __forceinline__ __half __float2half_rn(float f) {
  __half h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
  return h;
}
""",
}

_LIB_GLOBS = ("nvidia/cu13/lib/libnvrtc.so.*", "nvidia/cuda_nvrtc/lib/libnvrtc.so.*", "torch/lib/libnvrtc*.so*")
INSTALL_HINT = ("install the NVRTC wheel that matches your CUDA (`pip install nvidia-cuda-nvrtc`, 13.x for CUDA 13, "
                "`nvidia-cuda-nvrtc-cu12` for 12.x; a CUDA build of torch brings it), or the CUDA toolkit (nvcc), "
                "or set TQGEN_NVRTC=/path/to/libnvrtc.so")


def _candidates() -> list[str]:
    out = []
    for root in sys.path:
        for pat in _LIB_GLOBS:  # libnvrtc.so.13, not the .alt. / builtins libraries beside it
            out += sorted(p for p in glob.glob(os.path.join(root or ".", pat)) if ".alt." not in p
                          and "builtins" not in p)
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            out += sorted(glob.glob(os.path.join(home, "lib64", "libnvrtc.so*")))
    found = ctypes.util.find_library("nvrtc")
    return out + ([found] if found else [])


def find_nvrtc() -> str:
    """``$TQGEN_NVRTC``, else the first ``libnvrtc`` of: the nvidia wheels on sys.path (CUDA 13's ``nvidia/cu13``,
    12's ``nvidia/cuda_nvrtc``), torch/lib, $CUDA_HOME / $CUDA_PATH / /usr/local/cuda lib64, the loader's path."""
    env = os.environ.get("TQGEN_NVRTC")
    if env:
        if not Path(env).is_file():
            raise ToolchainMissing(f"TQGEN_NVRTC={env!r} is not a file; point it at libnvrtc.so or unset it")
        return env
    cands = _candidates()
    if not cands:
        raise ToolchainMissing(f"libnvrtc not found (no nvidia wheel on sys.path, no CUDA lib64, not on the loader's "
                               f"path); {INSTALL_HINT}")
    return cands[0]


class Nvrtc:
    """The NVRTC calls tqgen makes, through ctypes (one instance a library path)."""

    _cache: dict[str, "Nvrtc"] = {}

    def __init__(self, path: str):
        self.path = path
        # NVRTC dlopens libnvrtc-builtins.so.<version> by name: a wheel's lib folder is not on the loader's path, so
        # the one beside the library is loaded first (a loaded soname is found by name)
        for b in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(path)), "libnvrtc-builtins.so.*"))):
            if ".alt." not in b:
                ctypes.CDLL(b, mode=ctypes.RTLD_GLOBAL)
        self.lib = ctypes.CDLL(path)
        L = self.lib
        P, S, I = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
        L.nvrtcGetErrorString.restype = ctypes.c_char_p
        L.nvrtcCreateProgram.argtypes = [ctypes.POINTER(P), ctypes.c_char_p, ctypes.c_char_p, I,
                                         ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p)]
        L.nvrtcCompileProgram.argtypes = [P, I, ctypes.POINTER(ctypes.c_char_p)]
        for f in ("nvrtcGetProgramLogSize", "nvrtcGetCUBINSize"):
            getattr(L, f).argtypes = [P, ctypes.POINTER(S)]
        for f in ("nvrtcGetProgramLog", "nvrtcGetCUBIN"):
            getattr(L, f).argtypes = [P, ctypes.c_char_p]
        L.nvrtcDestroyProgram.argtypes = [ctypes.POINTER(P)]
        major, minor = I(), I()
        self._check(L.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
        self.version = (major.value, minor.value)

    @classmethod
    def get(cls, path: str | None = None) -> "Nvrtc":
        path = path or find_nvrtc()
        if path not in cls._cache:
            try:
                cls._cache[path] = cls(path)
            except OSError as e:
                raise ToolchainMissing(f"{path}: cannot load it ({e}); {INSTALL_HINT}") from None
        return cls._cache[path]

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what} failed: {self.lib.nvrtcGetErrorString(rc).decode()} (nvrtcResult {rc})")

    def compile(self, source: str, name: str, options: list[str]) -> tuple[bool, str, bytes | None]:
        """(compiled, the program log, the cubin) of ``source`` with :data:`SHIM_HEADERS`."""
        L, prog = self.lib, ctypes.c_void_p()
        names = list(SHIM_HEADERS)
        arr = ctypes.c_char_p * len(names)
        self._check(L.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), len(names),
                                         arr(*(SHIM_HEADERS[n].encode() for n in names)),
                                         arr(*(n.encode() for n in names))), "nvrtcCreateProgram")
        try:
            opts = (ctypes.c_char_p * len(options))(*(o.encode() for o in options))
            rc = L.nvrtcCompileProgram(prog, len(options), opts)
            size = ctypes.c_size_t()
            self._check(L.nvrtcGetProgramLogSize(prog, ctypes.byref(size)), "nvrtcGetProgramLogSize")
            buf = ctypes.create_string_buffer(size.value)
            self._check(L.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
            log = buf.value.decode(errors="replace")
            if rc != 0:
                return False, f"{self.lib.nvrtcGetErrorString(rc).decode()}\n{log}", None
            self._check(L.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize")
            cubin = ctypes.create_string_buffer(size.value)
            self._check(L.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
            return True, log, cubin.raw
        finally:
            L.nvrtcDestroyProgram(ctypes.byref(prog))


def compile_cuda_nvrtc(src: Path, arch: str, out_dir: Path, *, nvrtc: str | None = None) -> CompileResult:
    """NVRTC ``src`` to ``<out_dir>/<stem>.<arch>.cubin`` (``compile_cuda``'s output name and result), C++17, ptxas
    ``-v`` (registers and spills as nvcc's). ``nvrtc``: the library (default ``find_nvrtc()``)."""
    src, out_dir = Path(src), Path(out_dir)
    sm = cuda_arch(arch)
    lib = Nvrtc.get(nvrtc)
    out = cubin_out(src, sm, out_dir)
    opts = [f"--gpu-architecture={sm}", "--std=c++17", "--ptxas-options=-v"]
    cmd = [f"nvrtc {lib.version[0]}.{lib.version[1]} ({lib.path})", *opts, str(src)]
    t0 = time.perf_counter()
    ok, log, cubin = lib.compile(src.read_text(), src.name, opts)
    dt = time.perf_counter() - t0
    log = "$ " + " ".join(cmd) + "\n" + log
    if not ok or cubin is None:
        return CompileResult(False, sm, log, cmd=cmd, seconds=dt)
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(cubin)
    tmp.replace(out)
    return ptxas_result(sm, log, cmd, out, dt)


def cuda_compiler() -> str:
    """Which compiler ``compile_cuda_any`` runs: ``$TQGEN_CUDA_COMPILER`` (nvcc or nvrtc) where set, else nvcc where
    found (``$TQGEN_NVCC`` set: that nvcc, or ToolchainMissing, never NVRTC in its place), else NVRTC where found;
    neither: ToolchainMissing naming both and how to get one."""
    forced = os.environ.get("TQGEN_CUDA_COMPILER", "").strip().lower()
    if forced not in ("", "nvcc", "nvrtc"):
        raise ValueError(f"TQGEN_CUDA_COMPILER={forced!r}: allowed nvcc, nvrtc (or unset: nvcc where found, else "
                         "NVRTC)")
    if forced == "nvrtc":
        find_nvrtc()
        return "nvrtc"
    if forced == "nvcc" or os.environ.get("TQGEN_NVCC"):
        find_nvcc()
        return "nvcc"
    try:
        find_nvcc()
        return "nvcc"
    except ToolchainMissing as no_nvcc:
        try:
            find_nvrtc()
        except ToolchainMissing as no_nvrtc:
            raise ToolchainMissing(f"no CUDA compiler: {no_nvcc}; and {no_nvrtc}") from None
        return "nvrtc"


def compile_cuda_any(src: Path, arch: str, out_dir: Path) -> CompileResult:
    """``compile_cuda`` (nvcc) or ``compile_cuda_nvrtc``, as ``cuda_compiler()`` picks."""
    return compile_cuda(src, arch, out_dir) if cuda_compiler() == "nvcc" else compile_cuda_nvrtc(src, arch, out_dir)


__all__ = ["SHIM_HEADERS", "Nvrtc", "find_nvrtc", "compile_cuda_nvrtc", "compile_cuda_any", "cuda_compiler"]
