// The HIP device API's names the generated kernel.hip uses, on tqgen's CPU simulator (../tqsim.h says how it runs).
#pragma once

#ifndef TQSIM_WAVE
#define TQSIM_WAVE 64
#endif
#include "../tqsim.h"

#define warpSize TQSIM_WAVE
#define __shfl(v, s, w) ::tqsim::shfl((v), (s), (w), __LINE__)
#define __shfl_xor(v, m, w) ::tqsim::shfl_xor((v), (m), (w), __LINE__)
#define __any(p) ::tqsim::vote_any((p), __LINE__)
// v_perm_b32 (tqsim::amdgcn_perm below)
#define __builtin_amdgcn_perm(s0, s1, sel) ::tqsim::amdgcn_perm((s0), (s1), (sel))
// v_mov_b32 with a DPP quad_perm control (0..0xff: lane i of each quad reads lane (ctrl >> 2i) & 3 of it), every row
// and bank enabled: the only DPP form the kernels use
#define __builtin_amdgcn_mov_dpp(v, ctrl, row_mask, bank_mask, bound_ctrl) \
  ::tqsim::dpp_quad_perm((v), (ctrl), (row_mask), (bank_mask), __LINE__)
// v_dot2c_f32_f16: x.lo·y.lo + x.hi·y.hi + c, the fp16 products exact in fp32; the sum here rounded once (the ISA
// does not say how the hardware rounds inside the dot: at most an ulp of the fp32 result apart); clamp: the template
// passes false
#define __builtin_amdgcn_fdot2(x, y, c, clamp) \
  ((float)((double)(x)[0] * (double)(y)[0] + (double)(x)[1] * (double)(y)[1] + (double)(c)))

namespace tqsim {
// v_perm_b32: output byte i by selector byte i: 0..7 a byte of {s0:s1} (s1 the low word), 8..11 the sign of
// byte 1, 3, 5 or 7 replicated, 12 zero, 13..255 0xff
inline uint32_t amdgcn_perm(uint32_t s0, uint32_t s1, uint32_t sel) {
  const uint64_t v = ((uint64_t)s0 << 32) | s1;
  uint32_t r = 0u;
  for (int i = 0; i < 4; ++i) {
    const uint32_t k = (sel >> (8 * i)) & 0xffu;
    uint32_t b;
    if (k < 8) b = (uint32_t)(v >> (8 * k)) & 0xffu;
    else if (k < 12) b = ((v >> (8 * (2 * (k - 8) + 1) + 7)) & 1u) ? 0xffu : 0u;
    else b = k == 12 ? 0u : 0xffu;
    r |= b << (8 * i);
  }
  return r;
}
inline int dpp_quad_perm(int v, int ctrl, int row_mask, int bank_mask, int site) {
  if (ctrl < 0 || ctrl > 0xff || row_mask != 0xf || bank_mask != 0xf) fail("tqsim: DPP beyond quad_perm with every row and bank");
  const int l = (int)(thread_idx().x % 32u);  // the lane in its 32-lane segment (shfl's source lanes are too)
  return shfl(v, (l & ~3) | ((ctrl >> (2 * (l & 3))) & 3), 32, site);
}
}  // namespace tqsim
