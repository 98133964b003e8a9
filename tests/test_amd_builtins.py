"""The AMD builtins the HIP kernels call, as the CPU simulator models them and as LLVM reads them (no GPU).

The HIP platform's byte permute (``tqgen.lower_cuda._AMD_PRMT``) is one ``__builtin_amdgcn_perm`` (v_perm_b32) on a
selector spread from CUDA's nibbles to bytes; the simulator (``tqgen/cpu_sim/hip/hip_runtime.h``) models v_perm_b32 so
the simulated HIP kernels run that code. Two checks pin it: the model agrees with LLVM's own constant folding of
``llvm.amdgcn.perm`` (clang-22 for gfx942, operands and selectors random), and the AMD byte permute agrees with the
portable one (``_PORTABLE_PRMT``, CUDA's ``__byte_perm`` semantics, which the NVIDIA-side ``portable`` kind runs) on
random words and selectors, both compiled for the host against the simulator's header. Exact integer results: any
difference fails.
"""

import random
import re
import shutil
import subprocess
from pathlib import Path

import toolchain

from tqgen import cpu_sim
from tqgen.compile_cpp import _default_hip_root
from tqgen.lower_cuda import _AMD_PRMT, _PORTABLE_PRMT

HIP_H = Path(cpu_sim.__file__).parent / "hip" / "hip_runtime.h"
N = 256


def _need(what: str, ok: bool):
    if not ok:
        toolchain.missing(what)


def _cases(seed: int) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    return [(rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(32)) for _ in range(N)]


def _host_run(tmp_path: Path, body: str) -> list[int]:
    """Compile ``body`` (a C++ main printing one unsigned a line) for the host against the simulator's HIP header."""
    try:
        cxx = cpu_sim.find_cxx()
    except cpu_sim.SimUnavailable as e:
        _need(str(e), False)
    src, exe = tmp_path / "t.cpp", tmp_path / "t"
    src.write_text(f'#include "{HIP_H}"\n#include <cstdio>\n{body}')
    r = subprocess.run([cxx, "-x", "c++", "-std=c++20", "-O1", "-w", "-fno-threadsafe-statics", "-fno-exceptions", str(src),
                        "-x", "none", "-lstdc++", "-lm", "-o", str(exe)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return [int(x) for x in out.split()]


def test_simulated_v_perm_matches_llvm_constant_folding(tmp_path):
    """v_perm_b32's model (byte selects of {s0:s1}, sign replicas, 0x00 / 0xff) against LLVM's folding of
    llvm.amdgcn.perm: the selectors' bytes drawn from 0..15 so every kind of byte select appears."""
    clang = shutil.which("clang-22")
    root = _default_hip_root()
    _need("clang-22 and the HIP headers", bool(clang) and (root / "include" / "hip" / "hip_runtime.h").is_file())
    rng = random.Random(7)
    cases = [(a, b, int.from_bytes(bytes(rng.randrange(16) for _ in range(4)), "little")) for a, b, _ in _cases(1)]
    stores = "\n".join(f"  o[{i}] = __builtin_amdgcn_perm({a}u, {b}u, {s}u);" for i, (a, b, s) in enumerate(cases))
    src = tmp_path / "perm.hip"
    src.write_text(f"#include <hip/hip_runtime.h>\nextern \"C\" __global__ void k(volatile unsigned* o) {{\n{stores}\n}}\n")
    ll = tmp_path / "perm.ll"
    r = subprocess.run([clang, "-x", "hip", "-std=c++17", "--offload-arch=gfx942", "--cuda-device-only", "-nogpulib",
                        f"--rocm-path={root}", "-isystem", str(root / "include"), "-O2", "-S", "-emit-llvm", str(src),
                        "-o", str(ll)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    folded = [int(x) & 0xffffffff for x in re.findall(r"store volatile i32 (-?\d+)", ll.read_text())]
    assert len(folded) == len(cases), "LLVM did not fold every llvm.amdgcn.perm of constants"
    calls = "\n".join(f"  printf(\"%u\\n\", tqsim::amdgcn_perm({a}u, {b}u, {s}u));" for a, b, s in cases)
    model = _host_run(tmp_path, f"int main() {{\n{calls}\n}}\n")
    bad = [(hex(a), hex(b), hex(s), hex(m), hex(f)) for (a, b, s), m, f in zip(cases, model, folded) if m != f]
    assert not bad, f"{len(bad)} of {len(cases)} differ (s0, s1, sel, model, llvm): {bad[:5]}"


def test_amd_byte_permute_matches_the_portable_one(tmp_path):
    """tq_prmt for AMD (one v_perm_b32) against the portable definition: random words and selectors, bit 3 of
    each nibble and the selector's upper half included (both ignore them)."""
    amd = _AMD_PRMT.replace("tq_prmt", "tq_prmt_amd")
    portable = _PORTABLE_PRMT.replace("tq_prmt", "tq_prmt_portable")
    rows = ", ".join(f"{{{x}u, {y}u, {s}u}}" for x, y, s in _cases(2))
    body = f"""{amd}
{portable}
static const uint32_t C[][3] = {{{rows}}};
int main() {{
  for (const auto& c : C) printf("%u %u\\n", tq_prmt_amd(c[0], c[1], c[2]), tq_prmt_portable(c[0], c[1], c[2]));
}}
"""
    out = _host_run(tmp_path, body)
    pairs = list(zip(out[0::2], out[1::2]))
    assert len(pairs) == N
    bad = [(i, hex(a), hex(p)) for i, (a, p) in enumerate(pairs) if a != p]
    assert not bad, f"{len(bad)} of {N} differ (case, amd, portable): {bad[:5]}"
