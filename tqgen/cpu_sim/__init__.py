"""Run a generated C++ variant (HIP or CUDA) on the CPU: the kernel source compiled for the host against a small
simulator of the GPU device API (``tqsim.h`` here, with ``hip/hip_runtime.h`` and ``cuda_fp16.h`` for each language's
names), launched through the same ``CudaKernels`` surface as on a GPU (store, decode, merge, dequant), on CPU tensors.

    kern = load_sim(LayoutSpec.from_preset("4bit_nc"), "gfx942")   # HIP, 64-lane wavefronts as gfx9
    kern = load_sim(LayoutSpec.from_preset("4bit_nc"), "sm90")     # CUDA: its inline PTX translated, 32-lane warps
    kern.store(key, value, cache, slot_mapping)
    out = kern.decode(query, cache, block_table, seq_lens)

What it is for: the kernels' semantics without their GPU. A GPU thread is a fiber; the lanes of a wavefront meet at
every shuffle, vote, warp-collective instruction and barrier as the hardware's would (``tqsim.h`` says how), so the
wave64 paths of the AMD kernels (``__any`` over two logical warps, a 32-thread block in half a wavefront) run, and so do
the CUDA kernels' own paths (the cp.async pipeline and its line loads, the shared-memory pair tables, the mma.sync and
movmatrix fragments): a rendered kernel.cu is preprocessed and each ``asm`` statement becomes a call of the
``tqsim::ptx`` function of its instruction (``cuda_source``). Not a performance model, and slow (x86-64, 2-core VM: a
store of 5,000 rows ~0.07 s, a decode ~1-2 ms a 16-token tile a warp): tests use short sequences. Intrinsics compute
exact values where the hardware's are 1-2 ulp approximations; a cp.async copy lands at the wait_group that covers its
commit group.

Races: shared memory is filled with 0xff (NaN, -1) before each launch, and ``SimDriver.set_schedule`` runs the next
launches under another schedule (each wavefront alone through its own shuffles until a ``__syncthreads``, as a GPU's
warps run ahead of each other; forward, reverse or shuffled order; the poison before every block). A correct kernel
writes the same bytes under every schedule; tests/test_cpu_sim.py compares them (a missing barrier changes them).

Needs a host clang (``$TQGEN_SIM_CXX``, else clang-22, else clang++: the kernels use clang's ``_Float16`` vector
builtins); binaries are cached in ``$TQGEN_CACHE_DIR/sim/<variant id>/wave<N>-<hash>.so``.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import torch

from ..build import source_name, user_cache, variant_dir
from ..cuda_launch import CudaKernels, KernelParams
from ..ir import LayoutSpec, Target
from ..lower_cuda import KERNEL_NAMES, make_variant
from ..variants import Variant

SIM_DIR = Path(__file__).resolve().parent  # tqsim.h, hip/hip_runtime.h, cuda_fp16.h
WAVES = (32, 64)
HEADERS = ("tqsim.h", "hip/hip_runtime.h", "cuda_fp16.h")  # what a build depends on besides the source
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
    raise SimUnavailable("the CPU simulator needs a host clang (clang-22 or clang++ on PATH, or $TQGEN_SIM_CXX): "
                         "bash tools/hip_toolchain.sh installs clang-22")


_KERNEL = re.compile(r'(extern "C" __global__ void\s+(?:__launch_bounds__\((?:[^()]|\([^()]*\))*\)\s*)?)(\w+)(\s*\()')


def kernel_names(source: str) -> list[str]:
    """The ``extern "C" __global__`` kernels a rendered source defines, in order."""
    return [m.group(2) for m in _KERNEL.finditer(source)]


def sim_source(source: str) -> str:
    """``source`` with each kernel renamed ``tqsim_k_<name>`` (a kernel may share its name with a device function,
    ``tq_store_f16``, an overload C++ allows) and a trailer that gives it a ``tqsim_call_<name>(void** params)`` entry
    (its arguments from a ``kernelParams`` array, as a driver's launch takes them)."""
    names = kernel_names(source)
    if not names:
        raise ValueError("no extern \"C\" __global__ kernels in the source: is it a rendered tqgen C++ kernel?")
    body = _KERNEL.sub(lambda m: f"{m.group(1)}tqsim_k_{m.group(2)}{m.group(3)}", source)
    calls = "\n".join(f'extern "C" void tqsim_call_{n}(void** p) {{ ::tqsim::call_with(&tqsim_k_{n}, p); }}'
                      for n in names)
    return f"{body}\n// ---- tqgen.cpu_sim: launch entries\n{calls}\n"


def build_sim(v: Variant, wave: int | None = None, defines: tuple[str, ...] = (), source: str | None = None) -> Path:
    """Compile ``v``'s C++ source (or ``source``: a modified rendering of it) for the host: a HIP variant as written
    (``wave``: 64 lanes by default, or 32), a CUDA variant with its inline PTX translated (``cuda_source``; 32-lane
    warps); returns the shared library (cached)."""
    src = source if source is not None else (variant_dir(v) / source_name(v)).read_text()
    if v.backend.value == "hip":
        return build_source(src, v.id, wave or 64, defines)
    if v.backend.value == "cuda":
        if wave not in (None, 32):
            raise ValueError(f"{v.id}: CUDA kernels run with 32-lane warps, not wave={wave}")
        arch = v.target.info.arch
        return build_source(src, v.id, 32, defines, transform=lambda text: cuda_source(text, arch),
                            tag=f"cuda_source sm{arch}")
    raise ValueError(f"{v.id}: the simulator runs the C++ variants (backend cuda or hip), not {v.backend.value}; "
                     "make one with lower_cuda.make_variant(spec, 'gfx942') or (spec, 'sm90')")


# ------------------------------------------------------------------ CUDA sources: inline PTX as function calls
_ASM = re.compile(r"\basm\b(\s+volatile\b)?\s*\(")
_SREGS = {"ctaid.x": "blockIdx.x", "ctaid.y": "blockIdx.y", "ctaid.z": "blockIdx.z", "tid.x": "threadIdx.x"}
_DYN_SMEM = re.compile(r"extern __shared__ (?:__align__\(\d+\) )?(\w+) (\w+)\[\];")


def _closing(text: str, i: int) -> int:
    """The index of the parenthesis that closes the one opened just before ``i`` (string literals skipped)."""
    depth = 1
    while depth:
        c = text[i]
        if c == '"':
            i = text.index('"', i + 1)
            while text[i - 1] == "\\":
                i = text.index('"', i + 1)
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        i += 1
    return i - 1


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside parentheses and string literals."""
    parts, depth, cur, i = [], 0, "", 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = text.index('"', i + 1)
            cur += text[i:j + 1]
            i = j + 1
            continue
        depth += (c == "(") - (c == ")")
        if c == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    return parts + [cur]


def _asm_call(body: str, ordinal: int) -> str:
    """One ``asm(...)`` statement's body as a call of the simulator's ``tqsim::ptx`` function of its instruction."""
    sections = _split_top(body, ":")
    template = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', sections[0]))
    operands = []
    for sec in sections[1:3]:
        for op in _split_top(sec, ","):
            op = op.strip()
            if op:
                m = re.fullmatch(r'"[^"]*"\s*\((.*)\)', op, re.S)
                if not m:
                    raise ValueError(f"inline asm operand {op!r} in {body!r}: expected \"constraint\"(expression)")
                operands.append(f"({m.group(1)})")
    text = template.replace("\\n", "\n").replace("\\t", "\t").strip()
    if not text:
        return "((void)0)"  # an empty asm (TQ_OPAQUE: a compiler barrier on the GPU)
    block = text.startswith("{") and text.endswith("}")
    lines, regs = [], set()
    for ins in (text[1:-1] if block else text).split(";"):
        ins = ins.strip()
        if not ins:
            continue
        if ins.startswith(".reg"):  # a block's local register: a C++ local
            m = re.fullmatch(r"\.reg\s+\.(u32|b32|s32|u64|b64|f32)\s+(\w+)", ins)
            if not m:
                raise ValueError(f"inline asm {template!r}: register declaration {ins!r} is not simulated")
            ctype = {"u32": "uint32_t", "b32": "uint32_t", "s32": "int32_t", "u64": "uint64_t", "b64": "uint64_t",
                     "f32": "float"}[m.group(1)]
            lines.append(f"{ctype} {m.group(2)};")
            regs.add(m.group(2))
            continue
        mnemonic, _, rest = ins.partition(" ")
        args = []
        for tok in re.split(r"[,{}\[\]\s]+", rest):
            if not tok:
                continue
            if tok.startswith("%%"):
                if tok[2:] not in _SREGS:
                    raise ValueError(f"inline asm {template!r}: special register {tok[1:]} is not simulated")
                args.append(_SREGS[tok[2:]])
            elif tok.startswith("%"):
                args.append(operands[int(tok[1:])])
            elif tok in regs or re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", tok):
                args.append(tok)
            else:
                raise ValueError(f"inline asm {template!r}: operand {tok!r} is not simulated")
        lines.append(f"::tqsim::ptx::{mnemonic.replace('.', '_')}({', '.join(args + [str(ordinal)])});")
    if not block and len(lines) == 1:
        return lines[0].rstrip(";")
    return "do { " + " ".join(lines) + " } while (0)"


def cuda_source(source: str, arch: int) -> str:
    """A rendered kernel.cu for the host: dynamic shared memory from the simulator's pool, the preprocessor run
    (``__CUDA_ARCH__`` = ``arch`` x 10, so macros that build asm strings are expanded) without the includes, and every
    ``asm`` statement a call of ``tqsim::ptx::<instruction>`` (cpu_sim/cuda_fp16.h); the includes put back."""
    source = _DYN_SMEM.sub(lambda m: f"{m.group(1)}* const {m.group(2)} = "
                                     f"reinterpret_cast<{m.group(1)}*>(::tqsim::dyn_pool);", source)
    includes = [line for line in source.splitlines() if line.startswith("#include")]
    body = "\n".join(line for line in source.splitlines() if not line.startswith("#include"))
    cmd = [find_cxx(), "-E", "-P", "-x", "c++", "-std=c++20", f"-D__CUDA_ARCH__={10 * int(arch)}", "-"]
    r = subprocess.run(cmd, input=body, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"preprocessing a CUDA source for the simulator failed ({' '.join(cmd)}):\n{r.stderr[-4000:]}")
    text, out, pos, n = r.stdout, [], 0, 0
    for m in _ASM.finditer(text):
        if m.start() < pos:
            continue
        end = _closing(text, m.end())
        out.append(text[pos:m.start()])
        out.append(_asm_call(text[m.end():end], n))
        n += 1
        pos = end + 1
    out.append(text[pos:])
    return "\n".join(includes) + "\n" + "".join(out)


def build_source(source: str, name: str, wave: int = 64, defines: tuple[str, ...] = (), transform=None,
                 tag: str = "") -> Path:
    """Compile a HIP kernel source (or a CUDA one through ``cuda_source``) for the host against the simulator's headers
    (``defines``: extra ``NAME[=VALUE]`` macros, e.g. ``TQSIM_UCONTEXT`` for the portable fiber switch); cached under ``$TQGEN_CACHE_DIR/sim/<name>/`` by a
    hash of the source, the header, the compiler, the flags and ``wave``. ``transform`` (named by ``tag`` in the hash):
    applied to the source before compiling, and only then (a cached build runs no preprocessor: ``cuda_source``)."""
    if wave not in WAVES:
        raise ValueError(f"wave={wave}: a wavefront of {' or '.join(map(str, WAVES))} lanes")
    cxx = find_cxx()
    flags = [*_FLAGS, f"-DTQSIM_WAVE={wave}", *(f"-D{d}" for d in defines)]
    header = b"".join((SIM_DIR / h).read_bytes() for h in HEADERS)
    stamp = hashlib.sha256(source.encode() + header + cxx.encode() + " ".join(flags).encode()
                           + tag.encode()).hexdigest()[:12]
    out = user_cache() / "sim" / name / f"wave{wave}-{stamp}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    own = f"{os.getpid()}-{threading.get_ident()}"  # builds may run in threads and processes at once
    cpp, tmp = out.with_suffix(f".{own}.cpp"), out.with_suffix(f".{own}.tmp")
    cpp.write_text(sim_source(transform(source) if transform else source))
    cmd = [cxx, *flags, "-I", str(SIM_DIR), str(cpp), "-o", str(tmp), "-lm", "-Wl,--no-undefined"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"compiling {name} for the CPU simulator failed ({' '.join(cmd)}):\n{r.stderr[-4000:]}")
    cpp.replace(out.with_suffix(".cpp"))  # what was compiled, beside the library (for a debugger or a reader)
    tmp.replace(out)
    return out


ORDERS = {"forward": 0, "reverse": 1, "shuffle": 2}  # tqsim.h's Order


class SimDriver:
    """``cuda_launch.Driver``'s launch surface over one simulated kernel library: ``function`` names a kernel,
    ``launch`` runs its grid on the CPU (block after block; returns when done)."""

    name = "sim"
    _lock = threading.Lock()  # the simulator's state is one per library and not re-entrant

    def __init__(self, path: Path):
        self.path = path
        self.lib = ctypes.CDLL(str(path))
        self.lib.tqsim_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p] + [ctypes.c_uint] * 4 + [ctypes.c_ulonglong]
        self.lib.tqsim_launch.restype = ctypes.c_int
        self.lib.tqsim_error.restype = ctypes.c_char_p
        self.wave = self.lib.tqsim_wave()
        self.lib.tqsim_set_schedule.argtypes = [ctypes.c_int, ctypes.c_ulonglong, ctypes.c_int, ctypes.c_int]
        self.lib.tqsim_set_schedule.restype = ctypes.c_int

    def set_schedule(self, order: str = "forward", seed: int = 0, poison_blocks: bool = False,
                     by_wavefront: bool = False) -> None:
        """How the simulator runs the following launches: ``order`` the order of a block's runnable threads, of its
        wavefronts and of a grid's blocks, ``forward`` (index order, the default), ``reverse``, or ``shuffle`` (a new
        permutation each scheduling round, from ``seed``); ``poison_blocks``: shared memory filled with 0xff before
        every block, not only before every launch (1.7x the time of a store-heavy check); ``by_wavefront``: each
        wavefront runs on through its own shuffles, votes and warp collectives until it waits at a __syncthreads (or
        ends) before the next starts, as a GPU's warps run ahead of each other (else all threads run until they block
        and resolve together, which orders them at every shuffle as a barrier would). The schedule is the library's
        (one per compiled variant in a process). A correct kernel writes the same bytes under every schedule; a
        shared-memory race (a __syncthreads missing between one warp's write and another's read) reads the old value
        under one and the new under another, and a block that reads shared memory before writing it reads the
        poison."""
        if order not in ORDERS:
            raise ValueError(f"simulator order {order!r}: allowed {sorted(ORDERS)}")
        with self._lock:
            self.lib.tqsim_set_schedule(ORDERS[order], seed, int(poison_blocks), int(by_wavefront))

    @contextlib.contextmanager
    def schedule(self, order: str = "forward", seed: int = 0, poison_blocks: bool = False, by_wavefront: bool = False):
        """``set_schedule(...)`` for the launches inside the ``with`` block, the default schedule again after it."""
        self.set_schedule(order, seed, poison_blocks, by_wavefront)
        try:
            yield self
        finally:
            self.set_schedule()

    def function(self, name: str) -> int:
        try:
            return ctypes.cast(getattr(self.lib, f"tqsim_call_{name}"), ctypes.c_void_p).value
        except AttributeError:
            raise RuntimeError(f"{self.path.name}: no kernel {name!r} in the simulated library") from None

    def launch(self, fn, grid: tuple[int, int, int], block: int, params: KernelParams, values: tuple, stream: int,
               smem: int = 0, after_trigger: bool = False) -> None:
        with self._lock:  # tqsim_launch refuses more dynamic shared memory than its pool holds
            ptrs = params.pack(values)
            if self.lib.tqsim_launch(fn, ptrs, *grid, block, smem):
                raise RuntimeError(f"simulated launch (grid {grid}, {block} threads) failed: "
                                   f"{self.lib.tqsim_error().decode()}")


class SimKernels(CudaKernels):
    """A C++ variant's kernels on the CPU simulator: ``CudaKernels``' calls on CPU tensors."""

    @staticmethod
    def _stream(device: torch.device) -> int:
        return 0


def load_sim_variant(v: Variant, wave: int | None = None, defines: tuple[str, ...] = (),
                     source: str | None = None) -> SimKernels:
    """``v`` (a HIP or CUDA variant) compiled for the host and loaded; ``source``: a modified rendering of ``v`` to run
    in its place (a kernel experiment checked for correctness before any GPU time: bench/dbg/sim_check.py)."""
    from ..lower_cuda import decode_dynamic_smem
    drv = SimDriver(build_sim(v, wave, defines, source))
    fns = {name: drv.function(name) for pair in KERNEL_NAMES.values() for name in pair}
    return SimKernels(v, drv, fns, decode_dynamic_smem(v.spec, v.target, v.kind, v.options))


def load_sim(spec: LayoutSpec, target: str | Target = "gfx942", wave: int | None = None, options=None,
             kind: str = "generic") -> SimKernels:
    """The C++ variant of ``spec`` for ``target`` on the CPU simulator: HIP for an AMD target (``wave``: its 64 lanes by
    default; 32 runs the same code with NVIDIA-sized wavefronts), CUDA for an NVIDIA one (32-lane warps; ``kind``
    "portable" for the HIP fragment path compiled as CUDA)."""
    return load_sim_variant(make_variant(spec, Target.parse(target, "target"), kind, options=options), wave)
