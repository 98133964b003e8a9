"""Compile generated CUDA / HIP C++ kernels without a GPU and read registers and spills per kernel.

    compile_cuda(Path("k.cu"), "sm90", out)    # nvcc -cubin, numbers from -Xptxas -v
    compile_hip(Path("k.hip"), "gfx942", out)  # clang-22 + HIP headers, numbers from the code object's notes

CUDA: ``nvcc -arch=sm_XX -cubin -O3 -std=c++17 -Werror all-warnings -Xptxas -v`` (0.5-1.6 s). Spills are
reported, not fatal: add ``extra_flags=("-Xptxas", "-warn-spills")`` to make ptxas fail on them.

HIP: ``clang-22 -x hip --cuda-device-only -nogpulib`` against the HIP headers of libamdhip64-dev unpacked
by ``bash tools/hip_toolchain.sh`` (no ROCm install; TOOLCHAIN.md). A bare ``-S`` leaves calls to the
device libraries (``__ockl_get_local_id`` ...) unresolved, so its register counts are not the real ones:
when lld-22 and the triton wheel's ``ocml.bc``/``ockl.bc`` are there, the kernel is linked with them and a
generated ``__oclc_*`` control-constant module into a code object (``.hsaco``) whose AMDGPU metadata
(``llvm-readelf-22 --notes``) gives VGPRs, SGPRs, spills and scratch per kernel.

Imports neither torch nor triton (stdlib only).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .ir import Reason, SpecError

TIMEOUT_S = 600
HIP_ARCHS = {"gfx90a": 9010, "gfx942": 9402, "gfx950": 9500}  # -> __oclc_ISA_version
INSTALL_HINT = "run `bash tools/hip_toolchain.sh` (installs clang-22/lld-22/llvm-22 and the HIP headers)"


class ToolchainMissing(RuntimeError):
    """A compiler, linker or header tree needed for the compile is absent; the message says how to get it."""


@dataclass(frozen=True)
class CompileResult:
    """What one compile produced (``ok``: compiled, warnings included; spills do not clear it).

    ``registers``: the largest per-kernel count (NVIDIA: registers per thread; AMD: ``.vgpr_count``,
    on gfx90a+ the unified VGPR+AGPR count). ``spills``: summed over all kernels — NVIDIA: spill store
    + spill load bytes, non-inlined device functions included; AMD: spilled VGPRs + SGPRs (a count:
    the metadata gives no bytes). Either way 0 means no spills. ``stack``: the largest per-kernel stack
    in bytes (NVIDIA: cumulative stack size, local arrays included; AMD: private segment size).
    ``kernels``: per kernel (mangled name unless ``extern "C"``) — NVIDIA ``{"registers",
    "spill_stores", "spill_loads", "stack", "barriers", "smem", "cmem0"}``, AMD ``{"vgpr", "agpr",
    "sgpr", "vgpr_spill", "sgpr_spill", "spill", "stack", "lds", "dynamic_stack"}``.
    ``measured``: whether those numbers exist; False after a compile error or for an unlinked HIP
    ``-S`` (then registers None, spills/stack 0, kernels {}). ``output``: the .cubin / .hsaco / .s.
    ``log``: each command run and its full output. ``cmd``: the compile command. ``seconds``: wall time.
    """

    ok: bool
    arch: str
    log: str
    registers: int | None = None
    spills: int = 0
    stack: int = 0
    kernels: dict[str, dict] = field(default_factory=dict)
    cmd: list[str] = field(default_factory=list)
    output: Path | None = None
    measured: bool = False
    seconds: float = 0.0


def _run(cmd: list[str]) -> tuple[int, str]:
    """(exit status, the command line and its stdout+stderr); a timeout is exit status 124."""
    head = "$ " + " ".join(cmd) + "\n"
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        return 124, head + f"timed out after {TIMEOUT_S} s\n" + str(e.stdout or "") + str(e.stderr or "")
    return r.returncode, head + r.stdout + r.stderr


# ----------------------------------------------------------------------------------------- CUDA

def find_nvcc() -> Path:
    """``$TQGEN_NVCC``, else ``nvcc`` on PATH, else /usr/local/cuda/bin/nvcc."""
    env = os.environ.get("TQGEN_NVCC")
    if env:
        if not (Path(env).is_file() and os.access(env, os.X_OK)):
            raise ToolchainMissing(f"TQGEN_NVCC={env!r} is not an executable file; point it at nvcc or unset it")
        return Path(env)
    default = "/usr/local/cuda/bin/nvcc"
    found = shutil.which("nvcc") or (default if os.access(default, os.X_OK) else None)
    if not found:
        raise ToolchainMissing("nvcc not found: not in $TQGEN_NVCC, not on PATH, not /usr/local/cuda/bin/nvcc; "
                               "install the CUDA toolkit (nvcc 13) or set TQGEN_NVCC=/path/to/nvcc")
    return Path(found)


def cuda_arch(arch: str) -> str:
    """'sm90' / 'sm_90' / 'sm90a' / Target.SM90 -> 'sm_90' (nvcc's spelling)."""
    m = re.fullmatch(r"sm_?(\d{2,3}a?)", str(arch))
    if not m:
        raise SpecError([Reason("arch", arch, "sm<NN> such as sm80, sm86, sm89, sm90 (or sm_90)",
                                "pass the target's name, e.g. 'sm90'")], "invalid CUDA arch")
    return "sm_" + m.group(1)


def parse_ptxas(log: str) -> tuple[dict[str, dict], dict[str, dict]]:
    """(entry kernels, non-inlined device functions) with the numbers ``-Xptxas -v`` prints::

        ptxas info    : Compiling entry function 'k' for 'sm_90'
        ptxas info    : Function properties for k
            168 bytes stack frame, 164 bytes spill stores, 184 bytes spill loads
        ptxas info    : Used 32 registers, used 0 barriers, 168 bytes cumulative stack size, 1024 bytes smem

    A kernel's ``stack`` is its cumulative stack size (own frame plus callees) when ptxas prints one.
    """
    entries: dict[str, dict] = {}
    props: dict[str, dict] = {}
    entry = prop = None
    for line in log.splitlines():
        if m := re.search(r"Compiling entry function '([^']+)'", line):
            entry = m.group(1)
            entries[entry] = {"registers": None, "barriers": 0, "smem": 0, "cmem0": 0}
        elif m := re.search(r"Function properties for (\S+)", line):
            prop = m.group(1)
        elif m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line):
            if prop is not None:
                props[prop] = dict(zip(("stack", "spill_stores", "spill_loads"), map(int, m.groups())))
        elif (m := re.search(r"Used (\d+) registers", line)) and entry in entries:
            k = entries[entry]
            k["registers"] = int(m.group(1))
            for key, pat in (("barriers", r"used (\d+) barriers"), ("smem", r"(\d+) bytes smem"),
                             ("cmem0", r"(\d+) bytes cmem\[0\]"), ("cumulative", r"(\d+) bytes cumulative stack")):
                if mm := re.search(pat, line):
                    k[key] = int(mm.group(1))
    kernels = {}
    for name, k in entries.items():
        k = {"spill_stores": 0, "spill_loads": 0, "stack": 0} | props.get(name, {}) | k
        k["stack"] = max(k["stack"], k.pop("cumulative", 0))
        kernels[name] = k
    functions = {name: p for name, p in props.items() if name not in entries}
    return kernels, functions


