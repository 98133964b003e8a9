"""Run a generated HIP C++ variant on the CPU: the kernel source compiled for the host against a small simulator of
the HIP device API (``tqgen/cpu_sim/hip/hip_runtime.h``), launched through the same ``CudaKernels`` surface as on a
GPU (store, decode, merge, dequant), on CPU tensors.

    kern = load_sim(LayoutSpec.from_preset("4bit_nc"), "gfx942")      # wavefronts of 64 lanes, as gfx9
    kern.store(key, value, cache, slot_mapping)
    out = kern.decode(query, cache, block_table, seq_lens)

What it is for: the semantics of the AMD kernels without an AMD GPU. A GPU thread is a fiber; the lanes of a
64-lane wavefront meet at every shuffle and vote as the hardware's would (two 32-lane logical warps a wavefront, a
divergent wavefront voting per branch: the header says how), so the wave64 code paths the NVIDIA runs of the
portable fragment path cannot reach (``__any`` over both logical warps, a 32-thread block in half a wavefront) run
here. Not a performance model, and slow (x86-64, 2-core VM: a store of 5,000 rows ~0.07 s, a decode ~1.5 ms a 16-token
tile a wavefront): tests use short sequences. The intrinsics compute exact values where AMD's are 1-2 ulp approximations.

Needs a host clang (``$TQGEN_SIM_CXX``, else clang-22, else clang++: the kernels use clang's ``_Float16`` vector
builtins); binaries are cached in ``$TQGEN_CACHE_DIR/sim/<variant id>/wave<N>-<hash>.so``.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import torch

from .build import source_name, user_cache, variant_dir
from .cuda_launch import CudaKernels, KernelParams
from .ir import LayoutSpec, Target, Vendor
from .lower_cuda import KERNEL_NAMES, make_variant
from .variants import Variant

SIM_DIR = Path(__file__).resolve().parent / "cpu_sim"
WAVES = (32, 64)
_FLAGS = ("-x", "c++", "-std=c++20", "-O1", "-fPIC", "-shared", "-w", "-fno-threadsafe-statics", "-fno-exceptions")


class SimUnavailable(RuntimeError):
    """No host compiler that builds the simulated kernels."""


def find_cxx() -> str:
    """The host compiler: ``$TQGEN_SIM_CXX``, else clang-22, else clang++ (GCC lacks the ``_Float16`` vector
    builtins the HIP platform's definitions use)."""
    env = os.environ.get("TQGEN_SIM_CXX")
    if env:
        if not shutil.which(env):
            raise SimUnavailable(f"TQGEN_SIM_CXX={env!r} is not an executable on PATH; unset it or name a clang")
        return env
    for name in ("clang-22", "clang++"):
        if shutil.which(name):
            return name
    raise SimUnavailable("the HIP simulator needs a host clang (clang-22 or clang++ on PATH, or $TQGEN_SIM_CXX): "
                         "bash tools/hip_toolchain.sh installs clang-22")


_KERNEL = re.compile(r'(extern "C" __global__ void\s+(?:__launch_bounds__\([^)]*\)\s*)?)(\w+)(\s*\()')


def kernel_names(source: str) -> list[str]:
    """The ``extern "C" __global__`` kernels a rendered source defines, in order."""
    return [m.group(2) for m in _KERNEL.finditer(source)]


def sim_source(source: str) -> str:
    """``source`` with each kernel renamed ``tqsim_k_<name>`` (a kernel may share its name with a device function,
    ``tq_store_f16``, an overload C++ allows) and a trailer that gives it a ``tqsim_call_<name>(void** params)`` entry
    (its arguments from a ``kernelParams`` array, as a driver's launch takes them)."""
    names = kernel_names(source)
    if not names:
        raise ValueError("no extern \"C\" __global__ kernels in the source: is it a rendered tqgen HIP kernel?")
    body = _KERNEL.sub(lambda m: f"{m.group(1)}tqsim_k_{m.group(2)}{m.group(3)}", source)
    calls = "\n".join(f'extern "C" void tqsim_call_{n}(void** p) {{ ::tqsim::call_with(&tqsim_k_{n}, p); }}'
                      for n in names)
    return f"{body}\n// ---- tqgen.hip_sim: launch entries\n{calls}\n"


def build_sim(v: Variant, wave: int = 64, defines: tuple[str, ...] = ()) -> Path:
    """Compile ``v``'s HIP source for the host with ``wave``-lane wavefronts; returns the shared library (cached)."""
    if v.backend.value != "hip":
        raise ValueError(f"{v.id}: the simulator runs HIP variants (backend hip), not {v.backend.value}; "
                         "make one with lower_cuda.make_variant(spec, 'gfx942')")
    return build_source((variant_dir(v) / source_name(v)).read_text(), v.id, wave, defines)


def build_source(source: str, name: str, wave: int = 64, defines: tuple[str, ...] = ()) -> Path:
    """Compile a HIP kernel source for the host against the simulator header (``defines``: extra ``NAME[=VALUE]``
    macros, e.g. ``TQSIM_UCONTEXT`` for the portable fiber switch); cached under ``$TQGEN_CACHE_DIR/sim/<name>/`` by a
    hash of the source, the header, the compiler, the flags and ``wave``."""
    if wave not in WAVES:
        raise ValueError(f"wave={wave}: a wavefront of {' or '.join(map(str, WAVES))} lanes")
    cxx = find_cxx()
    flags = [*_FLAGS, f"-DTQSIM_WAVE={wave}", *(f"-D{d}" for d in defines)]
    header = (SIM_DIR / "hip" / "hip_runtime.h").read_bytes()
    stamp = hashlib.sha256(source.encode() + header + cxx.encode() + " ".join(flags).encode()).hexdigest()[:12]
    out = user_cache() / "sim" / name / f"wave{wave}-{stamp}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    cpp = out.with_suffix(".cpp")
    cpp.write_text(sim_source(source))
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    cmd = [cxx, *flags, "-I", str(SIM_DIR), str(cpp), "-o", str(tmp), "-lm", "-Wl,--no-undefined"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"compiling {name} for the CPU simulator failed ({' '.join(cmd)}):\n{r.stderr[-4000:]}")
    tmp.replace(out)
    return out


class SimDriver:
    """``cuda_launch.Driver``'s launch surface over one simulated kernel library: ``function`` names a kernel,
    ``launch`` runs its grid on the CPU (block after block; returns when done)."""

    name = "sim"
    _lock = threading.Lock()  # the simulator's state is one per library and not re-entrant

    def __init__(self, path: Path):
        self.path = path
        self.lib = ctypes.CDLL(str(path))
        self.lib.tqsim_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p] + [ctypes.c_uint] * 4
        self.lib.tqsim_launch.restype = ctypes.c_int
        self.lib.tqsim_error.restype = ctypes.c_char_p
        self.wave = self.lib.tqsim_wave()

    def function(self, name: str) -> int:
        try:
            return ctypes.cast(getattr(self.lib, f"tqsim_call_{name}"), ctypes.c_void_p).value
        except AttributeError:
            raise RuntimeError(f"{self.path.name}: no kernel {name!r} in the simulated library") from None

    def launch(self, fn, grid: tuple[int, int, int], block: int, params: KernelParams, values: tuple, stream: int,
               smem: int = 0, after_trigger: bool = False) -> None:
        if smem:
            raise RuntimeError(f"dynamic shared memory ({smem} bytes): the HIP kernels use static shared memory only; "
                               "the simulator has no dynamic pool")
        with self._lock:
            ptrs = params.pack(values)
            if self.lib.tqsim_launch(fn, ptrs, *grid, block):
                raise RuntimeError(f"simulated launch (grid {grid}, {block} threads) failed: "
                                   f"{self.lib.tqsim_error().decode()}")


class SimKernels(CudaKernels):
    """A HIP variant's kernels on the CPU simulator: ``CudaKernels``' calls on CPU tensors."""

    @staticmethod
    def _stream(device: torch.device) -> int:
        return 0


def load_sim_variant(v: Variant, wave: int = 64, defines: tuple[str, ...] = ()) -> SimKernels:
    """``v`` (a HIP variant) compiled for the host and loaded."""
    drv = SimDriver(build_sim(v, wave, defines))
    fns = {name: drv.function(name) for pair in KERNEL_NAMES.values() for name in pair}
    return SimKernels(v, drv, fns)


def load_sim(spec: LayoutSpec, target: str | Target = "gfx942", wave: int | None = None, options=None) -> SimKernels:
    """The HIP variant of ``spec`` for an AMD ``target`` on the CPU simulator (``wave``: the target's 64 lanes by
    default; 32 runs the same code with NVIDIA-sized wavefronts)."""
    t = Target.parse(target, "target")
    if t.info.vendor is not Vendor.AMD:
        raise ValueError(f"target {t}: the simulator runs the HIP C++ variants of AMD targets (gfx90a, gfx942, gfx950)")
    return load_sim_variant(make_variant(spec, t, options=options), wave or 64)
