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