def _summary(kernels: dict[str, dict], regs_key: str, spill_keys: tuple[str, ...]) -> dict:
    regs = [k[regs_key] for k in kernels.values() if k.get(regs_key) is not None]
    return {"registers": max(regs) if regs else None,
            "spills": sum(k.get(s, 0) for k in kernels.values() for s in spill_keys),
            "stack": max((k.get("stack", 0) for k in kernels.values()), default=0)}


def compile_cuda(src: Path, arch: str, out_dir: Path, *, extra_flags=()) -> CompileResult:
    """nvcc ``src`` to ``<out_dir>/<stem>.<arch>.cubin`` for ``arch`` ('sm80', 'sm90', ...).

    Warnings are errors (``-Werror all-warnings``); a failed compile gives ``ok=False`` with the full log.
    """
    src, out_dir = Path(src), Path(out_dir)
    sm = cuda_arch(arch)
    out = cubin_out(src, sm, out_dir)
    cmd = [str(find_nvcc()), f"-arch={sm}", "-cubin", "-O3", "-std=c++17", "-Werror", "all-warnings",
           "-Xptxas", "-v", *extra_flags, str(src), "-o", str(out)]
    t0 = time.perf_counter()
    rc, log = _run(cmd)
    dt = time.perf_counter() - t0
    if rc != 0 or not out.is_file():
        return CompileResult(False, sm, log, cmd=cmd, seconds=dt)
    return ptxas_result(sm, log, cmd, out, dt)


