// The CUDA device API's names the generated kernel.cu uses, and its inline PTX as functions, on tqgen's CPU simulator
// (tqsim.h says how it runs; tqgen/cpu_sim/__init__.py translates each `asm` statement of a rendered source into a call of the
// tqsim::ptx function named after its instruction, operands in the instruction's order, outputs by reference, the
// statement's ordinal last). A kernel.cu includes this in place of CUDA's header.
#pragma once

#ifndef TQSIM_WAVE
#define TQSIM_WAVE 32
#endif
#include "tqsim.h"

#if TQSIM_WAVE != 32
#error "CUDA kernels run with 32-lane warps: TQSIM_WAVE=32"
#endif

typedef _Float16 __half;
inline __half __ushort_as_half(unsigned short b) { return __builtin_bit_cast(__half, b); }
inline unsigned short __half_as_ushort(__half h) { return __builtin_bit_cast(unsigned short, h); }
inline float __half2float(__half h) { return (float)h; }
inline __half __float2half_rn(float x) { return (__half)x; }  // round to nearest even
inline int __float2int_rz(float x) {  // cvt.rzi.s32.f32: toward zero, saturating, NaN -> 0
  if (x != x) return 0;
  if (x >= 2147483648.0f) return 2147483647;
  if (x <= -2147483648.0f) return (-2147483647 - 1);
  return (int)x;
}
#define __shfl_sync(mask, v, s) ::tqsim::shfl((v), (s), 32, __LINE__)
#define __shfl_xor_sync(mask, v, m) ::tqsim::shfl_xor((v), (m), 32, __LINE__)
#define __any_sync(mask, p) ::tqsim::vote_any((p), __LINE__)
#define __syncwarp(...) ::tqsim::syncwarp(__LINE__)

