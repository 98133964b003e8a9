"""The C++ kernels' semantics on the CPU (tqgen.cpu_sim: a rendered source compiled for the host against a simulator of
the GPU device API): the AMD (HIP) variants with 64-lane wavefronts, as AMD's gfx9 GPUs run them (two 32-lane logical
warps a wavefront, votes over both, a divergent wavefront's vote per branch), and the CUDA variants with their inline
PTX translated into the simulator's functions (mma.sync and movmatrix as warp collectives, the cp.async pipeline, the
shared-memory pair tables), 32-lane warps. The same checks as the GPU tests (tests/cpp_checks.py; the tolerances are
stated there) on shorter sequences: store bytes by compare_store's rule, decode within tqgen.testing.DECODE_TOL of the
reference, dequant within 1e-5 (fp32) / one rounding (bf16, fp16), the merges against float64, the balanced decode's
plan. Needs a host clang (clang-22: CI installs it with tools/hip_toolchain.sh); skipped without one, except where
CI_REQUIRE_HIP=1 (CI), where its absence fails."""

import pytest
import torch

import cpp_checks as cc
import toolchain
from cpp_checks import (BALANCED_CASES, Runner, balanced_lens, check_balanced_decode, check_decode_past_64_splits,
                        check_dequant, check_merge_kernels, check_moving_maximum, check_store_rows,
                        check_store_special_values, check_unwritten_slots, check_variant)
from tqgen import LayoutSpec, cpu_sim
from tqgen.build import default_matrix
from tqgen.ir import Backend, Target, Vendor
from tqgen.lower_cuda import cuda_options, dense_rotation, make_variant
from tqgen.testing import width_spec

try:
    cpu_sim.find_cxx()
    _NO_CXX = None
except cpu_sim.SimUnavailable as e:
    _NO_CXX = str(e)
    if toolchain.required():
        raise RuntimeError(f"{toolchain.HIP}=1 but {e}") from None  # at import: every test here would skip
pytestmark = pytest.mark.skipif(_NO_CXX is not None, reason=_NO_CXX or "")

AMD = [v for v in default_matrix()[0] if v.backend is Backend.HIP]
GFX942 = [v for v in AMD if v.target is Target.GFX942]


def _body(v) -> str:
    """A variant's source without its banner lines (the variant id and target): what compiles."""
    from tqgen.build import source_name, variant_dir
    return "\n".join(line for line in (variant_dir(v) / source_name(v)).read_text().splitlines()
                     if not line.startswith("// "))


# one variant a distinct source: the Lloyd-Max variants of gfx90a / gfx942 / gfx950 render the same code (their
# options agree), fp8 keys differ by format (fnuz on gfx942, OCP e4m3fn on gfx950; gfx90a has none)
DISTINCT = list({_body(v): v for v in reversed(AMD)}.values())[::-1]


def _cpp(preset, layout, head_dim=128, target="gfx942", **kw):
    """The C++ variant of a preset on a target (gfx942 by default), fp8 keys in its native format."""
    from tqgen.build import preset_spec_for_target
    return make_variant(preset_spec_for_target(preset, Target.parse(target, "target"), layout=layout,
                                               head_dim=head_dim, **kw), target)


HIP_ROTATED_FP8 = [_cpp("k8v4", "soa", rotation="hadamard"), _cpp("k8v4", "aos", target="gfx950", rotation="rht",
                                                                 rotation_seed=5)]
