"""tqgen.compile_cpp: CUDA (nvcc -cubin) and HIP (clang-22, no ROCm) compiles of small sample kernels, with
registers and spills read per kernel. Skips only where the toolchain is absent; CI installs it
(tools/hip_toolchain.sh) and sets CI_REQUIRE_HIP=1, which turns a missing toolchain into a failure.
"""

import shutil
import subprocess
import sys
import textwrap

import pytest

import toolchain

from tqgen.compile_cpp import (
    ToolchainMissing, compile_cuda, compile_hip, cuda_arch, find_nvcc, hip_link_missing, hip_root, parse_amdgpu_notes,
    parse_ptxas,
)
from tqgen.ir import SpecError, Target

HIP_ARCHS = ["gfx90a", "gfx942", "gfx950"]

CUDA_SAMPLE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>

__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

extern "C" __global__ void __launch_bounds__(128) sample(const __nv_bfloat16* __restrict__ a,
                                                         const __half* __restrict__ h, float* __restrict__ out) {
  const uint32_t* a32 = reinterpret_cast<const uint32_t*>(a);
  const int t = threadIdx.x;
  uint32_t fa[4] = {a32[t], a32[t + 128], a32[t + 256], a32[t + 384]};
  uint32_t fb[2] = {a32[t + 512], a32[t + 640]};
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  mma_bf16(d, fa, fb);
  float v = d[0] + d[1] + d[2] + d[3] + __half2float(h[t]) + __bfloat162float(a[t]);
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  out[blockIdx.x * blockDim.x + t] = v;
}
"""

# 64 live floats per thread, but (1024 threads, 2 blocks/SM) leaves 32 registers: ptxas must spill
CUDA_SPILL = r"""
extern "C" __global__ void __launch_bounds__(1024, 2) hungry(const float4* __restrict__ in, float* __restrict__ out) {
  float4 v[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) v[i] = in[threadIdx.x * 16 + i];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 16; ++i) s += v[i].x * v[15 - i].y + v[i].z * v[(i + 5) & 15].w;
#pragma unroll
  for (int i = 0; i < 16; ++i) out[threadIdx.x * 16 + i] = s * v[i].x + v[i].w;
}
"""

UNUSED = r"""
extern "C" __global__ void unused(float* out) {
  int never_used = 3;
  out[threadIdx.x] = 1.f;
}
"""

HIP_SAMPLE = r"""
#include <hip/hip_runtime.h>

__global__ void __launch_bounds__(256) sample(const _Float16* __restrict__ x, float* __restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? (float)x[i] : 0.f;
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor(v, m, 32);
  if (i < n) y[i] = v + sqrtf(v) + __expf(v);  // ocml calls: resolved only by linking
}
"""

# 192 live floats per lane; a 1024-thread block leaves 128 VGPRs: the register allocator must spill
HIP_SPILL = r"""
#include <hip/hip_runtime.h>

__global__ void __launch_bounds__(1024) hungry(const float4* __restrict__ in, float* __restrict__ out) {
  float4 v[48];
#pragma unroll
  for (int i = 0; i < 48; ++i) v[i] = in[threadIdx.x * 48 + i];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 48; ++i) s += v[i].x * v[47 - i].y + v[i].z * v[(i + 5) % 48].w;