namespace tqsim {
namespace ptx {

inline uint16_t bf16_bits(float x) {  // round to nearest even; NaN -> the canonical 0x7fff
  if (x != x) return 0x7fff;
  uint32_t u = __builtin_bit_cast(uint32_t, x);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline uint16_t f16_bits(float x) { return __builtin_bit_cast(uint16_t, (_Float16)x); }
inline float half_lo(uint32_t w, bool bf16) {
  return bf16 ? __builtin_bit_cast(float, (w & 0xffffu) << 16) : (float)__builtin_bit_cast(_Float16, (uint16_t)w);
}
inline float half_hi(uint32_t w, bool bf16) { return half_lo(w >> 16, bf16); }

// e4m3 (OCP, "fn"): bias 7, no infinities, 0x7f / 0xff NaN, largest finite 448
inline float e4m3_value(uint32_t b) {
  const uint32_t e = (b >> 3) & 15u, m = b & 7u;
  if (e == 15 && m == 7) return __builtin_nanf("");
  const float v = e ? ldexpf(1.0f + m / 8.0f, (int)e - 7) : ldexpf(m / 8.0f, -6);
  return (b & 0x80u) ? -v : v;
}
inline uint32_t e4m3_satfinite(float x) {  // cvt.rn.satfinite.e4m3: nearest, ties to even, +-448 past the range
  if (x != x) return 0x7f;
  const uint32_t sign = x < 0 || (x == 0 && __builtin_signbit(x)) ? 0x80u : 0u;
  const float a = fabsf(x);
  if (a >= 448.0f) return sign | 0x7e;
  uint32_t lo = 0, hi = 0x7e;  // the largest code whose value is <= a
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (e4m3_value(mid) <= a) lo = mid; else hi = mid - 1;
  }
  const float vlo = e4m3_value(lo), vhi = e4m3_value(lo + 1);
  uint32_t c = lo;
  if (a - vlo > vhi - a || (a - vlo == vhi - a && (lo & 1u))) c = lo + 1;
  return sign | c;
}

inline void min_NaN_f32(float& r, float a, float b, int) { r = (a != a || b != b) ? __builtin_nanf("") : fminf(a, b); }
inline void max_NaN_f32(float& r, float a, float b, int) { r = (a != a || b != b) ? __builtin_nanf("") : fmaxf(a, b); }
inline void mov_u32(int& r, unsigned v, int) { r = (int)v; }
inline void griddepcontrol_launch_dependents(int) {}  // one grid at a time: nothing to overlap
inline void griddepcontrol_wait(int) {}
inline void fma_rn_f16x2(uint32_t& r, uint32_t a, uint32_t b, uint32_t c, int) {
  // the product of two fp16 is exact in double and so, but for far-apart exponents, is the sum: one rounding to fp16
  uint32_t out = 0;
  for (int i = 0; i < 2; ++i) {
    const double x = (double)half_lo(a >> (16 * i), false) * (double)half_lo(b >> (16 * i), false) +
                     (double)half_lo(c >> (16 * i), false);
    out |= (uint32_t)__builtin_bit_cast(uint16_t, (_Float16)x) << (16 * i);
  }
  r = out;
}
inline void ex2_approx_ftz_f32(float& r, float x, int) { r = exp2f(x); }
inline void rcp_approx_ftz_f32(float& r, float x, int) { r = 1.0f / x; }
inline void cvt_rn_bf16x2_f32(uint32_t& r, float hi, float lo, int) {
  r = ((uint32_t)bf16_bits(hi) << 16) | bf16_bits(lo);
}
inline void cvt_rn_f16x2_f32(uint32_t& r, float hi, float lo, int) { r = ((uint32_t)f16_bits(hi) << 16) | f16_bits(lo); }
inline void cvt_rn_f16x2_e4m3x2(uint32_t& r, unsigned short x, int) {
  r = ((uint32_t)f16_bits(e4m3_value(x >> 8)) << 16) | f16_bits(e4m3_value(x & 0xffu));
}
inline void cvt_rn_satfinite_e4m3x2_f32(unsigned short& r, float hi, float lo, int) {
  r = (unsigned short)((e4m3_satfinite(hi) << 8) | e4m3_satfinite(lo));
}
// cp.async: a copy is queued with its lane's open commit group and lands at the cp.async.wait_group that waits for that
// group (all but the N most recently committed), not before: a kernel that reads a stage before waiting for it reads
// what the buffer held, as on the GPU it may. (The hardware may land a copy earlier; a stage's reuse while another lane
// still reads it needs the barriers the hardware needs, or a lane that runs ahead overwrites what another still reads.)
inline void cp_async_queue(uint32_t dst, const void* src, int n) {
  Lane& l = *g.cur;
  if (l.ncopies == (int)(sizeof l.copies / sizeof l.copies[0])) {
    fail("more than 64 cp.async copies of one thread in flight: the simulator's queue is full");
    memcpy(shared_ptr(dst), src, n);
    return;
  }
  l.copies[l.ncopies++] = Lane::Copy{shared_ptr(dst), src, n, l.group};
}
inline void cp_async_cg_shared_global(uint32_t dst, const void* src, int n, int) { cp_async_queue(dst, src, n); }
inline void cp_async_ca_shared_global(uint32_t dst, const void* src, int n, int) { cp_async_queue(dst, src, n); }
inline void cp_async_commit_group(int) { ++g.cur->group; }
inline void cp_async_wait_group(int pending, int) {
  Lane& l = *g.cur;
  int keep = 0;
  for (int i = 0; i < l.ncopies; ++i) {
    Lane::Copy& c = l.copies[i];
    if (c.group + (unsigned)pending < l.group) memcpy(c.dst, c.src, c.n);  // committed before the newest `pending`
    else l.copies[keep++] = c;
  }
  l.ncopies = keep;
}
inline void ld_shared_u32(uint32_t& x, uint32_t a, int) { memcpy(&x, shared_ptr(a), 4); }
inline void add_u32(uint32_t& r, uint32_t a, uint32_t b, int) { r = a + b; }
inline void ld_shared_v2_u32(uint32_t& x0, uint32_t& x1, uint32_t a, int) {
  uint32_t v[2];
  memcpy(v, shared_ptr(a), 8);
  x0 = v[0], x1 = v[1];
}
inline void ld_shared_v4_u32(uint32_t& x0, uint32_t& x1, uint32_t& x2, uint32_t& x3, uint32_t a, int) {
  uint32_t v[4];
  memcpy(v, shared_ptr(a), 16);
  x0 = v[0], x1 = v[1], x2 = v[2], x3 = v[3];
}

// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: D (16x8) = A (16x16) B (16x8) + C; lane 4g + r holds A rows g and
// g + 8 at columns 2r, 2r + 1 (a0, a1) and 2r + 8, 2r + 9 (a2, a3), B rows 2r, 2r + 1 (b0) and 2r + 8, 2r + 9 (b1) at
// column g, C / D row g (c0, c1) and g + 8 (c2, c3) at columns 2r, 2r + 1. Products are exact in fp32; the sums run
// in fp32 in k order, then C is added.
struct MmaIO {
  uint32_t a[4], b[2];
  float c[4], d[4];
};
template <bool BF16> void mma_warp(Lane* const* warp) {
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    const MmaIO& m = *static_cast<const MmaIO*>(warp[l]->data);
    const int g = l >> 2, r = l & 3;
    for (int h = 0; h < 2; ++h) {
      A[g][2 * r + h] = half_lo(m.a[0] >> (16 * h), BF16);
      A[g + 8][2 * r + h] = half_lo(m.a[1] >> (16 * h), BF16);
      A[g][2 * r + 8 + h] = half_lo(m.a[2] >> (16 * h), BF16);
      A[g + 8][2 * r + 8 + h] = half_lo(m.a[3] >> (16 * h), BF16);
      B[2 * r + h][g] = half_lo(m.b[0] >> (16 * h), BF16);
      B[2 * r + 8 + h][g] = half_lo(m.b[1] >> (16 * h), BF16);
    }
  }
  for (int l = 0; l < 32; ++l) {
    MmaIO& m = *static_cast<MmaIO*>(warp[l]->data);
    const int g = l >> 2, r = l & 3;
    for (int i = 0; i < 4; ++i) {
      const int row = g + 8 * (i >> 1), col = 2 * r + (i & 1);
      float s = 0.0f;
      for (int k = 0; k < 16; ++k) s += A[row][k] * B[k][col];
      m.d[i] = m.c[i] + s;
    }
  }
}
template <bool BF16>
inline void mma(float& d0, float& d1, float& d2, float& d3, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                uint32_t b0, uint32_t b1, float c0, float c1, float c2, float c3, int site) {
  MmaIO m{{a0, a1, a2, a3}, {b0, b1}, {c0, c1, c2, c3}, {0, 0, 0, 0}};
  collective(&mma_warp<BF16>, &m, site);
  d0 = m.d[0], d1 = m.d[1], d2 = m.d[2], d3 = m.d[3];
}
#define TQSIM_MMA_ARGS                                                                                              \
  float &d0, float &d1, float &d2, float &d3, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,     \
      uint32_t b1, float c0, float c1, float c2, float c3, int site
inline void mma_sync_aligned_m16n8k16_row_col_f32_bf16_bf16_f32(TQSIM_MMA_ARGS) {
  mma<true>(d0, d1, d2, d3, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3, site);
}
inline void mma_sync_aligned_m16n8k16_row_col_f32_f16_f16_f32(TQSIM_MMA_ARGS) {
  mma<false>(d0, d1, d2, d3, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3, site);
}
#undef TQSIM_MMA_ARGS

// movmatrix.sync.aligned.m8n8.trans.b16: lane 4i + j/2 holds row i, columns j, j + 1 of an 8x8 matrix of 16-bit
// values; it gets the same positions of the transpose
struct MovIO {
  uint32_t x, r;
};
inline void movmatrix_warp(Lane* const* warp) {
  uint16_t M[8][8];
  for (int l = 0; l < 32; ++l) {
    const uint32_t x = static_cast<const MovIO*>(warp[l]->data)->x;
    M[l >> 2][2 * (l & 3)] = (uint16_t)x, M[l >> 2][2 * (l & 3) + 1] = (uint16_t)(x >> 16);
  }
  for (int l = 0; l < 32; ++l) {
    const int i = l >> 2, j = 2 * (l & 3);
    static_cast<MovIO*>(warp[l]->data)->r = (uint32_t)M[j][i] | ((uint32_t)M[j + 1][i] << 16);
  }
}
inline void movmatrix_sync_aligned_m8n8_trans_b16(uint32_t& r, uint32_t x, int site) {
  MovIO m{x, 0};
  collective(&movmatrix_warp, &m, site);
  r = m.r;
}

}  // namespace ptx
}  // namespace tqsim