HIP_D64 = [_cpp(p, "soa", 64) for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc")] + [_cpp("3bit_nc", "aos", 64)]
SHAPES = cc.SIM_SHAPES
HIP_BLOCKS = [_cpp("k8v4", "soa", block_size=32), _cpp("k3v4_nc", "aos", 64, block_size=64)]
HIP_NON_PRESET = [make_variant(width_spec(*w), "gfx942") for w in (("aos", 2, 4), ("soa", 4, 8), ("soa", 4, 3, 64))]
HIP_D256 = [_cpp("4bit_nc", "aos", 256), _cpp("k8v4", "soa", 256)]
#: the dense rotation's store (session 51: m16n8k16 products with Πᵀ's parts, tq_dense_rotate): sm90 SoA 4bit_nc,
#: AoS k3v4_nc (3-bit codes from the rotated keys), rotated fp8 keys (±inf saturating as the reference's)
DENSE_STORE = [v for v in cc.D96 if dense_rotation(v.spec) and (v.spec.layout.value, v.spec.key_bits, v.spec.value_bits)
               in (("soa", 4, 4), ("aos", 3, 4), ("soa", 8, 4))]
HIP_D96 = [_cpp("4bit_nc", "aos", 96, rotation="orthogonal"), _cpp("k3v4_nc", "soa", 96, "gfx90a", rotation="orthogonal"),
           _cpp("k8v4", "soa", 96, "gfx950"), _cpp("3bit_nc", "aos", 96, "gfx950", rotation="orthogonal")]


_LOADED: dict = {}
_BUILDS: dict = {}  # variant id -> the background build of its library (the _prebuild fixture)


def _load(v, wave, defines):
    key = (v.id, wave, defines)
    if key not in _LOADED:
        if not wave and not defines and v.id in _BUILDS:
            _BUILDS[v.id].result()  # built in the background: load_sim_variant finds it in the cache
        _LOADED[key] = cpu_sim.load_sim_variant(v, wave, defines)
    return _LOADED[key]


@pytest.fixture(scope="module", autouse=True)
def _prebuild(request):
    """Compile the selected tests' variants in one background thread, in the order the tests run, while the first ones
    run (about a third of this module's time is clang's)."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(1)
    for item in request.session.items:
        v = getattr(item, "callspec", None) and item.callspec.params.get("variant")
        if item.module is request.module and v is not None and v.id not in _BUILDS:
            _BUILDS[v.id] = pool.submit(cpu_sim.build_sim, v)
    yield
    for f in _BUILDS.values():
        f.cancel()
    pool.shutdown(wait=True)


def sim_runner(wave: int | None = None, defines: tuple[str, ...] = ()) -> Runner:
    return cc.sim_runner(lambda v: _load(v, wave, defines))


def test_every_amd_variant_is_covered():
    """The build generates 22 AMD variants (3 targets; gfx90a has no fp8); DISTINCT holds one of each distinct source
    (10: the 6 Lloyd-Max sources shared by the three targets, fp8 keys in two formats x two layouts), so running
    DISTINCT runs the code of every one of them."""
    assert {str(v.target) for v in AMD} == {"gfx90a", "gfx942", "gfx950"}
    assert len(AMD) == 22 and all(v.target.info.vendor is Vendor.AMD for v in AMD)
    assert len(DISTINCT) == 10 and {_body(v) for v in AMD} == {_body(v) for v in DISTINCT}


@pytest.mark.parametrize("variant", [GFX942[2], HIP_D64[3]], ids=lambda v: v.id)
def test_wave32_runs_the_same_kernels(variant):
    """The same sources with 32-lane wavefronts (an NVIDIA warp's width: one logical warp a wavefront) pass the same
    checks: the 64-lane results above do not hinge on the simulator's wavefront size."""
    check_variant(sim_runner(32), variant, SHAPES[2:4])


def test_ucontext_fibers_match_the_asm_switch():
    """The portable fiber switch (ucontext, for hosts other than x86-64) runs a variant to the same results: the
    outputs are bit-identical to the x86-64 switch's (the switch moves no data)."""
    v = GFX942[3]
    spec = v.spec
    from tqgen import reference as ref
    from tqgen.testing import Case
    outs = []
    for defines in ((), ("TQSIM_UCONTEXT",)):
        kern = sim_runner(64, defines).load(v)
        case = Case(spec, [300, 37], 2, 4, seed=3).build("cpu")
        cache = ref.allocate(spec, case["num_blocks"], 2, "cpu")
        kern.store(case["key"], case["value"], cache, case["slot_mapping"])
        outs.append((cache, kern.decode(case["query"], cache, case["block_table"], case["seq_lens"])))
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])


