"""Lower a LayoutSpec to CUDA C++ and HIP C++ kernels (store, decode split + merge, dequant).

One template family (``templates/gpu/kernels.cu.j2``) renders both languages; everything that
differs between them is a row of :data:`PLATFORMS` (headers, conversions, shuffles, byte permute,
the matrix-fragment implementation). Stages: eligibility → options → bind constants → render.
Byte addressing reaches the kernels at run time as a ``TqLayout`` struct built by
:func:`layout_params` from :func:`tqgen.derive_layout`; the only layout facts compiled in are
alignments (load/store widths), also derived from that object.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from . import __version__
from .codebook import lloyd_max, lut_words, search_grid
from .ir import (FP8_MAX, Backend, KeyCodec, Layout, LayoutSpec, Reason, Rotation, SpecError, Target, Vendor,
                 check_target, pow2_at_least)
from .layout import derive_layout, field_alignment, pow2_divisor
from .lower_triton import BANNER, TEMPLATE_DIR, OptionOverride, _env, template_stamp
from .rotation import random_signs
from .variants import Rules, Variant

CUDA_TEMPLATE = "gpu/kernels.cu.j2"
KINDS = ("generic", "portable")  # portable: the HIP fragment path compiled for NVIDIA (runs the HIP semantics)
QUERIES_PER_WARP = 8  # the decode's query octet: rows 0..7 of the mma tile (the template's `8 * D` query block)
MERGE_GROUPS = 4  # decode merge: thread groups of D per (sequence, query head), each over every 4th split
MERGE_GROUPS_MANY = 8  # ... and for rows of at least MERGE_GROUPS_MANY_FROM splits (cuda_launch.merge_groups)
MERGE_GROUPS_MANY_FROM = 64
MERGE_MAX_THREADS = 1024  # a block's threads: the block-a-row merge's G·D threads stop here (head_dim 256: 4 groups)
MERGE_ROWS = 8  # decode merge by rows: (sequence, query head) rows per block, a warp each
MAX_GQA = 16  # a group of 9..16 queries takes two octets (two warps over the same K/V bytes)
HEAD_DIMS = (64, 80, 96, 128, 256)  # 96: Phi-3's (3 elements a lane, 6 chunks of 16); 80: Phi-2's (5 store lanes of 16)


def merge_groups_many(head_dim: int) -> int:
    """MERGE_GROUPS_MANY where its G·D threads fit a block (MERGE_MAX_THREADS), else as many groups as do."""
    return min(MERGE_GROUPS_MANY, MERGE_MAX_THREADS // head_dim)


@dataclass(frozen=True, slots=True)
class Platform:
    """How one language spells what the kernels need (data, not copies of kernels)."""

    name: str  # "cuda" | "hip"
    suffix: str  # file suffix
    header: str
    defines: str
    byte_perm_def: str
    mma_impl: str  # "ptx": mma.sync m16n8k16; "shfl": the same fragments computed with 32-lane shuffles


_COMMON = """#define TQ_F2U(x) __float_as_uint(x)
#define TQ_U2F(x) __uint_as_float(x)"""

_PORTABLE_PRMT = """// byte permute with CUDA's __byte_perm semantics (selector nibbles 0..7 pick bytes of {y:x})
__device__ __forceinline__ uint32_t tq_prmt(uint32_t x, uint32_t y, uint32_t s) {
  const uint64_t v = ((uint64_t)y << 32) | x;
  uint32_t r = 0u;
#pragma unroll
  for (int i = 0; i < 4; ++i) r |= (uint32_t)((v >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
  return r;
}"""

_AMD_PRMT = """// byte permute with CUDA's __byte_perm semantics (selector nibbles 0..7 pick bytes of {y:x}; bit 3 of a nibble
// and the selector's upper half ignored, as in the portable definition): one v_perm_b32 (its selector byte i picks
// output byte i, 0..3 from its second operand) after the nibbles are spread to bytes (a v_perm moves selector bytes
// 0, 1 to bytes 0, 2, a shift-or and a mask split them), which all folds for a constant selector; the portable
// definition's shifts of a 64-bit word cost ~20 instructions a call with a selector known at run time only
__device__ __forceinline__ uint32_t tq_prmt(uint32_t x, uint32_t y, uint32_t s) {
  const uint32_t t = __builtin_amdgcn_perm(0u, s, 0x0c010c00u);
  return __builtin_amdgcn_perm(y, x, (t | (t << 4)) & 0x07070707u);
}"""

PLATFORMS: dict[str, Platform] = {
    "cuda": Platform(
        name="cuda", suffix="cu",
        header="#include <cuda_fp16.h>",
        defines=_COMMON + """
#define TQ_H2F(b) __half2float(__ushort_as_half((unsigned short)(b)))
#define TQ_F2H(x) __half_as_ushort(__float2half_rn(x))
#define TQ_SHFL_XOR(v, m) __shfl_xor_sync(0xffffffffu, (v), (m))
#define TQ_SHFL(v, s) __shfl_sync(0xffffffffu, (v), (s))
#define TQ_PRMT(x, y, s) __byte_perm((x), (y), (s))
#define TQ_ANY(p) __any_sync(0xffffffffu, (p))
#define TQ_CELL(t) __float2int_rz(t)  // NaN -> 0
// min / max, NaN if either operand is (PTX min.NaN / max.NaN, sm_80+)
#define TQ_NAN_OP(name, op) __device__ __forceinline__ float name(float a, float b) { \
  float r; asm(op ".NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
TQ_NAN_OP(tq_fmin_nan, "min")
TQ_NAN_OP(tq_fmax_nan, "max")
#define TQ_FMIN_NAN(a, b) tq_fmin_nan((a), (b))
#define TQ_FMAX_NAN(a, b) tq_fmax_nan((a), (b))
#define TQ_OPAQUE(p) asm("" : "+l"(p))  // hides how a pointer was computed (no re-association)
#define TQ_OPAQUE32(x) asm("" : "+r"(x))  // the same for a 32-bit value (kept, not re-derived)
// special registers read with volatile moves: a value derived from them after a loop is derived
// there, not before the loop and kept live across it
#define TQ_SREG_FN(name, reg) __device__ __forceinline__ int tq_sreg_##name() { \
  int v; asm volatile("mov.u32 %0, %%" reg ";" : "=r"(v)); return v; }
TQ_SREG_FN(ctaid_x, "ctaid.x") TQ_SREG_FN(ctaid_y, "ctaid.y") TQ_SREG_FN(ctaid_z, "ctaid.z") TQ_SREG_FN(tid_x, "tid.x")
// programmatic dependent launch (sm_90+; no-ops before, and in a grid launched without it): the decode
// lets its merge launch once every block has written its partial results, and the merge waits for them
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TQ_LAUNCH_DEPENDENTS() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#define TQ_WAIT_PRIMARY() asm volatile("griddepcontrol.wait;" ::: "memory")
#else
#define TQ_LAUNCH_DEPENDENTS() ((void)0)
#define TQ_WAIT_PRIMARY() ((void)0)
#endif
// a·b + c on fp16 pairs (raw bits)
__device__ __forceinline__ uint32_t tq_hfma2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t r;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}
// two floats -> bf16x2 (round to nearest even), low half first
#define TQ_F2BF2(a, b) tq_cvt_bf16x2((a), (b))
#define TQ_F2H2(a, b) tq_cvt_f16x2((a), (b))
// 2^x as one MUFU.EX2 (exp2f adds a rescale for results below 2^-126; softmax weights that small
// are zeros next to the maximum's 1)
__device__ __forceinline__ float tq_ex2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
#define TQ_EXP2(x) tq_ex2(x)""",
        byte_perm_def="""__device__ __forceinline__ uint32_t tq_cvt_bf16x2(float a, float b) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  return r;
}
__device__ __forceinline__ uint32_t tq_cvt_f16x2(float a, float b) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  return r;
}""", mma_impl="ptx"),
    "hip": Platform(
        name="hip", suffix="hip",
        header="#include <hip/hip_runtime.h>",
        defines=_COMMON + """
#define TQ_H2F(b) ((float)__builtin_bit_cast(_Float16, (unsigned short)(b)))
#define TQ_F2H(x) __builtin_bit_cast(unsigned short, (_Float16)(x))
#define TQ_SHFL_XOR(v, m) __shfl_xor((v), (m), 32)
#define TQ_SHFL(v, s) __shfl((v), (s), 32)
#define TQ_PRMT(x, y, s) tq_prmt((x), (y), (s))
#define TQ_ANY(p) __any((p))
#define TQ_CELL(t) ((int)fminf(fmaxf((t), 0.f), (float)TQ_GRID_LAST))  // NaN -> 0, never out of the table
#define TQ_FMIN_NAN(a, b) (((a) != (a) || (b) != (b)) ? __int_as_float(0x7fc00000) : fminf((a), (b)))
#define TQ_FMAX_NAN(a, b) (((a) != (a) || (b) != (b)) ? __int_as_float(0x7fc00000) : fmaxf((a), (b)))
#define TQ_OPAQUE(p) ((void)0)  // (only the CUDA cp.async pipeline uses it)
#define TQ_OPAQUE32(x) ((void)0)
__device__ __forceinline__ int tq_sreg_ctaid_x() { return blockIdx.x; }
__device__ __forceinline__ int tq_sreg_ctaid_y() { return blockIdx.y; }
__device__ __forceinline__ int tq_sreg_ctaid_z() { return blockIdx.z; }
__device__ __forceinline__ int tq_sreg_tid_x() { return threadIdx.x; }
#define TQ_LAUNCH_DEPENDENTS() ((void)0)  // (programmatic dependent launch: CUDA sm_90 only)
#define TQ_WAIT_PRIMARY() ((void)0)
typedef _Float16 tq_h2 __attribute__((ext_vector_type(2)));
// a·b + c on fp16 pairs (raw bits)
__device__ __forceinline__ uint32_t tq_hfma2(uint32_t a, uint32_t b, uint32_t c) {
  return __builtin_bit_cast(uint32_t, __builtin_elementwise_fma(__builtin_bit_cast(tq_h2, a), __builtin_bit_cast(tq_h2, b),
                                                                __builtin_bit_cast(tq_h2, c)));
}
// x·y + c on fp16 pairs (raw bits), fp32 products and sum: one v_dot2c_f32_f16 (gfx90a, gfx942, gfx950), the
// fragment path's dot products (tq_mma; converting each half and multiplying took ~4x the instructions)
#define TQ_FDOT2 1
__device__ __forceinline__ float tq_fdot2(uint32_t x, uint32_t y, float c) {
  return __builtin_amdgcn_fdot2(__builtin_bit_cast(tq_h2, x), __builtin_bit_cast(tq_h2, y), c, false);
}
// x of lane (i + 1) & 3 for lane i of each quad, the quad rotated by one: a DPP quad_perm [1, 2, 3, 0] move (a VALU
// operand modifier; a shuffle is an LDS instruction, ds_bpermute)
#define TQ_QUAD_ROT(x) ((uint32_t)__builtin_amdgcn_mov_dpp((int)(x), 0x39, 0xf, 0xf, false))
#define TQ_F2BF2(a, b) tq_pack2(tq_f2bf(a), tq_f2bf(b))
#define TQ_F2H2(a, b) tq_pack2(TQ_F2H(a), TQ_F2H(b))
#define TQ_EXP2(x) exp2f(x)""",
        byte_perm_def=_AMD_PRMT, mma_impl="shfl"),
}