def cubin_out(src: Path, sm: str, out_dir: Path) -> Path:
    """``<out_dir>/<stem>.<sm without _>.cubin`` (created folder, no stale file): where a CUDA compile writes."""
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{src.stem}.{sm.replace('_', '')}.cubin"
    out.unlink(missing_ok=True)
    return out


def ptxas_result(sm: str, log: str, cmd: list[str], out: Path, seconds: float) -> CompileResult:
    """A compiled cubin's result from ptxas's ``-v`` report in ``log`` (nvcc's output or NVRTC's program log):
    registers, spills (non-inlined device functions' included), stack."""
    kernels, functions = parse_ptxas(log)
    summary = _summary(kernels, "registers", ("spill_stores", "spill_loads"))
    summary["spills"] += sum(f["spill_stores"] + f["spill_loads"] for f in functions.values())
    return CompileResult(True, sm, log, kernels=kernels, cmd=cmd, output=out, measured=bool(kernels), seconds=seconds,
                         **summary)


# ------------------------------------------------------------------------------------------ HIP

def hip_root() -> Path:
    """``$TQGEN_HIP_ROOT`` or ``~/.cache/tqgen/hip``, checked to hold ``include/hip/hip_runtime.h``."""
    root = Path(os.environ.get("TQGEN_HIP_ROOT") or Path.home() / ".cache" / "tqgen" / "hip")
    if not (root / "include" / "hip" / "hip_runtime.h").is_file():
        src = "$TQGEN_HIP_ROOT" if os.environ.get("TQGEN_HIP_ROOT") else "the default"
        raise ToolchainMissing(f"no HIP headers: {root}/include/hip/hip_runtime.h ({src}) does not exist; "
                               f"{INSTALL_HINT}")
    return root


_default_hip_root = hip_root  # compile_hip's keyword argument of the same name shadows it


def _llvm_bin(name: str) -> Path | None:
    """``name`` of LLVM 22 (ld.lld, llvm-readelf): beside clang-22's real binary, else ``name-22`` on PATH."""
    clang = shutil.which("clang-22")
    if clang:
        p = Path(os.path.realpath(clang)).parent / name
        if p.is_file():
            return p
    found = shutil.which(f"{name}-22")
    return Path(found) if found else None


def device_bitcode(root: Path) -> tuple[Path, Path] | None:
    """(ocml.bc, ockl.bc): ``<root>/bitcode`` (copied there by tools/hip_toolchain.sh), else the triton
    wheel's ``backends/amd/lib`` (found without importing triton); None if neither has both."""
    dirs = [root / "bitcode"]
    spec = importlib.util.find_spec("triton")
    if spec and spec.submodule_search_locations:
        dirs.append(Path(list(spec.submodule_search_locations)[0]) / "backends" / "amd" / "lib")
    for d in dirs:
        if (d / "ocml.bc").is_file() and (d / "ockl.bc").is_file():
            return d / "ocml.bc", d / "ockl.bc"
    return None


def hip_link_missing(root: Path) -> list[str]:
    """What a linked HIP code object (registers/spills) still needs; [] when everything is there."""
    tools = [("ld.lld", "ld.lld (lld-22)"), ("llvm-readelf", "llvm-readelf-22 (llvm-22)")]
    missing = [what for name, what in tools if _llvm_bin(name) is None]
    if device_bitcode(root) is None:
        missing.append(f"ocml.bc/ockl.bc (neither in {root / 'bitcode'} nor in a triton wheel)")
    return missing


def oclc_source(arch: str) -> str:
    """OpenCL defining the ``__oclc_*`` control constants ocml/ockl read (ROCm ships them as oclc_*.bc):
    IEEE-exact math, wave64 (gfx9), code object ABI v6 (clang-22's default)."""
    consts = [("uchar", "__oclc_unsafe_math_opt", 0), ("uchar", "__oclc_finite_only_opt", 0),
              ("uchar", "__oclc_correctly_rounded_sqrt32", 1), ("uchar", "__oclc_daz_opt", 0),
              ("uchar", "__oclc_wavefrontsize64", 1), ("int", "__oclc_wavefrontsize_log2", 6),
              ("int", "__oclc_ISA_version", HIP_ARCHS[arch]), ("int", "__oclc_ABI_version", 600)]
    return "".join(f'__attribute__((visibility("hidden"))) const __constant {t} {n} = {v};\n' for t, n, v in consts)