# ------------------------------------------------------------------------------ the GPU tests' checks
# each over HIP variants (64-lane wavefronts) and CUDA ones (tests/test_cuda_gpu.py's lists; 32-lane warps)
@pytest.mark.parametrize("variant", DISTINCT + HIP_ROTATED_FP8 + HIP_D64 + cc.CUDA + cc.PORTABLE + cc.ROTATED_FP8
                         + cc.D64 + cc.GROUPED, ids=lambda v: v.id)
def test_variant_matches_reference(variant):
    check_variant(sim_runner(), variant, SHAPES)


@pytest.mark.parametrize("variant", cc.NON_PRESET + HIP_NON_PRESET, ids=lambda v: v.id)
def test_non_preset_widths_match_reference(variant):
    """Key / value widths no preset has, through the same checks: the options and value plans chosen by field
    (tests/test_lower_cuda.py renders every width on every C++ target)."""
    assert variant.spec.preset_name is None
    check_variant(sim_runner(), variant, SHAPES)


@pytest.mark.parametrize("variant", cc.D256[1::3] + HIP_D256, ids=lambda v: v.id)
def test_head_dim_256_matches_reference(variant):
    """head_dim 256 (8 elements a lane, 16 value m-tiles, the pipeline in dynamic shared memory on sm90): the same
    checks on sm90 AoS k8v4, SoA k3v4_nc, AoS 3bit_nc and gfx942 AoS 4bit_nc, SoA k8v4 (tests/test_cuda_gpu.py runs
    every preset x layout on the GPU)."""
    assert variant.spec.head_dim == 256
    check_variant(sim_runner(), variant, SHAPES)


@pytest.mark.parametrize("variant", cc.D96 + HIP_D96, ids=lambda v: v.id)
def test_head_dim_96_matches_reference(variant):
    """head_dim 96 (Phi-3-mini's: 3 elements a lane, 6 chunks of 16, 3 store lanes a row, the merges' 3-element
    lanes; 3-bit values' 4.5-byte eighths, by the line loads' funnel-shifted words since session 53): sm90 fp8 keys unrotated (store, decode, dequant) and every rotating preset
    with the orthogonal rotation (the store's keys rotated by m16n8k16 products, session 51; the decode's query by the
    launcher; the dequant refuses, naming Triton's), gfx942 AoS 4bit_nc, gfx90a SoA k3v4_nc, gfx950 SoA k8v4 and AoS
    3bit_nc (the products by the shuffle contract): the same checks."""
    assert variant.spec.head_dim == 96
    check_variant(sim_runner(), variant, SHAPES)


HIP_D80 = [_cpp("4bit_nc", "aos", 80, "gfx942", rotation="orthogonal"), _cpp("k8v4", "soa", 80, "gfx950"),
           _cpp("3bit_nc", "soa", 80, "gfx90a", rotation="orthogonal")]


@pytest.mark.parametrize("variant", cc.D80 + HIP_D80, ids=lambda v: v.id)
def test_head_dim_80_matches_reference(variant):
    """head_dim 80 (Phi-2's): the decode (session 54: 5 chunks of 16, the query's 3 elements a lane on lanes 0-26, the
    rows merge's 4 on lanes 0-19; 3-bit keys' 7.5-byte quarters and 3-bit values' 3.75-byte eighths read by
    lower_cuda.thread_piece's bytes and shifted), the store and rows dequant (session 55: rows of 5 lanes of 16
    elements, 6 a warp, lanes 30 / 31 idle; 3-bit codes in 6-byte chunks; the dense rotation's 2 m-tiles x 2 groups of
    5 n-tiles on 4 warps); sm90 every preset x layout and two widths no preset has, gfx942 AoS 4bit_nc, gfx950 SoA
    k8v4, gfx90a SoA 3bit_nc."""
    assert variant.spec.head_dim == 80
    check_variant(sim_runner(), variant, SHAPES)