MMA_DEFS = {
    "ptx": """template <bool BF16>
__device__ __forceinline__ void tq_mma(float* c, const uint32_t* a, uint32_t b0, uint32_t b1, int) {
  if (BF16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}
// the score's product with B in shared memory as lane l's (b0, b1) at row[l] (the query fragments, TQ_QFRAG_SMEM):
// tq_qref(row, lane) reads the thread's pair (before the keys' decode, as the loop always had it), tq_mma_bs the product
typedef uint2 TqQRef;
__device__ __forceinline__ TqQRef tq_qref(const uint2* row, int lane) { return row[lane]; }
__device__ __forceinline__ void tq_mma_bs(float* c, const uint32_t* a, TqQRef q, int lane) {
  tq_mma<false>(c, a, q.x, q.y, lane);
}
// a B operand shared by several products (P·V's Pᵀ): the thread's own two words (the shuffle path prepares more)
struct TqBFrag { uint32_t b0, b1; };
__device__ __forceinline__ TqBFrag tq_bfrag(uint32_t b0, uint32_t b1, int) { return {b0, b1}; }
template <bool BF16>
__device__ __forceinline__ void tq_mma_bf(float* c, const uint32_t* a, const TqBFrag& f, int lane) {
  tq_mma<BF16>(c, a, f.b0, f.b1, lane);
}
// the transpose of an 8x8 matrix of 16-bit values held as m8n8 fragments (thread 4i + j/2: row i,
// columns j, j + 1): movmatrix (sm_75+)
__device__ __forceinline__ uint32_t tq_trans8(uint32_t x, int) {
  uint32_t r;
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(x));
  return r;
}""",
    "shfl": """// the m16n8k16 fragment contract computed with shuffles inside a 32-lane logical warp
template <bool BF16> __device__ __forceinline__ float tq_dot2(uint32_t x, uint32_t y) {
  return tq_t2f<BF16>(x & 0xffffu) * tq_t2f<BF16>(y & 0xffffu) + tq_t2f<BF16>(x >> 16) * tq_t2f<BF16>(y >> 16);
}
// one round rr of the contract: A's words of lane 4g + rr times B's of lanes 8r + rr (x: column 2r) and 8r + 4 + rr
// (y: column 2r + 1); fp16 pairs as dot instructions where the platform has them (TQ_FDOT2: every preset's fragments
// but 8-bit value codes with a bf16 query)
template <bool BF16>
__device__ __forceinline__ void tq_mma_round(float* c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t x0,
                                             uint32_t x1, uint32_t y0, uint32_t y1) {
#ifdef TQ_FDOT2
  if constexpr (!BF16) {
    c[0] = tq_fdot2(a2, x1, tq_fdot2(a0, x0, c[0]));
    c[1] = tq_fdot2(a2, y1, tq_fdot2(a0, y0, c[1]));
    c[2] = tq_fdot2(a3, x1, tq_fdot2(a1, x0, c[2]));
    c[3] = tq_fdot2(a3, y1, tq_fdot2(a1, y0, c[3]));
    return;
  }
#endif
  c[0] += tq_dot2<BF16>(a0, x0) + tq_dot2<BF16>(a2, x1);
  c[1] += tq_dot2<BF16>(a0, y0) + tq_dot2<BF16>(a2, y1);
  c[2] += tq_dot2<BF16>(a1, x0) + tq_dot2<BF16>(a3, x1);
  c[3] += tq_dot2<BF16>(a1, y0) + tq_dot2<BF16>(a3, y1);
}
// Round rr needs A's words of lane rr of the reader's quad (lane 4g + rr). The products take the rounds in a rotated
// order: lane r of a quad runs round rr = (r + t) & 3 at trip t, so the A words it needs there are its quad's words
// rotated t lanes: its own at trip 0, then one fixed rotation a trip (TQ_QUAD_ROT: a DPP move on AMD, where a
// run-time rr took a ds_bpermute a word; a shuffle elsewhere). The B words follow rr (a shuffle or a load at a
// lane-varying index either way). Only the order of the four rounds' sums differs between lanes.
#ifndef TQ_QUAD_ROT
#define TQ_QUAD_ROT(x) TQ_SHFL((x), (lane & ~3) | ((lane + 1) & 3))
#endif
#define TQ_ROT_A(w) (w[0] = TQ_QUAD_ROT(w[0]), w[1] = TQ_QUAD_ROT(w[1]), w[2] = TQ_QUAD_ROT(w[2]), w[3] = TQ_QUAD_ROT(w[3]))
// the four trips of one product, b_of(rr) giving round rr's B words (x0, x1, y0, y1: columns 2r and 2r + 1)
template <bool BF16, class BOf>
__device__ __forceinline__ void tq_mma_trips(float* c, const uint32_t* a, int lane, BOf b_of) {
  const int r = lane & 3;
  uint32_t w[4] = {a[0], a[1], a[2], a[3]};
  uint4 b = b_of(r);
  tq_mma_round<BF16>(c, w[0], w[1], w[2], w[3], b.x, b.y, b.z, b.w);
  // a rolled loop: unrolled, the compiler hoists every loop-invariant query shuffle and conversion
  // out of the tile loop and spills (gfx942: 512 VGPRs + 111 spilled vs 144 rolled)
#pragma unroll 1
  for (int t = 1; t < 4; ++t) {
    TQ_ROT_A(w);
    b = b_of((r + t) & 3);
    tq_mma_round<BF16>(c, w[0], w[1], w[2], w[3], b.x, b.y, b.z, b.w);
  }
}
template <bool BF16>
__device__ __forceinline__ void tq_mma(float* c, const uint32_t* a, uint32_t b0, uint32_t b1, int lane) {
  const int r = lane & 3;
  tq_mma_trips<BF16>(c, a, lane, [&](int rr) {
    return make_uint4(TQ_SHFL(b0, 8 * r + rr), TQ_SHFL(b1, 8 * r + rr), TQ_SHFL(b0, 8 * r + 4 + rr),
                      TQ_SHFL(b1, 8 * r + 4 + rr));
  });
}
// the same with B in shared memory as lane l's (b0, b1) at bs[l] (the query fragments, TQ_QFRAG_SMEM): the pairs
// of lanes 8r + rr and 8r + 4 + rr read directly, two 8-byte loads a round (the lanes of one r read the same words,
// rr depending on r and the trip only) where shuffles of the caller's b0, b1 took four and a load
typedef const uint2* TqQRef;  // the row itself: each round reads the pairs it needs
__device__ __forceinline__ TqQRef tq_qref(const uint2* row, int) { return row; }
__device__ __forceinline__ void tq_mma_bs(float* c, const uint32_t* a, TqQRef bs, int lane) {
  const int r = lane & 3;
  tq_mma_trips<false>(c, a, lane, [&](int rr) {
    const uint2 x = bs[8 * r + rr], y = bs[8 * r + 4 + rr];
    return make_uint4(x.x, x.y, y.x, y.y);
  });
}
// a B operand shared by several products (P·V's Pᵀ, the same for every m-tile): the words of the four trips
// shuffled once (16 shuffles a tile where tq_mma took 16 a product), in the rotated order (trip t: round (r + t) & 3),
// tq_mma_bf the trips on them, written out (t a literal), trip 0 on the thread's own A words
struct TqBFrag { uint32_t x0[4], x1[4], y0[4], y1[4]; };  // trip t: column 2r's b0, b1; column 2r + 1's
__device__ __forceinline__ TqBFrag tq_bfrag(uint32_t b0, uint32_t b1, int lane) {
  const int r = lane & 3;
  TqBFrag f;
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const int rr = (r + t) & 3;
    f.x0[t] = TQ_SHFL(b0, 8 * r + rr);
    f.x1[t] = TQ_SHFL(b1, 8 * r + rr);
    f.y0[t] = TQ_SHFL(b0, 8 * r + 4 + rr);
    f.y1[t] = TQ_SHFL(b1, 8 * r + 4 + rr);
  }
  return f;
}
#define TQ_BF_TRIP(t) tq_mma_round<BF16>(c, w[0], w[1], w[2], w[3], f.x0[t], f.x1[t], f.y0[t], f.y1[t])
template <bool BF16>
__device__ __forceinline__ void tq_mma_bf(float* c, const uint32_t* a, const TqBFrag& f, int lane) {
  uint32_t w[4] = {a[0], a[1], a[2], a[3]};
  TQ_BF_TRIP(0);
  TQ_ROT_A(w); TQ_BF_TRIP(1);
  TQ_ROT_A(w); TQ_BF_TRIP(2);
  TQ_ROT_A(w); TQ_BF_TRIP(3);
}
// the transpose of an 8x8 matrix of 16-bit values held as m8n8 fragments (thread 4i + j/2: row i,
// columns j, j + 1): thread (g, r) takes column g of rows 2r and 2r + 1
__device__ __forceinline__ uint32_t tq_trans8(uint32_t x, int lane) {
  const int g = lane >> 2, r = lane & 3;
  const uint32_t lo = TQ_SHFL(x, 8 * r + (g >> 1)), hi = TQ_SHFL(x, 8 * r + 4 + (g >> 1));
  return (g & 1) ? TQ_PRMT(lo, hi, 0x7632u) : TQ_PRMT(lo, hi, 0x5410u);
}""",
}