def _hip_major(root: Path) -> int | None:
    """HIP_VERSION_MAJOR of the header tree (7 for libamdhip64-dev 7.2.4, 6 for the 6.4.3 fallback)."""
    h = root / "include" / "hip" / "hip_version.h"
    m = re.search(r"#define HIP_VERSION_MAJOR (\d+)", h.read_text(errors="replace")) if h.is_file() else None
    return int(m.group(1)) if m else None


def _amdgpu_kernel_maps(text: str) -> list[tuple[dict[str, str], list[dict[str, str]]]]:
    """Each map of the ``amdhsa.kernels`` list in AMDGPU metadata text: its scalar keys, and the keys of each entry of
    its ``.args`` list."""
    lines = text.splitlines()
    start = next((n for n, line in enumerate(lines) if line.strip() == "amdhsa.kernels:"), None)
    if start is None:
        return []
    base = len(lines[start]) - len(lines[start].lstrip())
    items: list[tuple[dict[str, str], list[dict[str, str]]]] = []
    item_ind = None
    in_args = False
    for line in lines[start + 1:]:
        text_ = line.lstrip()
        ind = len(line) - len(text_)
        if not text_:
            continue
        if ind < base or (ind == base and not text_.startswith("-")):
            break  # the next amdhsa.* key
        if text_.startswith("- ") and item_ind in (None, ind):  # a kernel's map begins
            item_ind = ind
            items.append(({}, []))
            text_, ind = text_[2:], ind + 2
        if not items:
            continue
        m = re.match(r"(- )?\.(\w+):[ \t]*(\S*)", text_)
        if ind == item_ind + 2 and m and not m.group(1):  # the kernel's own key (.args: opens its argument list)
            in_args = m.group(2) == "args"
            if m.group(3):
                items[-1][0][m.group(2)] = m.group(3)
        elif in_args and m:  # "- .key: v" opens an argument's map, ".key: v" continues it
            if m.group(1):
                items[-1][1].append({})
            if items[-1][1]:
                items[-1][1][-1][m.group(2)] = m.group(3)
    return items


def parse_amdgpu_notes(text: str) -> dict[str, dict]:
    """Per kernel, from the AMDGPU metadata (``llvm-readelf --notes`` of a code object, or the
    ``.amdgpu_metadata`` of ``-S`` output): the scalar keys of each map in the ``amdhsa.kernels`` list."""
    kernels: dict[str, dict] = {}
    for f, _ in _amdgpu_kernel_maps(text):
        if "name" not in f:
            continue
        num = lambda key: int(f.get(key, "0"))  # noqa: E731
        k = {"vgpr": num("vgpr_count"), "agpr": num("agpr_count"), "sgpr": num("sgpr_count"),
             "vgpr_spill": num("vgpr_spill_count"), "sgpr_spill": num("sgpr_spill_count"),
             "stack": num("private_segment_fixed_size"), "lds": num("group_segment_fixed_size"),
             "dynamic_stack": f.get("uses_dynamic_stack") == "true"}
        k["spill"] = k["vgpr_spill"] + k["sgpr_spill"]
        kernels[f["name"]] = k
    return kernels


def amdgpu_kernel_params(code_object: Path) -> dict[str, list[tuple[int, int]]]:
    """Each kernel's explicit parameters in an AMDGPU code object as (offset, size) bytes in their order: the
    ``.args`` of its ``amdhsa.kernels`` map (``llvm-readelf --notes``), the ``hidden_*`` ones the runtime appends left
    out: where ``hipModuleLaunchKernel`` copies ``kernelParams[i]`` to."""
    rc, notes = _run([str(_llvm_bin("llvm-readelf")), "--notes", str(code_object)])
    if rc != 0:
        raise RuntimeError(f"llvm-readelf --notes {code_object} failed ({rc}): {notes[-500:]}")
    return {keys["name"]: [(int(a["offset"]), int(a["size"])) for a in args
                           if not a.get("value_kind", "").startswith("hidden_")]
            for keys, args in _amdgpu_kernel_maps(notes) if "name" in keys}