@pytest.mark.parametrize("variant", cc.BLOCKS + HIP_BLOCKS, ids=lambda v: v.id)
def test_block_sizes_match_reference(variant):
    """Pages of 32-128 tokens (the default matrix's are 16): the same checks."""
    assert variant.spec.block_size > 16
    check_variant(sim_runner(), variant, SHAPES)


@pytest.mark.parametrize("variant", DISTINCT + HIP_ROTATED_FP8 + HIP_D64[1:2] + cc.SM90 + cc.PORTABLE + cc.ROTATED_FP8
                         + DENSE_STORE + HIP_D96[:2] + cc.D80_STORE[:2] + HIP_D80[:1] + cc.ROUNDS, ids=cc.rounds_id)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_store_special_values(variant, dtype):
    check_store_special_values(sim_runner(), variant, dtype)


@pytest.mark.parametrize("variant", cc.ROUNDS, ids=cc.rounds_id)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_store_rounds_match_reference(variant, dtype):
    """The dense store's rounds (CudaOptions.store_rounds: every round's rows through one rotation, then a round at a
    time back): 210 rows in 3 blocks of 96 (head_dim 80, 4 rounds) or 80 (96, 2 rounds), the last partial, a padding
    slot, against the reference store (compare_store's rule)."""
    check_store_rows(sim_runner(), variant, dtype)


@pytest.mark.parametrize("target", ["gfx942", "sm90"])
@pytest.mark.parametrize("head_dim", [128, 64, 96, 80])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_merge_kernels_match_the_log_sum_exp(target, head_dim, dtype):
    rot = {"rotation": "orthogonal"} if head_dim in (96, 80) else {}  # (3 elements a lane in the rows merge)
    check_merge_kernels(sim_runner(), _cpp("4bit_nc", "soa", head_dim, target, **rot), dtype,
                        shapes=cc.SIM_MERGE_SHAPES)


@pytest.mark.parametrize("variant", [_cpp("3bit_nc", "soa"), _cpp("4bit_nc", "soa", 64)] + cc.PAST_64,
                         ids=lambda v: v.id)
def test_decode_past_64_splits(variant):
    check_decode_past_64_splits(sim_runner(), variant, lens=cc.SIM_PAST_64_LENS)


@pytest.mark.parametrize("variant", [_cpp("3bit_nc", "soa"), _cpp("k8v4", "aos"), _cpp("4bit_nc", "soa", 64),
                                     _cpp("k3v4_nc", "aos", 64)] + cc.MOVING_MAX, ids=lambda v: v.id)
@pytest.mark.parametrize("ramp", ["rising", "falling"])
def test_decode_follows_a_moving_maximum(variant, ramp):
    """For HIP the lazy maximum's vote (__any) spans the wavefront's two logical warps, two splits with their own
    maxima: a split whose maximum moved makes its neighbour take the rescale path too (harmless, and run)."""
    check_moving_maximum(sim_runner(), variant, ramp, lens=cc.SIM_MOVING_LENS)


@pytest.mark.parametrize("variant", [_cpp("3bit_nc", "soa"), _cpp("4bit_nc", "aos"), _cpp("k8v4", "aos"),
                                     _cpp("k3v4_nc", "soa", 64)] + cc.UNWRITTEN, ids=lambda v: v.id)
def test_decode_ignores_unwritten_slots(variant):
    check_unwritten_slots(sim_runner(), variant)


@pytest.mark.parametrize("variant", [_cpp("3bit_nc", "soa"), _cpp("k8v4", "aos"), _cpp("4bit_nc", "soa", 64)]
                         + cc.BALANCED, ids=lambda v: v.id)
def test_balanced_decode_deals_splits_by_length(variant):
    hk = 3 if variant.options.head_groups and variant.options.decode_warps == 4 else 2
    check_balanced_decode(sim_runner(), variant, [(balanced_lens(name, cc.SIM_BALANCED_SCALE), g, counts)
                                                  for name, g, counts in BALANCED_CASES], hk=hk)