#pragma unroll
  for (int i = 0; i < 48; ++i) out[threadIdx.x * 48 + i] = s * v[i].x + v[i].w;
}
"""


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def _hip_missing() -> list[str]:
    """What compile_hip needs but this machine lacks (clang-22, headers, link pieces)."""
    missing = [] if shutil.which("clang-22") else ["clang-22"]
    try:
        missing += hip_link_missing(hip_root())
    except ToolchainMissing as e:
        missing.append(str(e))
    return missing


@pytest.fixture(scope="module")
def nvcc():
    try:
        return find_nvcc()
    except ToolchainMissing as e:
        pytest.skip(f"CUDA toolchain absent: {e}")


@pytest.fixture(scope="module")
def hip():
    """The HIP root; skips when clang-22 or the headers are missing (tools/hip_toolchain.sh installs both)."""
    if not shutil.which("clang-22"):
        pytest.skip("clang-22 absent: run `bash tools/hip_toolchain.sh`")
    try:
        return hip_root()
    except ToolchainMissing as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def hip_linked(hip):
    missing = hip_link_missing(hip)
    if missing:
        pytest.skip(f"cannot link HIP code objects (no register/spill numbers): missing {', '.join(missing)}")
    return hip


def test_toolchain_present_in_ci():
    """CI installs the toolchain; there a missing piece is a failure, not a silent skip of every test below."""
    missing = _hip_missing()
    try:
        find_nvcc()
    except ToolchainMissing as e:
        missing.append(str(e))
    if not missing:
        return
    toolchain.missing("part of the C++ toolchain (" + "; ".join(missing) + ")")


def test_imports_no_torch_or_triton():
    code = "import sys, tqgen.compile_cpp; assert not {'torch', 'triton'} & set(sys.modules), sys.modules.keys()"
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------- parsing (no toolchain)

def test_parse_ptxas_per_kernel():
    log = textwrap.dedent("""\
        ptxas info    : 0 bytes gmem
        ptxas info    : Compiling entry function '_Z2kbPf' for 'sm_90'
        ptxas info    : Function properties for _Z2kbPf
            0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Used 128 registers, used 1 barriers, 1024 bytes smem
        ptxas info    : Compiling entry function 'ka' for 'sm_80'
        ptxas info    : Function properties for ka
            168 bytes stack frame, 164 bytes spill stores, 184 bytes spill loads
        ptxas info    : Used 32 registers, used 0 barriers, 200 bytes cumulative stack size, 368 bytes cmem[0]
        ptxas info    : Function properties for _Z6helperf
            32 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
        """)
    kernels, functions = parse_ptxas(log)
    assert kernels == {
        "_Z2kbPf": {"registers": 128, "spill_stores": 0, "spill_loads": 0, "stack": 0, "barriers": 1, "smem": 1024,
                    "cmem0": 0},
        "ka": {"registers": 32, "spill_stores": 164, "spill_loads": 184, "stack": 200, "barriers": 0, "smem": 0,
               "cmem0": 368},
    }
    assert functions == {"_Z6helperf": {"stack": 32, "spill_stores": 8, "spill_loads": 8}}


def test_parse_amdgpu_notes_skips_args():
    notes = textwrap.dedent("""\
        AMDGPU Metadata:
            ---
        amdhsa.kernels:
          - .agpr_count:     4
            .args:
              - .name:           x
                .offset:         0
                .size:           8
            .group_segment_fixed_size: 512
            .name:           _Z1kPf
            .private_segment_fixed_size: 16
            .sgpr_count:     12
            .sgpr_spill_count: 0
            .uses_dynamic_stack: false
            .vgpr_count:     7
            .vgpr_spill_count: 3
          - .name:           other
            .vgpr_count:     9
        amdhsa.target:   amdgcn-amd-amdhsa--gfx942
        """)
    k = parse_amdgpu_notes(notes)
    assert k["_Z1kPf"] == {"vgpr": 7, "agpr": 4, "sgpr": 12, "vgpr_spill": 3, "sgpr_spill": 0, "stack": 16,
                           "lds": 512, "dynamic_stack": False, "spill": 3}
    assert k["other"]["vgpr"] == 9 and set(k) == {"_Z1kPf", "other"}


def test_arch_spellings_and_errors(tmp_path, monkeypatch):
    assert cuda_arch("sm80") == cuda_arch("sm_80") == "sm_80" and cuda_arch(Target.SM90) == "sm_90"
    with pytest.raises(SpecError, match="sm<NN>"):
        cuda_arch("gfx942")
    with pytest.raises(SpecError, match="gfx90a, gfx942, gfx950"):
        compile_hip(tmp_path / "k.hip", "sm90", tmp_path)
    monkeypatch.setenv("TQGEN_HIP_ROOT", str(tmp_path / "nowhere"))
    with pytest.raises(ToolchainMissing, match="tools/hip_toolchain.sh"):
        hip_root()
    monkeypatch.setenv("TQGEN_NVCC", str(tmp_path / "no-nvcc"))
    with pytest.raises(ToolchainMissing, match="TQGEN_NVCC"):
        find_nvcc()


# ------------------------------------------------------------------------------------------- CUDA

@pytest.mark.parametrize("arch", ["sm80", "sm90"])
def test_cuda_sample_compiles_without_spills(nvcc, tmp_path, arch):
    r = compile_cuda(_write(tmp_path, "sample.cu", CUDA_SAMPLE), arch, tmp_path / "out")
    assert r.ok, r.log
    assert r.output == tmp_path / "out" / f"sample.{arch}.cubin" and r.output.is_file()
    assert r.measured and set(r.kernels) == {"sample"}
    assert r.registers > 0 and r.kernels["sample"]["registers"] == r.registers
    assert r.spills == 0 and r.stack == 0, r.log


def test_cuda_spills_detected(nvcc, tmp_path):
    src = _write(tmp_path, "hungry.cu", CUDA_SPILL)
    r = compile_cuda(src, "sm90", tmp_path)
    assert r.ok, r.log
    k = r.kernels["hungry"]
    assert r.registers <= 32 and k["spill_stores"] > 0 and k["spill_loads"] > 0
    assert r.spills == k["spill_stores"] + k["spill_loads"] and r.stack > 0
    # spills are reported, not fatal, unless asked for
    strict = compile_cuda(src, "sm90", tmp_path, extra_flags=("-Xptxas", "-warn-spills"))
    assert not strict.ok and "Registers are spilled" in strict.log and strict.output is None


def test_cuda_warning_is_an_error(nvcc, tmp_path):
    r = compile_cuda(_write(tmp_path, "unused.cu", UNUSED), "sm80", tmp_path)
    assert not r.ok and not r.measured and r.output is None
    assert '"never_used" was declared but never referenced' in r.log


# -------------------------------------------------------------------------------------------- HIP

@pytest.mark.parametrize("arch", HIP_ARCHS)
def test_hip_sample_compiles(hip, tmp_path, arch):
    r = compile_hip(_write(tmp_path, "sample.hip", HIP_SAMPLE), arch, tmp_path)
    assert r.ok, r.log
    assert r.output.is_file()
    if hip_link_missing(hip):
        assert r.output.suffix == ".s" and not r.measured and r.registers is None
        return
    assert r.output == tmp_path / f"sample.{arch}.hsaco" and r.measured
    (name,) = r.kernels
    assert "sample" in name  # mangled C++ name
    k = r.kernels[name]
    assert r.registers == k["vgpr"] > 0 and k["sgpr"] > 0
    assert r.spills == 0 and r.stack == 0 and not k["dynamic_stack"], r.kernels


def test_hip_unlinked_is_assembly_only(hip, tmp_path):
    r = compile_hip(_write(tmp_path, "sample.hip", HIP_SAMPLE), "gfx942", tmp_path, link=False)
    assert r.ok, r.log
    assert r.output.suffix == ".s" and not r.measured and r.registers is None and r.kernels == {}
    assert "not linked" in r.log


def test_hip_spills_detected(hip_linked, tmp_path):
    r = compile_hip(_write(tmp_path, "hungry.hip", HIP_SPILL), "gfx942", tmp_path)
    assert r.ok, r.log
    (k,) = r.kernels.values()
    assert k["vgpr_spill"] > 0 and r.spills == k["spill"] and r.stack > 0


def test_hip_warning_is_an_error(hip, tmp_path):
    src = _write(tmp_path, "unused.hip", "#include <hip/hip_runtime.h>\n" + UNUSED)
    r = compile_hip(src, "gfx950", tmp_path)
    assert not r.ok and r.output is None
    assert "unused variable 'never_used'" in r.log