def compile_hip(src: Path, arch: str, out_dir: Path, *, hip_root: Path | None = None, link: bool = True,
                extra_flags=()) -> CompileResult:
    """clang-22 ``src`` for ``arch`` (gfx90a, gfx942, gfx950) with warnings as errors (``-Wall -Werror``).

    With ``link`` and lld-22 + ocml/ockl bitcode present: ``<out_dir>/<stem>.<arch>.hsaco`` (beside it the
    generated ``<stem>.<arch>.oclc.cl/.bc``) and per-kernel numbers from its notes (``measured=True``);
    otherwise ``<stem>.<arch>.s`` only (``measured=False``, the log says what was missing).
    Raises :class:`ToolchainMissing` without clang-22 or the headers.
    """
    src, out_dir = Path(src), Path(out_dir)
    arch = str(arch)
    if arch not in HIP_ARCHS:
        raise SpecError([Reason("arch", arch, list(HIP_ARCHS), "compile one of the AMD targets tqgen generates for")],
                        "invalid HIP arch")
    clang = shutil.which("clang-22")
    if not clang:
        raise ToolchainMissing(f"clang-22 not on PATH (Debian's hipcc 5.2 knows no gfx942/gfx950); {INSTALL_HINT}")
    root = Path(hip_root) if hip_root is not None else _default_hip_root()
    if not (root / "include" / "hip" / "hip_runtime.h").is_file():
        raise ToolchainMissing(f"hip_root={str(root)!r} has no include/hip/hip_runtime.h; {INSTALL_HINT}")
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [clang, "-x", "hip", "-std=c++17", f"--offload-arch={arch}", "--cuda-device-only", "-nogpulib",
           f"--rocm-path={root}", "-isystem", str(root / "include"), "-O3", "-Wall", "-Werror"]
    if (_hip_major(root) or 7) < 7:  # clang 22 no longer defines it; the 6.x headers still read it
        cmd.append("-D__AMDGCN_WAVEFRONT_SIZE=64")
    cmd += list(extra_flags)

    missing = hip_link_missing(root) if link else ["link=False"]
    log = ""
    t0 = time.perf_counter()
    if not missing:
        oclc = out_dir / f"{src.stem}.{arch}.oclc.cl"
        oclc.write_text(oclc_source(arch))
        oclc_bc = oclc.with_suffix(".bc")
        rc, text = _run([clang, "-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}",
                         "-nogpulib", "-emit-llvm", "-c", str(oclc), "-o", str(oclc_bc)])
        log += text
        if rc != 0:
            return CompileResult(False, arch, log, cmd=cmd, seconds=time.perf_counter() - t0)
        out = out_dir / f"{src.stem}.{arch}.hsaco"
        for bc in (*device_bitcode(root), oclc_bc):
            cmd += ["-Xclang", "-mlink-builtin-bitcode", "-Xclang", str(bc)]
        cmd += ["--no-gpu-bundle-output", str(src), "-o", str(out)]
    else:
        out = out_dir / f"{src.stem}.{arch}.s"
        cmd += ["-S", str(src), "-o", str(out)]
        log += f"note: not linked ({', '.join(missing)}): registers/spills not measured\n"
    out.unlink(missing_ok=True)
    rc, text = _run(cmd)
    log += text
    if rc != 0 or not out.is_file():
        return CompileResult(False, arch, log, cmd=cmd, seconds=time.perf_counter() - t0)
    if missing:
        return CompileResult(True, arch, log, cmd=cmd, output=out, seconds=time.perf_counter() - t0)
    rc, notes = _run([str(_llvm_bin("llvm-readelf")), "--notes", str(out)])
    dt = time.perf_counter() - t0
    kernels = parse_amdgpu_notes(notes)
    if rc != 0 or not kernels:
        return CompileResult(False, arch, log + notes + "\nno AMDGPU kernel metadata in the code object\n",
                             cmd=cmd, output=out, seconds=dt)
    return CompileResult(True, arch, log, kernels=kernels, cmd=cmd, output=out, measured=True, seconds=dt,
                         **_summary(kernels, "vgpr", ("spill",)))