# the dequant's other kernels for AMD (its default, the rows kernel at one round, runs above): two rounds and the lane
# kernel (dequant_rows=0); for CUDA the GPU tests' list (1, 2 and 4 rounds, AMD's options through the portable path)
HIP_DEQUANT = [make_variant(v.spec, v.target, options=cuda_options(v.spec, v.target).with_changes([f"dequant_rows={r}"]))
               for v, r in ((GFX942[3], 2), (GFX942[4], 0), (HIP_D64[2], 2), (HIP_D64[4], 0), (HIP_ROTATED_FP8[0], 0))]


@pytest.mark.parametrize("variant", HIP_DEQUANT + cc.DEQUANT_ROWS, ids=lambda v: f"{v.id}-rows{v.options.dequant_rows}")
def test_dequant_kernels_match_reference(variant):
    check_dequant(sim_runner(), variant, shapes=cc.SIM_DEQUANT_SHAPES)


@pytest.mark.parametrize("variant", cc.DQ_ROUNDS, ids=cc.rounds_id)
def test_dequant_rounds_match_reference(variant):
    """The dense rows dequant's rounds (CudaOptions.dequant_rounds: bf16 / fp16 outputs' rows of every round through
    one rotation, fp32 outputs one round a warp and the launcher's grid per output type) against the reference:
    check_dequant's tolerances (one bf16 / fp16 rounding; fp32 1e-5), zeros past each length and up to a longer
    max_len, partial blocks and rounds past the end."""
    check_dequant(sim_runner(), variant, shapes=cc.SIM_DEQUANT_SHAPES)


# ------------------------------------------------------------------------------ the simulator itself
PRIMITIVES = r"""
#include <hip/hip_runtime.h>
extern "C" __global__ void prims(int* out, int live) {
  const int t = threadIdx.x, lane = t & 31;
  int* o = out + 8 * (t + blockDim.x * blockIdx.x);
  o[0] = __shfl_xor(t, 1, 32);
  o[1] = __shfl(t, lane - 1, 32);          // source -1: lane 31 of the same logical warp (modulo the width)
  o[2] = __any(t == 40);                   // the whole wavefront votes
  if (t & 1) o[3] = __any(t == 3);         // a divergent wavefront votes per branch
  else o[3] = __any(t == 2);
  __shared__ int s[256];
  s[t] = t + 1000 * blockIdx.x;
  __syncthreads();
  o[4] = s[(t + 1) % blockDim.x];          // every thread's write is seen after the barrier
  if (t >= live) return;                   // threads exit early; the barrier below counts only the rest
  o[5] = __shfl(t, lane + 1, 32);          // from an exited lane: the poison pattern
  __syncthreads();
  o[6] = (int)(blockIdx.x + 10 * gridDim.x + 100 * blockDim.x);
}
"""


@pytest.mark.parametrize("wave", [64, 32])
def test_simulator_primitives(wave):
    """Shuffles within 32-lane segments (a negative source wraps modulo the width), votes over the wavefront (64 lanes:
    both logical warps; per branch when divergent), __syncthreads (shared memory seen; threads that exited are not
    waited for), a shuffle from an exited lane (the poison NaN pattern), blockIdx / gridDim / blockDim; a second
    block sees its own shared writes (blocks run in turn)."""
    import ctypes

    from tqgen.cuda_launch import KernelParams

    drv = cpu_sim.SimDriver(cpu_sim.build_source(PRIMITIVES, "test-primitives", wave))
    threads, live, blocks = 96, 70, 2
    out = torch.full((blocks, threads, 8), -1, dtype=torch.int32)
    drv.launch(drv.function("prims"), (blocks, 1, 1), threads, KernelParams("Pi"), (out.data_ptr(), live), 0)
    poison = ctypes.c_int32(0x7FBADBAD).value
    for b in range(blocks):
        for t in range(threads):
            o, lane, w0 = out[b, t].tolist(), t & 31, t - t % wave
            wave_lanes = range(w0, min(w0 + wave, threads))
            assert o[0] == t ^ 1
            assert o[1] == t - lane + (lane - 1) % 32
            assert o[2] == int(40 in wave_lanes), (t, wave)
            same_branch = [u for u in wave_lanes if u % 2 == t % 2]
            assert o[3] == (int(3 in same_branch) if t % 2 else int(2 in same_branch)), (t, wave)
            assert o[4] == (t + 1) % threads + 1000 * b
            if t < live:
                src = t - lane + (lane + 1) % 32
                assert o[5] == (src if src < live else poison), t
                assert o[6] == b + 10 * blocks + 100 * threads
            else:
                assert o[5] == -1 and o[6] == -1