#: the warps a block of the decode / the row kernels may have (CudaOptions.decode_warps, row_warps)
WARP_COUNTS = (1, 2, 4, 8)


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaOptions:
    """Launch/compile options of the C++ kernels for one target; validates itself."""

    decode_warps: int = 2  # logical warps per decode block; each warp is one split (H200 sweep: 2 best)
    decode_min_blocks: int = 8  # __launch_bounds__ minimum resident blocks: 128 registers, 16 warps per SM
    row_warps: int = 4  # store / dequant: logical warps a block (store: a (token, head) row each)
    # dequant: consecutive tokens a warp, their loads issued together (H200, 1/2/4/8 measured:
    # bench/results/h200-2026-12-04-dequant-tokens.md; one token a warp waited on its chain of dependent loads)
    dequant_tokens: int = 4
    # dequant: R > 0 = the rows kernel (the store's mapping run backwards: store_lanes(D) lanes a token, D/32 of 32
    # elements each, 5 of 16 at head_dim 80; R rounds of 32 // lanes tokens a warp), whose Walsh-Hadamard transform back is 5 stages in registers and log2(D/32)
    # by shuffles (the renorm's sum the same); 0 = the lane kernel (D/32 elements a lane, a token's transform 5
    # shuffle stages, dequant_tokens tokens a warp). H200, same run, bf16 out, % of the copy ceiling, B=32 L=32K
    # head_dim 128 lane -> rows 1 / 2: SoA 4bit_nc 48.3 -> 77.9 / 83.7, AoS 4bit_nc 45.1 -> 70.7 / 75.6, SoA
    # k3v4_nc 45.9 -> 71.9 / 77.4, SoA k8v4 67.5 -> 83.4 / 84.9, SoA 3bit_nc 46.3 -> 65.5 / 61.7 (3-bit values: see
    # the sm90 override); head_dim 64 1.6-2.6x; B=8 L=4K rows 1 0-4 % ahead of 2 (bench/results/
    # h200-2026-12-04-dequant-rows.md). One round by default: 2 only where measured to gain (an sm90 override; below
    # sm90 unmeasured, and 2 spilled 12 bytes in sm80's software fp8 decode); AMD targets too (unmeasured there)
    dequant_rows: int = 1
    # the dense rotation's store of Lloyd-Max keys: R rounds of the block's rows rotated together
    # (tq_store_rounds_impl), so each k-chunk's B fragments serve R times the rows (head_dim 80 with 4: 96 rows in 6
    # m-tiles, 3 a warp, no pad rows: a quarter of the B-fragment reads a row; 96 with 2: 80 rows, 5 a warp); 1: a
    # rotation a round (tq_store_impl). Session 57 (NVRTC: 125-128 registers, 4 blocks an SM); on an H100 (session 58,
    # same run) 1.05-1.06x the one-round time at 80 (1.10x at 5 blocks), 1.016 / 0.960x at 96
    # (bench/results/h100-2026-12-07-dense-rounds.md), so 1 everywhere
    store_rounds: int = 1
    # the dense rotation's rows dequant, bf16 / fp16 outputs: R rounds of the block's rows through one rotation
    # (tq_dequant_rows_impl's batch: each lane's rows of every round written as parts, one set of products, then the
    # rounds' outputs), the store's rounds run backwards; fp32 outputs keep one round (their three parts of 96 rows
    # pass a block's static 48 KB). Replaces dequant_rows for the dense rotation (whose per-round rotations keep one
    # round: two spilled). Default 1; the NVIDIA targets' overrides take 4 at head_dim 80 and 2 at 96 (measured there)
    dequant_rounds: int = 1
    tile: int = 16  # decode tokens per step (the 16 rows of the score mma)
    q_in_smem: bool = True  # decode query B fragments (rotated) read from shared memory: 16 registers freed
    stages: int = 3  # decode cp.async pipeline depth (CUDA, every piece 4-byte aligned); 0: register prefetch
    tile_unroll: int = 1  # decode: tiles per iteration of the pipelined loop (1, or `stages`: constant slots)
    # 4-bit keys: decode looks up the codes of the first `pair_chunks` of the D/16 key chunks as
    # byte -> fp16 pair in a 256-entry shared-memory table with `pair_copies` copies (lane % copies
    # reads its own: fewer bank conflicts); the others by byte permutes. 0 copies: permutes only
    pair_copies: int = 0
    pair_chunks: int = 0
    # decode: the cp.async pipeline and the pair table in dynamic shared memory (sized by
    # ``decode_dynamic_smem``, passed at launch) instead of static arrays, which stop at 48 KB a block:
    # room for a conflict-free 4-bit table (a copy per lane: 256 x 32 x 4 = 32 KB). CUDA, line loads only
    dyn_smem: bool = False
    # decode's online softmax: the maximum across lanes, the rescale factors and the accumulators' rescale
    # only on tiles where a score exceeds the running maximum somewhere in the warp (a vote; the first
    # tiles, rarely after them) instead of on every tile: 4-6 % fewer SASS instructions a tile at head_dim
    # 128, 6-10 % at 64 (tests/data/sass_tile_sm90.json, hot_per_tile)
    lazy_max: bool = True
    # decode: a block's warps are decode_warps neighbour KV heads of one (sequence, split) rather than decode_warps
    # splits of one head; the launcher's grid follows (x: splits, y: head groups x query octets). The block
    # copies its heads' AoS slots or SoA records (side by side in each token's row) together, each 16-byte chunk
    # once, where a warp per head copies the chunk two neighbour slots share twice (lower_cuda._slot_lines)
    head_groups: bool = False
    # 3-bit keys' pair table (CUDA): the lane's byte offset OR'ed with v·4·COPIES (the one logic op after the
    # shift that extracts v, as with the aligned table) and the table's shared address added inside the load,
    # where ptxas folds it into the load's immediate offset: the table needs no alignment to its size, so the
    # 16 KB array that holds an aligned 8 KB table (32 copies) shrinks to 8 KB. SoA k3v4_nc at head_dim 128: the
    # same hot loop (323 -> 324 SASS instructions a tile), 32,640 -> 24,448 bytes of shared memory, 6 -> 8 blocks an
    # SM (its registers' bound); 3bit_nc SoA's loop took an IMAD a lookup instead (tests/data/sass_tile_sm90.json)
    pair_add: bool = False
    # 4-bit keys' pair table (CUDA, AoS line loads, 32 copies in dynamic shared memory): entries 256 bytes apart, so
    # that one byte permute forms a lookup's offset (the code byte at bits 8-15, the lane's copy offset 4·lane at
    # bits 0-7) and the load adds the table's address (ptxas folds it into the offset): one instruction a lookup
    # where a permute and a multiply-add by 4·COPIES took two. The entries' upper 128 bytes hold the line-load
    # pipeline (its linear byte x at x + (x & ~127) + 128 into the table), so the block's shared memory is the
    # table's 64 KB; the query rows sit in its first 4 KB until the table is filled
    pair_prmt: bool = False

    def reasons(self, target: Target) -> list[Reason]:
        r = []
        for name in ("decode_warps", "row_warps"):
            v = getattr(self, name)
            if v not in WARP_COUNTS:
                r.append(Reason(name, v, list(WARP_COUNTS)))
        if self.dequant_tokens not in (1, 2, 4, 8, 16):
            r.append(Reason("dequant_tokens", self.dequant_tokens, [1, 2, 4, 8, 16]))
        if self.store_rounds not in (1, 2, 4):
            r.append(Reason("store_rounds", self.store_rounds, [1, 2, 4]))
        if self.store_rounds > 1 and target.info.vendor is not Vendor.NVIDIA:
            r.append(Reason("store_rounds", self.store_rounds, [1], "the store's rounds are built for NVIDIA targets only "
                                                                     "(hipcc spilled gfx942's at head_dim 80)"))
        if self.dequant_rounds not in (1, 2, 4):
            r.append(Reason("dequant_rounds", self.dequant_rounds, [1, 2, 4]))
        if self.dequant_rounds > 1 and target.info.vendor is not Vendor.NVIDIA:
            r.append(Reason("dequant_rounds", self.dequant_rounds, [1], "the dense dequant's rounds are built for NVIDIA "
                                                                         "targets only (as the store's)"))
        if self.dequant_rows not in (0, 1, 2, 4):
            r.append(Reason("dequant_rows", self.dequant_rows, [0, 1, 2, 4],
                            "rounds of rows a warp in the rows dequant; 0 runs the lane kernel instead"))
        if self.tile != 16:
            r.append(Reason("tile", self.tile, [16], "the fragment layout fixes 16 tokens per step"))
        if self.stages != 0 and not 2 <= self.stages <= 8:
            r.append(Reason("stages", self.stages, "0 (register prefetch) or 2..8"))
        if self.pair_copies not in (0, 1, 2, 4, 8, 16, 32):
            r.append(Reason("pair_copies", self.pair_copies, [0, 1, 2, 4, 8, 16, 32]))
        if not 0 <= self.pair_chunks <= 16:
            r.append(Reason("pair_chunks", self.pair_chunks, "0..16 (chunks of 16 key dimensions)"))
        if self.tile_unroll not in (1, self.stages):
            r.append(Reason("tile_unroll", self.tile_unroll, sorted({1, self.stages}),
                            "unrolled by the pipeline depth, every tile's stage slot is a constant"))
        if self.dyn_smem and self.stages < 2:
            r.append(Reason("dyn_smem", True, [False], "dynamic shared memory holds the cp.async pipeline (stages >= 2)"))
        if self.dyn_smem and target.info.vendor is not Vendor.NVIDIA:
            r.append(Reason("dyn_smem", True, [False], "the launcher sets the dynamic shared-memory limit on CUDA only"))
        if self.pair_add and target.info.vendor is not Vendor.NVIDIA:
            r.append(Reason("pair_add", True, [False], "the folded table address is a CUDA load (the HIP decode "
                                                       "indexes its table)"))
        if self.pair_prmt and target.info.vendor is not Vendor.NVIDIA:
            r.append(Reason("pair_prmt", True, [False], "the permuted table offsets are a CUDA load (the HIP decode "
                                                        "looks 4-bit codes up by byte permutes)"))
        if self.pair_prmt and not self.dyn_smem:
            r.append(Reason("pair_prmt", True, [False], "the table with the pipeline in its holes is dynamic shared "
                                                        "memory: set dyn_smem=True too"))
        if self.head_groups and target.info.vendor is not Vendor.NVIDIA:
            r.append(Reason("head_groups", True, [False], "head-group blocks are built and verified for NVIDIA targets "
                                                          "only (a HIP block's logical warps share a wave64)"))
        if not 1 <= self.decode_min_blocks <= 16:
            r.append(Reason("decode_min_blocks", self.decode_min_blocks, "1..16"))
        return r

    def split_step(self) -> int:
        """Decode split counts are multiples of this: the block's warps (a warp a split), or 1 with
        ``head_groups`` (a block a split: its warps are heads)."""
        return 1 if self.head_groups else self.decode_warps

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def with_changes(self, changes) -> "CudaOptions":
        """These options with ``field=value`` texts applied (booleans as 1/0/true/false), e.g.
        ``["lazy_max=0", "stages=4"]``: the debug sweeps' command-line spelling."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out = {}
        for text in changes:
            name, sep, value = text.partition("=")
            if not sep or name not in fields:
                raise ValueError(f"option change {text!r}: expected field=value with a CudaOptions field, one of "
                                 f"{sorted(fields)}")
            cur = fields[name]
            out[name] = value.lower() in ("1", "true") if isinstance(cur, bool) else type(cur)(value)
        return dataclasses.replace(self, **out)


# H200 option sweep (bench/results/h200-2026-12-01-cuda-sweep.md, B=32 L=32K, one warp per query
# octet): 16 warps per SM (128 registers) with a 3-stage cp.async pipeline beat 12 warps with 4
# stages (4bit_nc SoA 618 vs 626 us, k3v4_nc 660 vs 715). With line loads (SoA) fp8 keys take the
# pipeline too: k8v4 626 / 594 us (B=32 L=32K / B=128 L=8K) vs 721 / 716 with register prefetch.
# Lloyd-Max keys by shared-memory pair table (bench/dbg/pairs.py, same run): 4bit_nc 524 / 553 us
# with 8 copies vs 619 / 618 with byte permutes (1 copy 539 / 558; half the chunks 550 / 573).
CUDA_OPTIONS: dict[Target, CudaOptions] = {
    Target.SM80: CudaOptions(), Target.SM86: CudaOptions(), Target.SM89: CudaOptions(),
    Target.SM90: CudaOptions(pair_copies=8, pair_chunks=16),
    # 2 logical warps per wave64. The rows dequant, one round (session 37): until then the lane kernel, as the rows
    # kernel's Lloyd-Max instances spilled 12-24 VGPRs under a launch bound read as 8 waves an EU (64 VGPRs); with the
    # bound mapped to HIP's meaning (min_resident_bound: 4 waves an EU, 128 VGPRs) every instance at head_dim 128 and
    # 64 compiles in 38-94 VGPRs (one round; two 54-108) without spills for gfx90a / gfx942 / gfx950 (clang 22). No
    # AMD GPU measured: chosen by the H200's rows-vs-lane numbers (1.4-2.6x) and the lane kernel's 5 cross-lane
    # shuffle stages a key, which are ds_bpermute / DPP moves on CDNA
    Target.GFX90A: CudaOptions(decode_warps=4, row_warps=4),
    Target.GFX942: CudaOptions(decode_warps=4, row_warps=4),
    Target.GFX950: CudaOptions(decode_warps=4, row_warps=4),
}

_NV = (Target.SM80, Target.SM86, Target.SM89, Target.SM90)
CUDA_OPTION_OVERRIDES: tuple[OptionOverride, ...] = (
    OptionOverride(Target.SM90, (("key_codec", "lloyd_max"), ("value_bits", 4)), (("dequant_rows", 2),),
                   "Lloyd-Max keys with 4-bit values: the rows dequant 2 rounds of rows a warp (sm90 takes 1 otherwise): "
                   "B=32 L=32K head_dim 128 SoA / AoS 4bit_nc 83.7 / 75.6 % of the copy ceiling vs 77.9 / 70.7 at one "
                   "round, k3v4_nc 77.4 / 73.9 vs 71.9 / 66.2. With 3-bit values (a lane's 32 codes one 3-word chunk) one "
                   "round: 3bit_nc 65.5 / 64.9 vs 61.7 / 61.0; fp8 keys one round: k8v4 83.4 / 75.0 vs 84.9 / 75.2, and "
                   "2 rounds spilled 12 bytes in SoA k8v4's fp32 instance (bench/results/h200-2026-12-04-dequant-rows.md)"),
    OptionOverride(Target.SM90, (("key_codec", "lloyd_max"), ("key_bits", 3)), (("pair_copies", 32),),
                   "3-bit keys: a pair-table copy per lane (64 entries x 32, 8 KB, addressed by OR: no bank "
                   "conflicts; one copy has up to two entries per bank, 8 copies up to 4-way conflicts). Debug "
                   "sweep, same run vs one copy, B=32 L=32K / B=128 L=8K: 3bit_nc SoA 350 / 360 vs 367 / 376 us, "
                   "AoS k3v4_nc 393 / 441 vs 411 / 454, AoS 3bit_nc 402 / 444 vs 410 / 448; head_dim 64 (B=32 "
                   "L=32K Hq 9 Hk 3): SoA k3v4_nc 95 vs 101 us (8 copies), 3bit_nc 102 vs 103, AoS k3v4_nc 106 vs "
                   "110, 3bit_nc 108 vs 109 (bench/results/h200-2026-12-01-sweep-session8.md; earlier one copy beat "
                   "8: k3v4_nc 476 vs 499 us, 3bit_nc 650 vs 678)"),
    OptionOverride(Target.SM90, (("layout", "soa"), ("key_codec", "lloyd_max"), ("key_bits", 4)),
                   (("decode_warps", 4), ("decode_min_blocks", 4), ("pair_copies", 16), ("q_in_smem", False)),
                   "4-bit keys, SoA: 4 blocks of 4 warps share a 16-copy pair table (46 KB of static shared memory "
                   "per block): 494 / 507 us vs 525 / 540 us with 8 blocks of 2 warps and 8 copies (B=32 L=32K / "
                   "B=128 L=8K, bench/dbg/warps.py); the query fragments in registers (128 registers, no spills): "
                   "364 / 377 vs 397 / 390 us from shared memory (bench/results/h200-2026-12-01-sweep-session5.md)"),
) + tuple(
    OptionOverride(t, (("layout", "aos"),), (("decode_min_blocks", 6),),
                   "AoS line loads (unaligned slots: every fragment read is aligned 4-byte words + funnel shifts) "
                   "from precomputed shared addresses need 152-167 registers at head_dim 128: 6 blocks of 2 warps "
                   "(170 registers) without spills. Same run vs the previous reads with 4 blocks, B=32 L=32K / "
                   "B=128 L=8K: 4bit_nc 561 / 603 vs 625 / 646 us, k8v4 525 / 543 vs 541 / 564, k3v4_nc 495 / 539 "
                   "vs 579 / 619, 3bit_nc 487 / 516 vs 569 / 584 (bench/results/h200-2026-12-01-ab8-aos-reads.md; "
                   "7 or 8 blocks: mixed, -sweep-session6-dropped.md)")
    for t in _NV) + tuple(
    OptionOverride(t, (("layout", "soa"), ("key_codec", "lloyd_max"), ("key_bits", 3), ("value_bits", 3)),
                   (("decode_min_blocks", 7),), "3-bit keys and values need 142-144 registers (SoA); 7 blocks leave 146")
    for t in _NV) + (
    OptionOverride(Target.SM90, (("layout", "aos"), ("key_codec", "lloyd_max"), ("key_bits", 4)), (("pair_copies", 16),),
                   "4-bit keys, AoS line loads: a 16-copy pair table, 726 / 737 us vs 765 / 782 us with 8 copies "
                   "(B=32 L=32K / B=128 L=8K; 4 warps x 2 blocks, 3 blocks, 2 or 4 stages: no gain; "
                   "bench/results/h200-2026-12-01-sweep-aos-options.md)"),
    OptionOverride(Target.SM90, (("layout", "aos"), ("key_codec", "lloyd_max"), ("key_bits", 4)),
                   (("decode_warps", 4), ("decode_min_blocks", 3), ("pair_copies", 32), ("dyn_smem", True)),
                   "4-bit keys, AoS: a pair-table copy per lane (32 KB, no bank conflicts; Nsight Compute saw 46 % "
                   "of the 16-copy table's shared wavefronts as conflicts, -ncu-session8.md) in dynamic shared "
                   "memory, 3 blocks of 4 warps. Debug sweep, same run vs 6 blocks of 2 warps with 16 copies: "
                   "432 / 509 us vs 468 / 519 (B=32 L=32K / B=128 L=8K), head_dim 64 (B=32 L=32K Hq 9 Hk 3) "
                   "111 vs 116 us (bench/results/h200-2026-12-01-sweep-session10.md)"),
    OptionOverride(Target.SM90, (("layout", "soa"), ("key_codec", "lloyd_max"), ("key_bits", 3), ("head_dim", 128)),
                   (("decode_warps", 4), ("decode_min_blocks", 4)),
                   "3-bit keys, SoA, head_dim 128, with line loads: 4 blocks of 4 warps (one 64-entry pair table "
                   "each): 3bit_nc 537 / 566 us vs 547 / 626 us with 7 blocks of 2 warps, k3v4_nc 476 / 509 vs 488 / "
                   "520 us (B=32 L=32K / B=128 L=8K; 4 or 16 table copies and 3 blocks are slower; "
                   "bench/dbg/sweep3.py). Not at head_dim 64: tqgen bench gave 3bit_nc 32.4-32.5 % of the ceiling "
                   "with 2-warp blocks (ab-session4, targets-v5-graph) vs 23.1 % with these (targets-v5-decode), on "
                   "different machines; the debug sweep saw 162 vs 166 us (sweep-d64-options)"),
    OptionOverride(Target.SM90, (("layout", "aos"), ("key_codec", "fp8_e4m3fn"), ("head_dim", 128)), (("lazy_max", False),),
                   "k8v4 AoS, head_dim 128: the maximum reduced on every tile. Same run, tqgen bench targets (CUDA "
                   "graphs) vs the vote: x SDPA 1.98 / 1.88 vs 1.91 / 1.87 (B=32 L=32K / B=128 L=8K), while every "
                   "3-/4-bit Lloyd-Max decode gained 2-5 % (bench/results/h200-2026-12-01-ab16-lazy-max.md)"),
    OptionOverride(Target.SM90, (("layout", "aos"), ("key_codec", "fp8_e4m3fn"), ("head_dim", 128)), (("head_groups", True),),
                   "k8v4 AoS, head_dim 128: a block's 2 warps are neighbour KV heads copying their slots as one row "
                   "a token (each 16-byte chunk once). tqgen bench targets, CUDA graphs, both trees tuned in the same "
                   "run, twice: B=32 L=32K 478 -> 470-471 us (x SDPA 1.98 -> 2.02), B=128 L=8K 507-508 -> 477-478 "
                   "us (1.88 -> 2.00); B=1 L=4K 17.9 -> 22 us (each warp prepares its own head's queries), 18.6 with "
                   "the real-queries prologue (-ab28-prologue-real-queries.md). Groups of 4 or 8 heads (a block barrier of 4-8 warps a "
                   "tile) and the 3-/4-bit-key AoS decodes: slower (bench/results/h200-2026-12-02-ab27-head-group-rows.md)"),
    OptionOverride(Target.SM90, (("layout", "soa"), ("key_codec", "lloyd_max"), ("key_bits", 4), ("value_bits", 4),
                                 ("head_dim", 64)),
                   (("decode_min_blocks", 6),),
                   "4-bit keys, SoA, head_dim 64: 96 registers at 4 blocks of 4 warps, 80 (no spills) at 6: 24 warps "
                   "per SM; tqgen bench same run, B=32 L=32K Hq 9 Hk 3: 96.0 / 96.9 vs 104.2 / 103.5 us, 50 -> 54 % "
                   "of the copy ceiling (bench/results/h200-2026-12-01-ab11-d64-blocks.md; 10 or 12 blocks of 2 warps "
                   "slower: -sweep-d64-session7.md)"),
    OptionOverride(Target.SM90, (("layout", "aos"), ("key_codec", "lloyd_max"), ("key_bits", 3), ("head_dim", 64)),
                   (("decode_min_blocks", 8),),
                   "3-bit keys, AoS, head_dim 64: 8 blocks of 2 warps (117 registers) instead of 6; tqgen bench same "
                   "run, B=32 L=32K Hq 9 Hk 3: k3v4_nc 120.5 / 121.3 vs 125.3 / 124.8 us, 3bit_nc 123.8 / 124.1 vs "
                   "128.9 / 128.0 (bench/results/h200-2026-12-01-ab11-d64-blocks.md; 10 blocks, and 4bit_nc / k8v4 "
                   "at 8: no gain, -sweep-d64-session7.md)"),
) + tuple(
    OptionOverride(t, (("key_codec", "lloyd_max"),), (("tile_unroll", 3),),
                   "Lloyd-Max keys: the pipelined tile loop unrolled by its 3 stages (every stage slot a constant): "
                   "6-14 % fewer SASS instructions per tile; same-run tqgen bench A/B (B=32 L=32K / B=128 L=8K, "
                   "D=128): AoS 4bit_nc 0.91 / 0.93x the time, k3v4_nc 0.91 / 0.94x, 3bit_nc 0.92 / 0.95x; SoA "
                   "3bit_nc 0.92 / 0.94x, 4bit_nc 0.97 / 0.98x; head_dim 64: 0.92-0.98x "
                   "(bench/results/h200-2026-12-01-ab12-tile-unroll.md; fp8 keys: no gain)")
    for t in _NV) + tuple(
    OptionOverride(t, (("layout", "soa"), ("key_codec", "lloyd_max"), ("key_bits", 3), ("value_bits", 4),
                       ("head_dim", 128)), (("tile_unroll", 1),),
                   "k3v4_nc SoA at head_dim 128 rolled where head groups are not built (1.04x the time unrolled at "
                   "B=32 L=32K, 1.00x at B=128 L=8K; -ab12-tile-unroll.md)")
    for t in _NV if t is not Target.SM90) + (
    OptionOverride(Target.SM90, (("layout", "soa"), ("key_codec", "lloyd_max"), ("key_bits", 3), ("value_bits", 4),
                                 ("head_dim", 128)),
                   (("head_groups", True), ("decode_warps", 2), ("decode_min_blocks", 8), ("pair_copies", 32)),
                   "k3v4_nc SoA, head_dim 128: its 112-byte records share 32-byte sectors with the neighbour head's "
                   "(L1 asks L2 for 1.47x the bytes; the other SoA records, whole sectors: 1.00x), so a block's 2 "
                   "warps are neighbour heads copying their records as one 224-byte row a token, with 3bit_nc's "
                   "loop options (the lazy maximum, 32 pair-table copies, unrolled; per warp these had measured "
                   "no gain: 382 vs 377 us, -sweep-session17.md, and were one copy, every tile's maximum and rolled "
                   "before). tqgen bench targets, CUDA graphs, both trees tuned, twice: B=32 L=32K 375-379 -> "
                   "329-332 us (x SDPA 2.54 -> 2.86), B=128 L=8K 374-378 -> 337-339 us (2.57 -> 2.84); B=1 L=4K "
                   "0.94 -> 1.15x SDPA's time; head groups of 4 and grouping with the old loop options slower "
                   "(bench/results/h200-2026-12-03-soa-k3v4-sectors.md)"),
    OptionOverride(Target.SM90, (("layout", "soa"), ("key_codec", "lloyd_max"), ("key_bits", 3), ("value_bits", 4),
                                 ("head_dim", 128)),
                   (("pair_add", True),),
                   "k3v4_nc SoA, head_dim 128: the pair table without its alignment padding (shared memory 32,640 -> "
                   "24,448 bytes: 8 blocks an SM instead of 6, its registers' bound; the hot loop unchanged). Same "
                   "run, CUDA graphs, best split count of 3/4/6/8 each: B=128 L=8K 348 -> 329 us (67.1 -> 71.0 % of "
                   "the copy ceiling), B=32 L=32K 330 -> 323 us (bench/results/h200-2026-12-03-pair-add.md). Not at "
                   "head_dim 64 or for 3bit_nc SoA: ptxas left the table address as an IMAD a lookup there"),
    OptionOverride(Target.SM90, (("layout", "aos"), ("key_codec", "lloyd_max"), ("key_bits", 4)), (("pair_prmt", True),),
                   "4-bit keys, AoS: the pair table's entries 256 bytes apart, a lookup's offset one byte permute (the "
                   "permute and multiply-add before), the line-load pipeline in the entries' upper halves: 410 -> 379 "
                   "SASS instructions a tile at head_dim 128, 276 -> 260 at 64, the same registers and 3 blocks an SM "
                   "(tests/data/sass_tile_sm90.json)"),
    OptionOverride(Target.SM90, (("value_bits", 8), ("head_dim", 128)), (("decode_warps", 2), ("decode_min_blocks", 4)),
                   "8-bit values at head_dim 128 (no preset has them; untuned): the presets' launch bounds spilled 4-28 "
                   "bytes a decode kernel (168 / 128 registers) and SoA 3-/4-bit keys' 4-warp pipeline overran the "
                   "48 KB of static shared memory; 2 warps a block at 4 blocks (256 registers) compile with 164-246 "
                   "and no spills for every key codec and layout (tests/test_generated_cpp.py, session 46)"),
) + tuple(
    OptionOverride(t, (("head_dim", 256),),
                   (("decode_warps", 2), ("decode_min_blocks", 4), ("dyn_smem", True), ("q_in_smem", True)),
                   "head_dim 256 (session 47; 8 elements a lane, 16 value m-tiles: 64 accumulators a thread): 2 warps a "
                   "block at 4 blocks (255 registers; the presets' bounds spilled 220-264 bytes), the line-load pipeline "
                   "in dynamic shared memory (SoA fp8 keys' 3 stages took 53 KB, past the 48 KB of static arrays), the "
                   "query fragments in shared memory (SoA 4-bit keys with 8-bit values spilled at 255 registers with "
                   "them in registers); bench/dbg/width_sweep.py with HEAD_DIMS=256: no spills but the row below")
    for t in _NV) + tuple(
    OptionOverride(t, (("layout", "aos"), ("value_bits", 8), ("head_dim", 256)),
                   (("stages", 0), ("tile_unroll", 1)),
                   "AoS slots with 8-bit values at head_dim 256 (no preset): the line-load pipeline spilled 12-32 bytes at "
                   "255 registers; the register prefetch (cuda_options then drops dyn_smem and pair_prmt, which place "
                   "that pipeline) needs 246 (fp8 keys), no spills. Untimed. (On AMD, 8-bit values at "
                   "head_dim 256 spill 8-64 VGPRs at any launch bound (the decode is unbounded there): past 256 "
                   "architectural VGPRs a wave)")
    for t in _NV) + tuple(
    OptionOverride(t, (("rotation", "orthogonal"), ("head_dim", d)), (("dequant_rounds", r),),
                   f"the dense rotation's rows dequant at head_dim {d}: {r} rounds of a block's rows through one rotation "
                   "(bf16 / fp16 outputs; each k-chunk's B fragments serve 3-5x the rows, no pad rows at 80). H100, same "
                   "run, B=8 L=8K x 32 KV heads, bf16 out, outputs bit-identical: 80 x 4 (4 blocks an SM) 0.773 / 0.821 / "
                   "0.814x the one-round time (4bit_nc SoA, 3bit_nc AoS, rotated k8v4 AoS), 96 x 2 (3 blocks) 0.948 / "
                   "0.971x (4bit_nc SoA, k3v4_nc AoS); the store's rounds were slower (80 x 4: 1.05-1.06x; "
                   "bench/results/h100-2026-12-07-dense-rounds.md)")
    for t in _NV for d, r in ((80, 4), (96, 2))) + (
    OptionOverride(Target.SM90, (("key_codec", "lloyd_max"), ("key_bits", 3), ("head_dim", 256)),
                   (("decode_warps", 4), ("decode_min_blocks", 2)),
                   "3-bit keys at head_dim 256: 2 blocks of 4 warps (the same 8 warps an SM), debug sweep on an H100, "
                   "CUDA graphs, B=32 L=32K Hq 16 Hk 8, the defaults timed first and again last: SoA 3bit_nc 647 vs "
                   "680 / 663 us, k3v4_nc 766 vs 786 / 786, AoS 3bit_nc 714 vs 744 / 742, k3v4_nc 778 vs 803 / 801; "
                   "4-bit and fp8 keys within 2 % either way (bench/results/h100-2026-12-06-head256.md)"),
)


def cuda_options(spec: LayoutSpec, target: Target, kind: str = "generic") -> CudaOptions:
    """The target's options with every matching per-spec override applied, in table order. An override's
    ``dyn_smem`` is a placement of the line-load pipeline: an instance of ``kind`` without one (the
    ``portable`` fragment path) keeps its static shared memory (an explicit ``CudaOptions(dyn_smem=True)``
    passed to ``make_variant`` is still refused there, by ``decode_dynamic_smem``). ``pair_prmt`` (measured on the
    presets) is dropped where the spec's line-load rows do not fit the table's holes, which keeps the plain 32-copy
    table (AoS 4-bit keys with 8-bit values at head_dim 128 raised under the presets' 4 warps of 3584-byte rows; their
    own override now takes 2 warps, which fit: tests/test_lower_cuda.py removes it to exercise this)."""
    opts = CUDA_OPTIONS.get(target, CudaOptions())
    for o in CUDA_OPTION_OVERRIDES:
        if o.applies(spec, target):
            opts = dataclasses.replace(opts, **dict(o.changes))
    eligible = not cuda_reasons(spec, target, kind)
    if opts.dyn_smem and eligible and (opts.stages < 2 or _line_loads(spec, platform_for(target, kind)) is None):
        opts = dataclasses.replace(opts, dyn_smem=False, pair_prmt=False)  # the table's holes are dynamic too
    if opts.pair_prmt and eligible:
        try:  # the override was measured on the presets: a spec whose rows miss the holes keeps the plain table
            decode_dynamic_smem(spec, target, kind, opts)
        except ValueError:
            opts = dataclasses.replace(opts, pair_prmt=False)
    if dense_rotation(spec) and opts.dequant_rows > 1:  # the rows dequant's rounds with the dense rotation: one
        opts = dataclasses.replace(opts, dequant_rows=1)  # (two spilled 20 bytes in sm90's AoS k3v4_nc fp32 instance)
    return opts


#: fp8 key formats as the C++ encoder/decoder sees them: exponent bias, saturation value, tie
#: rule, NaN code; ``scale`` = fp8 value / fp16(sign | (byte & 0x7f) << 7) = 2^(15 - bias)
FP8_FORMATS = {
    KeyCodec.FP8_E4M3FN: dict(bias=7, ties_away=False, nan_code="0x7f", no_negative_zero=False),
    KeyCodec.FP8_E4M3FNUZ: dict(bias=8, ties_away=False, nan_code="0x80", no_negative_zero=True),
    # Triton rounds e4b15 ties away from zero (measured, tests/data/e4b15_triton_h200.npz): so do we
    KeyCodec.FP8_E4B15: dict(bias=15, ties_away=True, nan_code="0x7f", no_negative_zero=False),
}


def backend_for(target: Target) -> Backend:
    return Backend.HIP if target.info.vendor is Vendor.AMD else Backend.CUDA


def platform_for(target: Target, kind: str = "generic") -> Platform:
    p = PLATFORMS["hip" if target.info.vendor is Vendor.AMD else "cuda"]
    if kind == "portable" and p.name == "cuda":  # the HIP instance's fragment and byte-permute code
        p = dataclasses.replace(p, mma_impl="shfl", byte_perm_def=_PORTABLE_PRMT,
                                defines=p.defines.replace("__byte_perm((x), (y), (s))", "tq_prmt((x), (y), (s))")
                                .replace("tq_cvt_bf16x2((a), (b))", "tq_pack2(tq_f2bf(a), tq_f2bf(b))")
                                .replace("tq_cvt_f16x2((a), (b))", "tq_pack2(TQ_F2H(a), TQ_F2H(b))"))
    return p


def cuda_reasons(spec: LayoutSpec, target: Target, kind: str = "generic") -> list[Reason]:
    """Why this spec cannot be lowered to C++ for this target (empty = eligible)."""
    r = list(check_target(spec, target))
    if target.info.vendor not in (Vendor.NVIDIA, Vendor.AMD):
        r.append(Reason("target", str(target), "an NVIDIA (cuda) or AMD (hip) target",
                        "the CPU runs the reference or the Triton interpreter"))
    if spec.head_dim not in HEAD_DIMS:
        r.append(Reason("head_dim", spec.head_dim, list(HEAD_DIMS),
                        "the C++ kernels hold one 32-lane warp of D/32 elements and 16·D/8 accumulators; "
                        "other head sizes run on Triton or the reference"))
    if not spec.key_codec.is_fp8 and spec.key_bits > 4:
        r.append(Reason("key_bits", spec.key_bits, [2, 3, 4], "the byte-permute codebook lookup holds 16 entries"))
    if kind not in KINDS:
        r.append(Reason("kind", kind, list(KINDS)))
    elif kind == "portable" and target.info.vendor is not Vendor.NVIDIA:
        r.append(Reason("kind", kind, ["generic"], "AMD variants always use the portable fragment path"))
    return r


def dense_rotation(spec: LayoutSpec) -> bool:
    """A rotation by a dense matrix (the orthogonal one: head_dim 96 / 80's, no Hadamard matrix there): the C++ decode
    takes the query rotated by Πᵀ beforehand (the launcher's fp32 matmul), the store and the rows dequant rotate by
    m16n8k16 products with the bf16 parts of Πᵀ / Π (``tq_dense_rotate``)."""
    return spec.rotation is Rotation.ORTHOGONAL


# The dequant's __launch_bounds__ minimum: 8 blocks an SM (64 registers a thread on NVIDIA; without a minimum ptxas held
# the head_dim-64 SoA 4-bit dequant to 40 and spilled)
DEQUANT_MIN_BLOCKS = 8
# ... and with a dense rotation 4 on NVIDIA (128 registers: under 8 blocks' 64 the m16n8k16 rotation's accumulators and
# parts spilled 60-316 bytes at head_dim 96, NVRTC sm80 / sm90), 2 on AMD (its 30 KB of LDS a block: two fit gfx90a /
# gfx942's 64 KB, where clang refused the 4 blocks' occupancy target)
DENSE_DEQUANT_MIN_BLOCKS = {"cuda": 4, "hip": 2}
# ... and with its rounds (CudaOptions.dequant_rounds, NVIDIA only) by a lane's elements (store_elems): 16 (head_dim
# 80) 4 blocks (128 registers, no spills sm80-90: H100 same run, 4 rounds at 4 blocks 0.77-0.82x the one-round
# time, at 3 blocks 0.82-0.93x, bench/results/h100-2026-12-07-dense-rounds.md), else 3 (168 registers, 139-154 taken
# at sm90; at 4 blocks head_dim 96's two rounds spilled 44-48 bytes in k3v4_nc AoS's 16-bit instances, sm80-90)
DENSE_DEQUANT_ROUNDS_MIN_BLOCKS = {16: 4}
DENSE_DEQUANT_ROUNDS_MIN_BLOCKS_ELSE = 3


# The store's __launch_bounds__ minimum at 16-element lanes (head_dim 80) on NVIDIA: 4 blocks an SM (up to 128
# registers: 80 taken, none spilled; ptxas's own choice without one, 56 for sm90's bf16 store of 3-bit values, spilled
# a flag across the dense rotation's barriers). There the dense rotation's store of Lloyd-Max keys loads its value row
# before the key's rotation (``_store_ctx``'s v_first: 92 registers at 4 blocks) at 6 blocks (up to 85: 80 taken, none
# spilled): on an H100 0.947-0.966x the time of session 55's store (4 blocks, the value row after the key); the value
# row first at 4 blocks 1.04-1.05x, 6 blocks alone 1.00x; rotated fp8 keys (the value row first anyway) at 6 blocks
# 1.015-1.017x; at 96 (32-element lanes, 16 more registers) the value row first was 1.01-1.12x
# (bench/results/h100-2026-12-07-store-ab.md). Elsewhere the store has no minimum
STORE_MIN_BLOCKS_16 = 4
STORE_MIN_BLOCKS_V_FIRST = 6


def min_resident_bound(platform: Platform, blocks: int, threads: int) -> int:
    """``__launch_bounds__``'s second argument for ``blocks`` resident blocks of ``threads`` threads a multiprocessor.
    CUDA reads it as blocks an SM; HIP as waves (64 threads) an execution unit (a SIMD, four a CU), so the same count
    there capped a kernel at 512 / count VGPRs: 8 blocks of 128 threads meant 8 waves an EU, 64 VGPRs, where the same
    occupancy, 16 waves a CU, is 4 an EU and 128 VGPRs."""
    if platform.name == "cuda":
        return blocks
    return max(1, blocks * threads // (64 * 4))


def cuda_rules(spec: LayoutSpec) -> Rules:
    return Rules(layouts=(str(spec.layout),), head_dims=(spec.head_dim,), block_sizes=(spec.block_size,),
                 max_gqa=MAX_GQA)


# ---------------------------------------------------------------------------- constants
def _f32(x: float) -> str:
    """A C float literal that parses back to exactly this float32."""
    v = float(np.float32(x))
    s = repr(v)
    if "e" not in s and "." not in s and "inf" not in s and "nan" not in s:
        s += ".0"
    return s + "f"


def store_lanes(head_dim: int) -> int:
    """Lanes per (token, head) row in the store and the rows dequant (the launcher's rows a warp: 32 // lanes): D/32
    of 32 elements each, or at a head_dim that is no multiple of 32 (Phi-2's 80) D/16 of 16 (``store_elems``)."""
    return head_dim // 32 if head_dim % 32 == 0 else head_dim // 16


def store_elems(head_dim: int) -> int:
    """Elements a lane of a store / rows-dequant row (``store_lanes``): 32, or 16 at head_dim 80."""
    return head_dim // store_lanes(head_dim)


def store_chunk(bits: int, elems: int = 32) -> int:
    """Elements per store chunk: the fewest multiple of 8 (one 16-byte load of 16-bit inputs) whose
    BITS-bit codes fill whole 32-bit words, at most a lane's ``elems`` (3-bit codes in 16-element lanes: chunks of
    16, 6 bytes)."""
    return min(next(ch for ch in (8, 16, 32) if ch * bits % 32 == 0), elems)


def bucket_grid(head_dim: int, bits: int) -> dict[str, Any]:
    """The store's codebook search as one table lookup (``codebook.search_grid``), as C literals: entry g is the
    code at the cell's left edge (midpoints below it) and the cell's midpoint in t (or 3e38); ``c2``: the squared
    centroids by code (the fold's Σ c²)."""
    g = search_grid(head_dim, bits)
    c = np.asarray(lloyd_max(head_dim, bits).centroids, dtype=np.float64)
    entries = [(b, _f32(g.mid_t[i]) if i >= 0 else "3.0e38f") for b, i in zip(g.below, g.inside)]
    half = 1 << (bits - 1)
    return {"scale": _f32(g.scale), "offset": _f32(g.offset), "entries": entries, "c2": [_f32(x ** 2) for x in c],
            "c2_middle": _f32(c[half] ** 2), "c2_first": _f32(c[0] ** 2)}


def dense_store_units(head_dim: int, row_warps: int, rounds: int = 1) -> tuple[int, int] | None:
    """The dense rotation's store and rows dequant (``tq_dense_rotate``): a block's rows (row_warps x 32 /
    store_lanes) in m-tiles of 16, each split into n-tile groups so that every warp takes the same number of (m-tile,
    n-group) units: (m-tiles, groups an m-tile), the fewest groups that deal evenly (head_dim 96 on 4 warps: 40 rows,
    3 m-tiles x 4 groups of 3 n-tiles, 3 units a warp); None where no count does (96 on 8 warps: 5 m-tiles of 12
    n-tiles). The groups divide row_warps, so a warp's units share one n-tile group (warp % groups) and each k-chunk's
    B fragments serve them all."""
    rows = rounds * row_warps * (32 // store_lanes(head_dim))
    mt, nt = -(-rows // 16), head_dim // 8
    return next(((mt, s) for s in range(1, nt + 1) if nt % s == 0 and row_warps % s == 0 and mt * s % row_warps == 0),
                None)


STORE_ROUNDS_SMEM = 44 * 1024  # the store's rounds: the rotation's shared memory at most (static: 48 KB a block)


def dense_smem_bytes(head_dim: int, m_tiles: int, parts: int) -> int:
    """``TqDenseSmemT<parts, m_tiles>``'s bytes: the rows' bf16 parts at a pitch of D + 8, or y's floats at D + 4."""
    return max(parts * m_tiles * 16 * (head_dim + 8) * 2, m_tiles * 16 * (head_dim + 4) * 4)


def row_reasons(spec: LayoutSpec, options: CudaOptions) -> list[Reason]:
    """Why ``options`` cannot run the store and dequant of ``spec``: the dense rotation's units (``tq_dense_rotate``)
    do not deal evenly to the block's warps, or the dequant is the lane kernel where it needs the rows kernel (the
    dense rotation rotates a block's rows together; the lane kernel takes D/32 elements a lane, none at head_dim 80)."""
    r = []
    dense = dense_rotation(spec)
    if dense and not dense_store_units(spec.head_dim, options.row_warps):
        ok = [w for w in WARP_COUNTS if dense_store_units(spec.head_dim, w)]
        r.append(Reason("row_warps", options.row_warps, ok, f"the dense rotation deals a block's m-tiles x n-tiles "
                        f"evenly to its warps (head_dim {spec.head_dim})"))
    if dense and store_rounds(spec, options) > 1:
        r += _rounds_reasons("store_rounds", spec.head_dim, options.row_warps, options.store_rounds, "for fp16 keys")
    if dense and dequant_rounds(spec, options) > 1:
        r += _rounds_reasons("dequant_rounds", spec.head_dim, options.row_warps, options.dequant_rounds,
                             "for 16-bit outputs")
    if not options.dequant_rows and (dense or spec.head_dim % 32):
        r.append(Reason("dequant_rows", 0, "1 or more", "the dense rotation's dequant is the rows kernel (a block's rows "
                        "rotated together), not the lane kernel" if dense else
                        f"the lane dequant takes D/32 elements a lane: at head_dim {spec.head_dim} the dequant is the "
                        f"rows kernel ({store_lanes(spec.head_dim)} lanes of {store_elems(spec.head_dim)} a row)"))
    return r


def _rounds_reasons(name: str, head_dim: int, row_warps: int, rounds: int, parts2: str) -> list[Reason]:
    """Why ``rounds`` rounds of a block's rows cannot go through one dense rotation (the store's or the dequant's
    option ``name``): their m-tiles x n-tiles do not deal evenly to the warps, or their two bf16 parts (``parts2``:
    whose) pass ``STORE_ROUNDS_SMEM``."""
    units = dense_store_units(head_dim, row_warps, rounds)
    if not units:
        return [Reason(name, rounds, [1], f"the rounds' m-tiles x n-tiles deal evenly to the block's warps (head_dim "
                                          f"{head_dim})")]
    if dense_smem_bytes(head_dim, units[0], 2) > STORE_ROUNDS_SMEM:
        return [Reason(name, rounds, [1], f"the rounds' rows in shared memory ({dense_smem_bytes(head_dim, units[0], 2)} "
                                          f"bytes {parts2}) stay within {STORE_ROUNDS_SMEM} (a block's static 48 KB, "
                                          f"the codebook's table beside them)")]
    return []


def dequant_rounds(spec: LayoutSpec, options: CudaOptions) -> int:
    """Rounds of a rows-dequant block's rows through one rotation for bf16 / fp16 outputs (the launcher's tokens a
    warp: rounds x 32 / store_lanes): the option for the dense rotation, else 1 (``dequant_rows`` sets the rounds of
    the other rotations; the dense rotation's fp32 outputs take one)."""
    return options.dequant_rounds if dense_rotation(spec) else 1


def store_rounds(spec: LayoutSpec, options: CudaOptions) -> int:
    """Rounds of a store block's rows (the launcher's rows a block: rounds x row_warps x 32 / store_lanes): the
    option for the dense rotation's Lloyd-Max keys, else 1."""
    return options.store_rounds if dense_rotation(spec) and not spec.key_codec.is_fp8 else 1


def _store_ctx(spec: LayoutSpec, options: CudaOptions, platform: Platform) -> dict[str, Any]:
    kbits = 8 if spec.key_codec.is_fp8 else spec.key_bits
    el = store_elems(spec.head_dim)
    kch, vch = store_chunk(kbits, el), store_chunk(spec.value_bits, el)
    rounds = store_rounds(spec, options)
    v_first = platform.name == "cuda" and el == 16 and dense_rotation(spec) and not spec.key_codec.is_fp8 and rounds == 1
    return {
        "lanes": store_lanes(spec.head_dim), "elems": el, "kch": kch, "vch": vch,
        # __launch_bounds__' minimum blocks: at 16-element lanes on NVIDIA STORE_MIN_BLOCKS_16, or where the dense
        # rotation's Lloyd-Max keys take the value row first STORE_MIN_BLOCKS_V_FIRST (fp8 keys do on sm89+ anyway);
        # none elsewhere
        "min_blocks": 0 if platform.name != "cuda" or el != 16 else STORE_MIN_BLOCKS_V_FIRST if v_first
        else STORE_MIN_BLOCKS_16,
        "v_first": v_first,
        # a chunk's codes: CH·bits/8 bytes at a multiple of that inside the field
        "k_align": min(field_alignment(spec, "k_data"), 16, pow2_divisor(kch * kbits // 8)),
        "v_align": min(field_alignment(spec, "v_data"), 16, pow2_divisor(vch * spec.value_bits // 8)),
        "grid": None if spec.key_codec.is_fp8 else bucket_grid(spec.head_dim, spec.key_bits),
        "dense": _dense_plan(spec.head_dim, options.row_warps) if dense_rotation(spec) else None,
        "rounds": rounds,
        "dense_r": _dense_plan(spec.head_dim, options.row_warps, rounds) if rounds > 1 else None,
        "dq_rounds": dequant_rounds(spec, options),
        "dense_q": _dense_plan(spec.head_dim, options.row_warps, dequant_rounds(spec, options))
        if dequant_rounds(spec, options) > 1 else None,
    }


def _dense_plan(head_dim: int, row_warps: int, rounds: int = 1) -> dict[str, int]:
    """``tq_dense_rotate``'s constants (``dense_store_units``): rows a block, its m-tiles, n-tile groups an m-tile,
    n-tiles a unit, units a warp."""
    mt, groups = dense_store_units(head_dim, row_warps, rounds)
    return {"rows": rounds * row_warps * (32 // store_lanes(head_dim)), "mt": mt, "groups": groups,
            "npu": head_dim // 8 // groups, "upw": mt * groups // row_warps}


def _alignments(spec: LayoutSpec) -> dict[str, int]:
    bl = derive_layout(spec)
    ak, av = field_alignment(spec, "k_data"), field_alignment(spec, "v_data")
    epl = spec.head_dim // 32
    return {
        "k_data": min(ak, 16), "v_data": min(av, 16),
        "k_quarter": min(ak, pow2_divisor(bl.kd // 4)),
        # (3-bit values at head_dim 96: 4.5 bytes an eighth, at half-byte offsets: byte loads)
        "v_eighth": min(av, pow2_divisor(bl.vd // 8)) if bl.vd % 8 == 0 else 1,
        "k_lane": min(ak, pow2_divisor(epl)),
    }


def _meta_pairs(spec: LayoutSpec) -> bool:
    """fp16 fields of tokens 2i and 2i+1 adjacent and 4-byte aligned (SoA, even block size)."""
    bl = derive_layout(spec)
    names = [f for f in ("k_norm", "v_scale", "v_zero") if bl.has(f)]
    if spec.block_size % 2:
        return False
    for h in range(1, 17):
        page = bl.page(h)
        for f in names:
            fa = page[f]
            if fa.token_stride != 2 or math.gcd(fa.offset, 2 * fa.token_stride, fa.head_stride, page.block_bytes) % 4:
                return False
    return True


def _pipeline_ok(spec: LayoutSpec, platform: Platform) -> bool:
    """What any cp.async decode pipeline needs: CUDA fragments, whole tiles inside one block."""
    return platform.name == "cuda" and platform.mma_impl == "ptx" and spec.block_size % 16 == 0


def _thread_copies(spec: LayoutSpec, platform: Platform) -> bool:
    """The cp.async decode pipeline without line loads: per-thread pieces, each piece a thread copies
    (K quarter, V eighth, fp16 pairs) made of aligned 4-byte words."""
    bl = derive_layout(spec)
    a = _alignments(spec)
    return (_pipeline_ok(spec, platform) and _meta_pairs(spec) and a["k_quarter"] >= 4 and a["v_eighth"] >= 4
            and (bl.kd // 4) % 4 == 0 and (bl.vd // 8) % 4 == 0)


def _lds_width(nbytes: int) -> int:
    """Widest shared-memory access (16, 8 or 4 bytes) that tiles a piece of ``nbytes`` at offsets
    that are multiples of it (the AoS slots' swizzle count, ``_slot_lines``)."""
    return 16 if nbytes % 16 == 0 else (8 if nbytes % 8 == 0 else 4)


def _piece_reads(n: int, starts: list[int]) -> int:
    """Aligned 4-byte shared loads that cover an ``n``-byte piece at any of ``starts`` (0 when
    ``n`` is whole words and every start is word-aligned: then ``_access_width`` reads apply)."""
    if n % 4 == 0 and all(b % 4 == 0 for b in starts):
        return 0
    return max((b % 4 + n + 3) // 4 for b in starts)


def _piece_words(n: int, b: int, reads: int, w: int) -> list[int]:
    """The record bytes read by one lane for its ``n``-byte piece at byte ``b``: ``n // w`` aligned
    ``w``-byte accesses, or (``reads`` > 0) ``reads`` 4-byte words from b's word on, each clamped
    to the piece's last word (the kernel's ``tq_lds_bytes``)."""
    if not reads:
        return [b + x * w for x in range(n // w)]
    return [4 * min(b // 4 + x, (b + n - 1) // 4) for x in range(reads)]


def _aos_shifts(spec: LayoutSpec) -> tuple[int, ...]:
    """AoS: the offsets of a slot inside its 16-byte chunk, over KV head counts 1..16, heads and
    tokens (blocks are whole chunks, so a slot's offset depends only on its place in the block)."""
    bl = derive_layout(spec)
    out = set()
    for hk in range(1, 17):
        k = bl.page(hk)["k_data"]
        out |= {(k.offset + h * k.head_stride + t * k.token_stride) % 16 for h in range(hk) for t in range(16)}
    return tuple(sorted(out))


def _access_width(n: int, starts: list[int]) -> int:
    """Widest shared-memory access (16, 8 or 4 bytes) that tiles an ``n``-byte piece at every one of
    ``starts`` (a multiple of it); 0 when none does (the piece is read as funnel-shifted words)."""
    return next((a for a in (16, 8, 4) if n % a == 0 and all(b % a == 0 for b in starts)), 0)


def thread_piece(bits: int, n: int) -> tuple[int, tuple[int, ...]]:
    """A decode thread's piece i (< n) of a field of n pieces of ``bits`` bits, piece i from bit i·bits (a value eighth:
    8 of vd bits; a key quarter: 4 of 2·kd bits): (the bytes read for a piece, the byte each piece's read starts at).
    Whole bytes: bits / 8 bytes at byte i·bits / 8. Otherwise the fewest bytes that hold every piece from its first
    byte on ((i·bits) % 8 bits into it), a read's start moved back where it would pass the field's end: 3-bit values at
    head_dim 96 (36 bits) 5 bytes from the eighth's first byte; at head_dim 80 (30 bits) 5 bytes, the last eighth's from
    byte 25, 10 bits into it; 3-bit keys at head_dim 80 (60-bit quarters) 8 bytes at 0, 7, 15, 22 (the kernel's
    ``tq_piece_byte``; the bits from there: i·bits - 8·start)."""
    if bits % 8 == 0:
        return bits // 8, tuple(i * bits // 8 for i in range(n))
    nb = max(-(-((i * bits) % 8 + bits) // 8) for i in range(n))
    end = n * bits // 8
    return nb, tuple(min(i * bits // 8, end - nb) for i in range(n))


def piece_spans(bits: int, n: int) -> tuple[tuple[int, int], ...]:
    """The bytes each piece i (< n) of ``bits`` bits lies in: (first byte, bytes), the first byte holding bit i·bits and
    the last bit (i + 1)·bits - 1 (the line loads read exactly the words of these bytes: ``tq_lds_bits_addr``; 3-bit
    values at head_dim 80: 4 or 5 bytes, the last eighth's 26..29)."""
    return tuple((i * bits // 8, ((i + 1) * bits - 1) // 8 - i * bits // 8 + 1) for i in range(n))


def value_eighth(vd: int) -> tuple[int, tuple[int, ...]]:
    """A decode thread's value piece, the eighth g of a token's ``vd`` value bytes (``vd`` bits from bit g·vd of the
    field): ``thread_piece(vd, 8)``. The line loads take whole and half bytes (vd % 8 in 0, 4: 3-bit values at head_dim
    96, the 5 bytes from each eighth's first byte, read from the staged rows as funnel-shifted words); other fractions
    (head_dim 80's 30-bit eighths) the register prefetch."""
    return thread_piece(vd, 8)


def key_quarter(kd: int) -> tuple[int, tuple[int, ...]]:
    """A decode thread's key piece, the quarter r of a token's ``kd`` key bytes (2·kd bits from bit 2·kd·r):
    ``thread_piece(2 * kd, 4)``; a fraction (3-bit keys at head_dim 80: 7.5 bytes) takes the register prefetch."""
    return thread_piece(2 * kd, 4)


def _line_pieces(kd: int, vd: int) -> bool:
    """The line loads read a thread's key quarter and value eighth as whole bytes or, a fraction read as 8 / 5 bytes
    (3-bit keys at head_dim 80: 7.5-byte quarters; 3-bit values at 96 / 80: 4.5- / 3.75-byte eighths), as the aligned
    words that hold them funnel-shifted to the piece's bit; the rest (2-bit values at 80: 2.5-byte eighths, 3 bytes
    read) take the register prefetch."""
    return (kd % 4 == 0 or key_quarter(kd)[0] == 8) and (vd % 8 == 0 or value_eighth(vd)[0] == 5)


def _reads_for(kd: int, vd: int, vo: int, shifts: tuple[int, ...]) -> tuple[int, int, int, int]:
    """(rk, wk, rv, wv) for the K quarters / V eighths of records starting at any of ``shifts`` bytes
    into their first chunk: wk > 0, pieces read as accesses of wk bytes (rk = 0); wk = 0, as rk aligned
    4-byte words, funnel-shifted (the same for V; fractional pieces, ``piece_spans``: always words)."""
    def reads(spans: list[tuple[int, int]]) -> tuple[int, int]:
        n0 = spans[0][1]
        w = _access_width(n0, [b for b, _ in spans]) if all(n == n0 for _, n in spans) else 0
        return (0 if w else max((b % 4 + n + 3) // 4 for b, n in spans)), w
    rk, wk = reads([(o + b, n) for o in shifts for b, n in piece_spans(2 * kd, 4)])
    rv, wv = reads([(o + vo + b, n) for o in shifts for b, n in piece_spans(vd, 8)])
    return rk, wk, rv, wv


def line_reads(kd: int, vd: int, vo: int | None = None, o: int = 0,
               reads: tuple[int, int, int, int] | None = None) -> list[tuple[int, list[tuple[int, int]]]]:
    """The decode's fragment reads of one staged tile, as the kernel issues them: per instruction,
    its access width in bytes and the (token, row byte) of each of the 32 lanes. Thread (g, r)
    reads the K quarter r of tokens g and 8 + g, and the V eighth g of tokens 2r + (i & 1) + 8 (i >> 1)
    (the mma fragment layout). K starts ``o`` bytes into the row (AoS: the slot's offset in its
    chunk), V ``vo`` bytes after K (default ``kd``). Pieces that are not whole aligned words (3-bit
    values: 6-byte eighths; 3-bit keys at head_dim 64; AoS pieces at 2-byte offsets) are read as
    aligned 4-byte words, others in accesses of the width ``_reads_for`` gives (``reads``: its
    answer for every row the kernel reads, default this one row's)."""
    ks, vs = piece_spans(2 * kd, 4), piece_spans(vd, 8)
    vo = kd if vo is None else vo
    rk, wk, rv, wv = reads if reads is not None else _reads_for(kd, vd, vo, (o,))
    wk, wv = wk or 4, wv or 4
    out = []
    for j in range(2):
        per_lane = [_piece_words(ks[ln % 4][1], o + ks[ln % 4][0], rk, wk) for ln in range(32)]
        for x in range(len(per_lane[0])):
            out.append((wk, [(8 * j + ln // 4, per_lane[ln][x]) for ln in range(32)]))
    for i in range(4):
        per_lane = [_piece_words(vs[ln // 4][1], o + vo + vs[ln // 4][0], rv, wv) for ln in range(32)]
        for x in range(len(per_lane[0])):
            out.append((wv, [(2 * (ln % 4) + (i & 1) + 8 * (i >> 1), per_lane[ln][x]) for ln in range(32)]))
    return out


def line_conflicts(kd: int, vd: int, ncp: int, sa: int, sb: int, vo: int | None = None,
                   shifts: tuple[int, ...] = (0,), reads: tuple[int, int, int, int] | None = None) -> int:
    """Shared-memory wavefronts of one tile's fragment reads when chunk c of token t sits at
    chunk c ^ swz(t) of a row of ``ncp`` 16-byte chunks, swz(t) = sa·((t >> 1) & 3) ^ sb·(t & 1),
    summed over the records' ``shifts`` (AoS). A w-byte access serves 128 / w lanes per wavefront;
    within one, a bank holding several distinct words costs one more wavefront each (the same word
    is a broadcast)."""
    return read_wavefronts([x for o in shifts for x in line_reads(kd, vd, vo, o, reads)], ncp, sa, sb)


def read_wavefronts(instrs, ncp: int, sa: int, sb: int) -> int:
    """``line_conflicts``' count for any shared reads of a staged tile: ``instrs`` as ``line_reads`` gives them
    (per instruction its access width and each lane's (token, row byte)) in rows of ``ncp`` chunks swizzled by
    (sa, sb)."""
    total = 0
    for w, lanes in instrs:
        per = 128 // w
        for p0 in range(0, 32, per):
            banks: dict[int, set[int]] = {}
            for t, b in lanes[p0:p0 + per]:
                swz = (sa * ((t >> 1) & 3)) ^ (sb * (t & 1))
                addr = t * ncp * 16 + (((b >> 4) ^ swz) << 4) + (b & 15)
                for word in range(addr // 4, (addr + w) // 4):
                    banks.setdefault(word % 32, set()).add(word)
            total += max(len(v) for v in banks.values())
    return total


@lru_cache(maxsize=None)
def line_swizzle(kd: int, vd: int) -> tuple[int, int, int]:
    """(ncp, sa, sb) with the fewest wavefronts (``line_conflicts``); ties go to the smallest."""
    ncp = pow2_at_least((kd + vd) // 16)
    best = min((line_conflicts(kd, vd, ncp, sa, sb), sa, sb) for sa in range(ncp) for sb in range(ncp)
               if sa * 3 < ncp)  # every swz(t) < ncp, so c ^ swz(t) stays in the row
    return ncp, best[1], best[2]


@lru_cache(maxsize=None)
def line_swizzle_aos(kd: int, vd: int, vo: int, nc: int, shifts: tuple[int, ...],
                     octets: bool = False, reads: tuple[int, int, int, int] | None = None) -> tuple[int, int, int, int]:
    """AoS rows: (wavefronts, ncp, sa, sb) with the fewest wavefronts over every shift; rows of the
    ``nc`` chunks a slot can span (unswizzled, or one more: an odd chunk count staggers the banks) or
    of a power of two of chunks with a swizzle; ties go to the fewest chunks. ``octets`` (the long
    rows of a head group's slots): the swizzled rows are ``nc`` rounded up to a multiple of 8 chunks
    and the swizzle stays inside each aligned octet of chunks (swz(t) < 8). ``reads``: the reads the kernel
    issues (``_reads_for``'s form; default ``_reads_for(kd, vd, vo, shifts)``)."""
    reads = reads or _reads_for(kd, vd, vo, shifts)
    return min((line_conflicts(kd, vd, n, sa, sb, vo, shifts, reads), n, sa, sb)
               for n, sa, sb in aos_swizzle_candidates(nc, octets))


def aos_swizzle_candidates(nc: int, octets: bool = False) -> list[tuple[int, int, int]]:
    """``line_swizzle_aos``' candidate rows (ncp, sa, sb): ``nc`` or ``nc + 1`` chunks unswizzled, or a power of two
    of chunks (``octets``: ``nc`` rounded up to a multiple of 8, the swizzle inside each octet) with a swizzle."""
    cands = [(n, 0, 0) for n in (nc, nc + 1)]
    p2 = -(-nc // 8) * 8 if octets else pow2_at_least(nc)
    lim = min(p2, 8) if octets else p2
    return cands + [(p2, sa, sb) for sa in range(lim) for sb in range(lim) if sa * 3 < lim and (sa or sb)]


def _aos_line_loads(spec: LayoutSpec, platform: Platform, group: int = 1) -> dict[str, Any] | None:
    """AoS line loads: a token-head's slot (K, V and fp16 fields, 2-byte aligned) starts o = its
    offset mod 16 into a 16-byte chunk (o depends on the token's place in its block only: the same
    for every tile), so the warp copies the chunks that cover each of the tile's 16 slots (16 bytes a
    lane; consecutive slots share lines) into rows and reads fragments at o + their slot offset, as
    aligned 4-byte words funnel-shifted (``tq_lds_bytes_at``), the fields as 2-byte halves.
    ``group`` > 1 (``CudaOptions.head_groups``): the block's warps are ``group`` neighbour KV heads,
    whose slots lie side by side in each token's row; the block copies the chunks of the group's
    slots together (each 16-byte chunk once, where each warp alone would copy the chunks it shares
    with its neighbours again) into one row per token, and each warp reads its slot at its offset."""
    if not _pipeline_ok(spec, platform):
        return None
    bl = derive_layout(spec)
    if not _line_pieces(bl.kd, bl.vd) or spec.block_size % 16:
        return None
    names = [f for f in ("k_norm", "v_scale", "v_zero") if bl.has(f)]
    for h in range(1, 17):
        page = bl.page(h)
        k = page["k_data"]
        if k.head_stride != bl.slot_bytes or page.block_bytes % 16:
            return None
        for f in ["v_data"] + names:
            fa = page[f]
            if (fa.token_stride, fa.head_stride) != (k.token_stride, k.head_stride) or not (
                    0 <= fa.offset - k.offset < bl.slot_bytes) or (fa.offset - k.offset) % 2:
                return None
    page = bl.page(16)
    k = page["k_data"]
    rel = {f: page[f].offset - k.offset for f in ["v_data"] + names}
    return _slot_lines(spec, bl.slot_bytes, rel["v_data"], nmeta=0, fk=rel.get("k_norm", -1), fvs=rel["v_scale"],
                       fvz=rel["v_zero"], group=group)


def _slot_lines(spec: LayoutSpec, slot: int, vo: int, nmeta: int, fk: int = -1, fvs: int = -1,
                fvz: int = -1, group: int = 1) -> dict[str, Any]:
    """The line-load plan of records copied as unaligned slots (``slot`` bytes, V ``vo`` bytes after
    K, starting at any of ``_aos_shifts`` in their first chunk): AoS slots with their fp16 fields at
    slot bytes fk / fvs / fvz, or SoA records whose ``nmeta`` fields are runs (``runs``). ``group``
    slots (or SoA records) side by side make one row (``_aos_line_loads``, ``_line_loads``): ``nc`` chunks
    reach over all of them, and the bank-conflict model counts every warp's reads (its slot at w·slot bytes
    into the row); each warp copies its own field runs. SoA pieces at word-aligned bytes in every row (``ak`` /
    ``av``: the access width, > 0) are read as ``rk`` / ``rv`` accesses of that width; other pieces, and every
    AoS piece (below), as that many aligned words, funnel-shifted."""
    bl = derive_layout(spec)
    shifts = _aos_shifts(spec)
    nc = (max(shifts) + group * slot + 15) // 16  # chunks the group's slots can reach into
    reads_at = tuple(sorted({o + w * slot for o in shifts for w in range(group)}))
    rk, ak, rv, av = _reads_for(bl.kd, bl.vd, vo, reads_at)
    kq, vq = key_quarter(bl.kd)[0], value_eighth(bl.vd)[0]
    model = None
    if spec.layout is Layout.AOS:
        # AoS slots keep the plan their measurements chose (sessions 4-18): every piece read as words, funnel-
        # shifted (k8v4's 4-byte-aligned slots too), and the swizzle picked by counting pieces aligned in every
        # row as accesses of the widest width dividing the piece (16 bytes for k8v4's 32-byte key quarters).
        # Whole 4-byte accesses with the swizzle the exact count picks (a tie at head_dim 64) measured 1.10x the
        # time for k8v4 at head_dim 64 and 1.00x at 128 (bench/results/h200-2026-12-03-soa-k3v4-sectors.md)
        model = (rk, _lds_width(kq) if ak else 0, rv, _lds_width(vq) if av else 0)
        rk, ak, rv, av = rk or (kq + 3) // 4, 0, rv or (vq + 3) // 4, 0
    wavefronts, ncp, sa, sb = line_swizzle_aos(bl.kd, bl.vd, vo, nc, reads_at, octets=group > 1, reads=model)
    return dict(aos=True, runs=nmeta > 0, slot=slot, group=group, nc=nc, ncp=ncp, sa=sa, sb=sb, nmeta=nmeta, vo=vo,
                fk=fk, fvs=fvs, fvz=fvz, ak=ak, av=av, rk=rk or kq // ak, rv=rv or vq // av,
                wavefronts=wavefronts)


def _line_loads(spec: LayoutSpec, platform: Platform, group: int = 1) -> dict[str, Any] | None:
    """Decode line loads (SoA, cp.async pipeline): a token-head's K and V bytes are one contiguous
    record of 16-byte chunks, so the warp copies each tile's 16 records whole, 16 bytes a lane
    (full 128-byte lines; H200: 83 % of the copy ceiling with no compute vs 59 % for per-fragment
    pieces), plus the tile's fp16 fields (one 32-byte run per field). Records that are not whole
    aligned 16-byte chunks are copied like AoS slots (``aos`` and ``runs``). None when the layout does
    not allow it. Pieces that are not whole aligned words (``rk``/``rv`` > 0) are read as that many
    aligned 4-byte words and funnel-shifted."""
    if spec.layout is Layout.AOS:
        return _aos_line_loads(spec, platform, group)
    if not _pipeline_ok(spec, platform) or not _meta_pairs(spec):
        return None
    bl = derive_layout(spec)
    rec = bl.kd + bl.vd
    if not _line_pieces(bl.kd, bl.vd):
        return None
    names = [f for f in ("k_norm", "v_scale", "v_zero") if bl.has(f)]
    whole = rec % 16 == 0
    for h in range(1, 17):
        page = bl.page(h)
        k, v = page["k_data"], page["v_data"]
        if v.offset != k.offset + bl.kd or (v.token_stride, v.head_stride) != (k.token_stride, k.head_stride):
            return None
        whole = whole and math.gcd(k.offset, k.token_stride, k.head_stride, page.block_bytes) % 16 == 0
        if page.block_bytes % 16 or math.gcd(k.offset, k.token_stride, k.head_stride) % 2:
            return None
        for f in names:
            fa = page[f]
            if fa.token_stride != 2 or math.gcd(fa.offset, fa.head_stride, page.block_bytes) % 16:
                return None
    if not whole or group > 1 or bl.vd % 8 or bl.kd % 4:
        # records that are not whole aligned chunks (k3v4_nc at head_dim 64: 24 + 32 bytes, 8-byte
        # aligned), or the records of a head group side by side (one row per token: records that
        # share 32-byte sectors with a neighbour head's, k3v4_nc at head_dim 128: 112 bytes, are
        # copied once), or fractional pieces (read at their bits by the slot path's shifts): copied like AoS
        # slots (the chunks that reach into each), the fields as SoA runs
        return _slot_lines(spec, rec, bl.kd, nmeta=len(names), group=group)
    ncp, sa, sb = line_swizzle(bl.kd, bl.vd)
    rk, ak, rv, av = _reads_for(bl.kd, bl.vd, bl.kd, (0,))
    return dict(aos=False, runs=True, group=1, vo=bl.kd, nc=rec // 16, ncp=ncp, sa=sa, sb=sb, nmeta=len(names),
                ak=ak, av=av, rk=rk, rv=rv,
                wavefronts=line_conflicts(bl.kd, bl.vd, ncp, sa, sb))


def line_group(spec: LayoutSpec, options: CudaOptions) -> int:
    """KV heads whose slots (AoS) or records (SoA) a decode block copies as one row per token
    (``_aos_line_loads``, ``_line_loads``): its ``decode_warps`` heads with ``head_groups``, else 1 (each
    warp its own rows)."""
    return options.decode_warps if options.head_groups else 1


def _pair_table(spec: LayoutSpec, platform: Platform, options: CudaOptions) -> tuple[int, int]:
    """(key bits, pair-table copies): 0 bits for fp8 keys; copies only for 3-/4-bit keys on the CUDA
    platform (the HIP fragment path looks codes up by byte permutes)."""
    kbits = 0 if spec.key_codec.is_fp8 else spec.key_bits
    return kbits, options.pair_copies if platform.name == "cuda" and kbits in (3, 4) else 0


def decode_dynamic_smem(spec: LayoutSpec, target: Target, kind: str, options: CudaOptions) -> int:
    """Bytes of dynamic shared memory the decode kernel takes with ``options.dyn_smem`` (0 without): the
    line-load pipeline (stages x warps x one warp's rows, or stages x one head group's rows with
    ``head_groups``; at least the 8 x D float query rows of each of the block's heads it replaces) and the pair table (entries x copies, twice that where it is addressed by OR from a base
    aligned to its size, once with ``pair_add``). The kernel static_asserts that its carve-up fits."""
    if not options.dyn_smem:
        return 0
    platform = platform_for(target, kind)
    group = line_group(spec, options)
    lines = _line_loads(spec, platform, group)
    if lines is None:
        raise ValueError(f"dyn_smem: {spec.token} on {target} has no line-load pipeline to place; "
                         "use the static layout (dyn_smem=False)")
    lw = 16 * lines["ncp"] * 4 + 8 * lines["nmeta"] * group  # one stage's rows and runs (a warp's; a head group's: the block's)
    qheads = options.decode_warps if options.head_groups else 1  # query octets in shared memory
    pipeline = options.stages * (options.decode_warps // group) * lw
    words = max(pipeline, 8 * qheads * spec.head_dim)
    kbits, copies = _pair_table(spec, platform, options)
    if options.pair_prmt:
        return _pair_holes_smem(spec, target, lines, options, kbits, copies, 4 * lw, 4 * pipeline)
    table = (1 << (2 * kbits)) * copies if copies else 0
    if table and kbits == 3 and not options.pair_add:
        table *= 2  # OR addressing: the table is aligned to its size inside twice its room
    return 4 * (words + table)


def _pair_holes_smem(spec: LayoutSpec, target: Target, lines: dict, options: CudaOptions, kbits: int, copies: int,
                     row_bytes: int, pipeline_bytes: int) -> int:
    """``pair_prmt``'s shared memory: the 4-bit pair table at a 256-byte entry stride (64 KB), its copies in each
    entry's first 128 bytes and the line-load pipeline in the other 128 (256 pieces of 128 bytes: a warp's rows of a
    stage, ``row_bytes``, must be whole pieces, so that warp and stage offsets double under the mapping; the kernel
    static_asserts the same)."""
    what = f"pair_prmt: {spec.token} on {target}"
    if kbits != 4 or copies != 32:
        raise ValueError(f"{what}: needs 4-bit Lloyd-Max keys and a pair table of 32 copies (one a lane: the lane's "
                         f"offset fills the permuted address's low byte); got {kbits or 'fp8'}-bit keys and "
                         f"pair_copies={copies}. Use pair_prmt=False")
    if not lines.get("aos") or lines.get("group", 1) != 1:
        raise ValueError(f"{what}: the pipeline in the table's holes is built for AoS line loads of one head a warp "
                         f"(precomputed shared addresses); got layout {spec.layout} "
                         f"head_groups={options.head_groups}. Use pair_prmt=False")
    if pipeline_bytes > 256 * 128 or row_bytes % 128:
        raise ValueError(f"{what}: the pipeline ({options.stages} stages of {options.decode_warps} warps' rows of "
                         f"{row_bytes} bytes) must fit the table's 256 holes of 128 bytes in whole pieces. Use fewer "
                         "stages or pair_prmt=False")
    return 256 * 256


@lru_cache(maxsize=None)
def value_windows(vb: int, vbits: int) -> tuple[dict[str, Any] | None, ...]:
    """The decode's P·V A fragments as fp16 subnormals (PTX fragments): per m-tile mt, where codes 2mt
    (row g) and 2mt + 1 (row g + 8) of a thread's ``vbits``-bit value eighth (``vb``-bit codes, LSB
    first, from bit 0 of its words: 36 bits of 3-bit values at head_dim 96, shifted there) are read from. A code is taken from a window of one byte, or two bytes of one 32-bit word,
    of each token (one byte permute puts two tokens' windows side by side as the halves of a
    register) and masked in place at bit p of each half, p + vb <= 10 (inside the fp16 mantissa: the
    subnormal c·2^(p-24)); the epilogue scales the row by 2^(24-p). Both codes of an m-tile share a
    window where one holds them. Entries: dict(lo=..., hi=...) with word, sel (byte-permute
    selector), p, mask (both halves) per code, or None where a code straddles two words (the
    kernel then funnel-shifts the two codes to bit 0 of each token's word, as before)."""
    words = (vbits + 31) // 32

    def windows(q: int, n: int) -> list[tuple[int, int, int, bool]]:  # bits q .. q+n-1: (p, word, byte, one byte)
        out = []
        for w in range(words):
            for b in range(4):
                p = q - 32 * w - 8 * b
                if p < 0 or q + n > 32 * w + 32:
                    continue
                if p + n <= 8:
                    out.append((p, w, b, True))
                elif b <= 2 and p + n <= 10:
                    out.append((p, w, b, False))
        return sorted(out)

    def code(p: int, w: int, b: int, one: bool) -> dict[str, Any]:
        # one byte: [x_b, x_0, y_b, x_0] (the junk bytes masked off); two: [x_b, x_b+1, y_b, y_b+1]
        sel = b | (4 + b) << 8 if one else b | (b + 1) << 4 | (4 + b) << 8 | (5 + b) << 12
        return dict(word=w, sel=f"0x{sel:04x}", p=p, mask=f"0x{(((1 << vb) - 1) << p) * 0x10001:08x}")

    plan: list[dict[str, Any] | None] = []
    for mt in range(vbits // (2 * vb)):
        q = 2 * mt * vb
        both = windows(q, 2 * vb)
        if both:
            p, w, b, one = both[0]
            plan.append(dict(lo=code(p, w, b, one), hi=code(p + vb, w, b, one)))
            continue
        lo, hi = windows(q, vb), windows(q + vb, vb)
        plan.append(dict(lo=code(*lo[0]), hi=code(*hi[0])) if lo and hi else None)
    return tuple(plan)


def _render_inputs(spec: LayoutSpec, target: Target, kind: str, options: CudaOptions) -> dict[str, Any]:
    bl = derive_layout(spec)
    fp8 = None
    ctx: dict[str, Any] = {}
    if spec.key_codec.is_fp8:
        f = FP8_FORMATS[spec.key_codec]
        fp8 = dict(f, max=repr(float(FP8_MAX[spec.key_codec])), scale=repr(float(2.0 ** (15 - f["bias"]))))
        ctx.update(centroids=[], lut={})
    else:
        cb = lloyd_max(spec.head_dim, spec.key_bits)
        ctx.update(centroids=[_f32(c) for c in cb.centroids], lut=lut_words(cb.centroids, False))
    rht = spec.rotation is Rotation.RHT
    signs = []
    if rht:
        s = random_signs(spec.head_dim, spec.rotation_seed)
        for w in range(spec.head_dim // 32):
            signs.append(str(sum(1 << i for i in range(32) if s[32 * w + i] < 0)))
    platform = platform_for(target, kind)
    lines = _line_loads(spec, platform, line_group(spec, options)) if options.stages >= 2 else None
    kbits, pair_copies = _pair_table(spec, platform, options)
    vplan = value_windows(spec.value_bits, bl.vd) if spec.value_bits < 8 else ()  # (an eighth of vd bytes: vd bits)
    return dict(
        ctx, spec=spec, target=str(target), kind=kind, kd=bl.kd, vd=bl.vd,
        kq=key_quarter(bl.kd)[0], vq=value_eighth(bl.vd)[0],
        kbits=kbits, key_fp8=spec.key_codec.is_fp8,
        key_fp8_kind=0 if fp8 is None else list(FP8_FORMATS).index(spec.key_codec) + 1, fp8=fp8,
        renorm=spec.renorm_at_decode,
        rotate=spec.rotation in (Rotation.HADAMARD, Rotation.RHT), rht=rht, signs=signs, dense=dense_rotation(spec),
        inv_sqrt_d=_f32(1.0 / math.sqrt(spec.head_dim)), align=_alignments(spec),
        async_copy=options.stages >= 2 and (lines is not None or _thread_copies(spec, platform)),
        lines=lines,
        pair_copies=pair_copies,
        pair_chunks=options.pair_chunks,
        options=options, platform=platform,
        # CUDA: minimum resident blocks per SM; HIP's second bound is minimum waves per EU, and 1
        # gives the decode CDNA's whole 512-register budget (2 caps it at 256 and it spills)
        decode_min_blocks=options.decode_min_blocks if platform.name == "cuda" else 1,
        dequant_min=min_resident_bound(platform, (DENSE_DEQUANT_ROUNDS_MIN_BLOCKS.get(
                                                      store_elems(spec.head_dim), DENSE_DEQUANT_ROUNDS_MIN_BLOCKS_ELSE)
                                                  if dequant_rounds(spec, options) > 1
                                                  else DENSE_DEQUANT_MIN_BLOCKS[platform.name] if dense_rotation(spec)
                                                  else DEQUANT_MIN_BLOCKS), options.row_warps * 32),
        mma_def=MMA_DEFS[platform.mma_impl],
        store=_store_ctx(spec, options, platform), merge_groups=MERGE_GROUPS,
        merge_groups_many=merge_groups_many(spec.head_dim), merge_rows=MERGE_ROWS,
        # P·V A fragments from value codes as fp16 subnormals (mma.sync multiplies them exactly); the
        # shuffle fragments (HIP; AMD matrix units flush fp16 subnormals on gfx90a) add 1024.0 and take it off
        pv_subnormal=platform.mma_impl == "ptx",
        dyn_smem_bytes=decode_dynamic_smem(spec, target, kind, options),
        vplan=vplan,
        # the epilogue's row scales 2^(24-p) of each m-tile's two codes (at bits 0 and VB where funnel-shifted)
        pv_rows=[(2.0 ** (24 - w["lo"]["p"]), 2.0 ** (24 - w["hi"]["p"])) if w else (2.0 ** 24, 2.0 ** (24 - spec.value_bits))
                 for w in vplan],
        # 3-bit pair tables (64 entries x copies) are addressed by OR: base aligned to the table size, or (pair_add)
        # the lane's offset OR'ed and the table's address added in the load
        pair_or=kbits == 3 and pair_copies > 0 and not options.pair_add,
        pair_add=kbits == 3 and pair_copies > 0 and options.pair_add,
        # sm89+: cvt.rn.satfinite.e4m3x2.f32 is the e4m3fn encoder (saturate to ±448, nearest even),
        # cvt.rn.f16x2.e4m3x2 the decode's exact e4m3fn -> fp16 pair conversion
        fp8_hw=(platform.name == "cuda" and kind == "generic" and spec.key_codec is KeyCodec.FP8_E4M3FN
                and target in (Target.SM89, Target.SM90)),
    )


def template_digest(spec: LayoutSpec, target: Target, kind: str, options: CudaOptions) -> str:
    """sha256 of the template bytes and of every value rendered into it; memoised per (variant, template file
    version): rendering the inputs is ~4 ms of Python, and the runtime makes a variant per kernel per load."""
    return _template_digest(spec, target, kind, options, template_stamp(CUDA_TEMPLATE))


@lru_cache(maxsize=1024)
def _template_digest(spec: LayoutSpec, target: Target, kind: str, options: CudaOptions, _stamp) -> str:
    ctx = _render_inputs(spec, target, kind, options)
    blob = (TEMPLATE_DIR / CUDA_TEMPLATE).read_bytes() + repr(sorted(
        (k, v if not isinstance(v, (Platform, CudaOptions)) else dataclasses.asdict(v)) for k, v in ctx.items()
    )).encode()
    return hashlib.sha256(blob).hexdigest()


def make_variant(spec: LayoutSpec, target: str | Target, kind: str = "generic",
                 options: CudaOptions | None = None) -> Variant:
    t = Target.parse(target, "target")
    reasons = cuda_reasons(spec, t, kind)
    opts = options or cuda_options(spec, t, kind)
    if not reasons:
        reasons += opts.reasons(t) + row_reasons(spec, opts)
    if reasons:
        raise SpecError(reasons, f"cannot lower {spec.token} to {backend_for(t)} C++ for {t} ({kind})")
    return Variant(backend=backend_for(t), target=t, kind=kind, spec=spec, options=opts, rules=cuda_rules(spec),
                   template_digest=template_digest(spec, t, kind, opts), version=__version__)


def render_cuda(v: Variant) -> str:
    """The C++ source (CUDA or HIP by the variant's target) for one variant (deterministic)."""
    ctx = _render_inputs(v.spec, v.target, v.kind, v.options)
    return _env().get_template(CUDA_TEMPLATE).render(**ctx, banner=BANNER, variant_id=v.id)


def source_name(v: Variant) -> str:
    return f"kernel.{platform_for(v.target, v.kind).suffix}"


def layout_params(spec: LayoutSpec, num_kv_heads: int) -> tuple[int, ...]:
    """The ``TqLayout`` struct (16 int64): block_bytes, then (offset, token_stride, head_stride) of
    k_data, k_norm, v_data, v_scale, v_zero — from derive_layout; absent fields are zeros."""
    bl = derive_layout(spec)
    page = bl.page(num_kv_heads)
    out = [page.block_bytes]
    for name in ("k_data", "k_norm", "v_data", "v_scale", "v_zero"):
        if bl.has(name):
            fa = page[name]
            out += [fa.offset, fa.token_stride, fa.head_stride]
        else:
            out += [0, 0, 0]
    return tuple(out)


#: entry points per kernel: (bf16 name, fp16 name); dequant also writes fp32
KERNEL_NAMES: dict[str, tuple[str, str]] = {
    **{k: (f"tq_{k}_bf16", f"tq_{k}_f16") for k in ("store", "decode_split", "decode_split_bal", "decode_merge",
                                                    "decode_merge_rows", "dequant")},
    "dequant_f32": ("tq_dequant_f32", "tq_dequant_f32"),
}