def test_simulator_reports_bad_launches():
    """What cannot run says so: a block past 1024 threads, a shuffle width that is not a power of two, a variant of
    another backend, a CUDA variant with 64-lane wavefronts, an unknown kernel name."""
    from tqgen.cuda_launch import KernelParams

    src = PRIMITIVES.replace("__shfl_xor(t, 1, 32)", "__shfl_xor(t, 1, 24)")
    drv = cpu_sim.SimDriver(cpu_sim.build_source(src, "test-bad-width", 64))
    buf = torch.zeros(64, 8, dtype=torch.int32)
    with pytest.raises(RuntimeError, match="width 24"):
        drv.launch(drv.function("prims"), (1, 1, 1), 64, KernelParams("Pi"), (buf.data_ptr(), 64), 0)
    with pytest.raises(RuntimeError, match="1..1024"):
        drv.launch(drv.function("prims"), (1, 1, 1), 2048, KernelParams("Pi"), (buf.data_ptr(), 64), 0)
    with pytest.raises(RuntimeError, match="no kernel 'nope'"):
        drv.function("nope")
    from tqgen.lower_triton import make_variant as make_triton
    with pytest.raises(ValueError, match="backend cuda or hip"):
        cpu_sim.build_sim(make_triton(LayoutSpec.from_preset("4bit_nc"), "sm90"))
    with pytest.raises(ValueError, match="32-lane warps"):
        cpu_sim.load_sim(LayoutSpec.from_preset("4bit_nc"), "sm90", wave=64)



@pytest.mark.parametrize("mutation", ["store", "decode", "pipeline"])
def test_simulator_catches_a_wrong_kernel(mutation):
    """The checks are not vacuous on the simulator: the sm90 3bit_nc SoA kernel.cu with its value zero point stored
    0.1 % high (store), with P's 8x8 transpose before P·V left out (decode: tq_trans8 returns its input), or waiting
    for one cp.async group less before a tile's reads (pipeline: the simulator lands a copy at the wait that covers
    it, so the tile reads the stage's old bytes) fails check_variant, where the source as generated passes it
    (test_cuda_variant_matches_reference)."""
    from tqgen.build import source_name, variant_dir

    v = make_variant(LayoutSpec.from_preset("3bit_nc", layout="soa"), "sm90")
    src = (variant_dir(v) / source_name(v)).read_text()
    old, new = {"store": ("tq_store_f16(at(L.vz), 0, lo);", "tq_store_f16(at(L.vz), 0, lo * 1.001f);"),
                "decode": ("pb[0] = tq_trans8(pt[0], lane);", "pb[0] = pt[0];"),
                "pipeline": ("tq_cp_async_wait<TQ_STAGES - 2>();", "tq_cp_async_wait<TQ_STAGES - 1>();")}[mutation]
    assert src.count(old) == 1
    kern = cpu_sim.load_sim_variant(v, source=src.replace(old, new))
    run = cc.sim_runner(lambda _v: kern)
    with pytest.raises(AssertionError, match="v_zero differs" if mutation == "store" else "decode rel err"):
        check_variant(run, v, SHAPES[2:4])


# ------------------------------------------------------------------------------ schedules: the race check
# Other schedules than the default's (every thread runs until it blocks, in index order, then all resolve together):
# each wavefront alone through its own shuffles, votes and warp collectives until a __syncthreads (as a GPU's warps run
# ahead of each other), wavefronts and threads in reverse or shuffled order, shared memory poisoned (0xff) before every
# block. A correct kernel's outputs do not depend on the schedule: bit-identical, since no kernel has atomics and every
# sum runs in a fixed order
SCHEDULES = [("forward", 0), ("reverse", 0), ("shuffle", 7)]
SCHEDULE_SHAPES = cc.SIM_SCHEDULE_SHAPES
LANE_DEQUANT = make_variant(LayoutSpec.from_preset("3bit_nc", layout="aos"), "sm90", options=cuda_options(
    LayoutSpec.from_preset("3bit_nc", layout="aos"), Target.SM90).with_changes(["dequant_rows=0"]))


def _outputs_by_schedule(kern, variant, shape, schedules=SCHEDULES) -> tuple[dict, list[dict]]:
    """kernel_outputs under the default schedule, then under each of ``schedules`` by wavefront with poisoned blocks."""
    run = cc.sim_runner(lambda _v: kern)
    want, got = cc.kernel_outputs(run, variant, shape), []
    for order, seed in schedules:
        with kern.driver.schedule(order, seed, poison_blocks=True, by_wavefront=True):
            got.append(cc.kernel_outputs(run, variant, shape))
    return want, got


@pytest.mark.parametrize("variant", DISTINCT + HIP_D64 + HIP_ROTATED_FP8 + cc.SM90 + cc.PORTABLE + cc.ROTATED_FP8 + cc.D64
                         + cc.GROUPED + [LANE_DEQUANT] + DENSE_STORE[:1] + HIP_D96[:1]
                         + [_cpp("3bit_nc", "soa", 96, rotation="orthogonal")] + cc.D80_STORE[1:2] + cc.ROUNDS[:1]
                         + cc.DQ_ROUNDS[1:2],
                         ids=cc.rounds_id)
def test_schedules_write_the_same_bytes(variant):
    """The race check: every kernel (store bf16 / fp16, decode plain / sinks + window / balanced, merge, dequant rows
    or lane kernel) writes the same bytes under the default schedule and under each wavefront-at-a-time schedule
    (forward, reverse, shuffled) with shared memory poisoned before every block, so no output hangs on which warp ran
    first or on shared memory a block did not write."""
    kern = sim_runner().load(variant)
    for shape in SCHEDULE_SHAPES:
        want, got = _outputs_by_schedule(kern, variant, shape)
        for (order, _), out in zip(SCHEDULES, got):
            diff = [k for k in want if not torch.equal(want[k], out[k])]
            assert not diff, f"{variant.id}, shape {shape[:3]}, {order} by wavefront: {diff} differ"


@pytest.mark.parametrize("target", ["sm90", "gfx942"])
def test_schedules_catch_a_missing_barrier(target):
    """The race check is not vacuous: the 4bit_nc SoA decode without the __syncthreads between its pair table's fill
    (each thread its entries) and the tile loop's lookups (any entry) reads entries other warps have not yet written
    (the poison) under a wavefront-at-a-time schedule, and its outputs change; under the default schedule the query
    fragments' shuffles stop every thread before any lookup, as the barrier would, and the race goes unseen there
    (why the check needs the other schedules)."""
    from tqgen.build import source_name, variant_dir

    v = _cpp("4bit_nc", "soa", target=target)
    src = (variant_dir(v) / source_name(v)).read_text()
    old = "__syncthreads();  // qs is dead from here (the pipeline reuses it)"
    assert src.count(old) == 1
    kern = cpu_sim.load_sim_variant(v, source=src.replace(old, ";"))
    shape = SCHEDULE_SHAPES[0]
    want, _ = _outputs_by_schedule(sim_runner().load(v), v, shape, [])
    default, got = _outputs_by_schedule(kern, v, shape, SCHEDULES[:2])
    assert all(torch.equal(want[k], default[k]) for k in want)  # unseen by the default schedule
    for (order, _), out in zip(SCHEDULES, got):
        assert not torch.equal(want["decode"], out["decode"]), f"{order} by wavefront: the race went unseen"
        assert torch.equal(want["cache"], out["cache"])  # the store has no such race
