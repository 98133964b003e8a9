// tqgen's CPU simulator of the GPU device API the generated C++ kernels use (tqgen/cpu_sim/__init__.py compiles a rendered
// kernel.hip, or a kernel.cu with its inline PTX translated, against this header with the host's clang and runs its
// kernels here, on the CPU). hip/hip_runtime.h and cuda_fp16.h add each language's names.
//
// Each GPU thread of a block is a fiber on one OS thread; blocks run one after the other, so a `__shared__` variable
// is a static (one copy, which every block of a launch reuses in turn). Threads run until they block at a shuffle, a
// vote, a warp-collective instruction or a barrier; once every thread of the block is blocked or done, the scheduler
// resolves what can proceed, as a SIMT machine would:
//   - a shuffle of width W: the lanes of one W-lane segment of a wavefront (TQSIM_WAVE lanes: 64 as AMD's gfx9,
//     32 as an NVIDIA warp) waiting at the same call site exchange their values; a source lane not among them
//     (exited, or in another branch) gives a poison NaN pattern, where the hardware would give a stale register;
//   - a vote (__any): the lanes of the wavefront at the same call site (a divergent wavefront votes per branch);
//   - a warp-collective instruction (mma.sync, movmatrix: CUDA): every live lane of the 32-lane warp at the same site
//     (fewer than 32 is an error: the .aligned instructions need the whole warp);
//   - __syncwarp: every live lane of the 32-lane warp at one; __syncthreads: every live thread of the block at one.
// A block with threads blocked and nothing that can proceed is reported as a deadlock. The intrinsics compute exact
// (correctly rounded) values where the hardware's are approximations (exp2, reciprocal square root: 1-2 ulp).
#pragma once

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static
#define __constant__
#define __align__(n) __attribute__((aligned(n)))

#ifndef TQSIM_WAVE
#define TQSIM_WAVE 64
#endif

// Fiber switches: on x86-64 a few instructions of our own (the callee-saved registers, MXCSR and the x87 control
// word, then the stack pointer: ~5 ns), else ucontext (swapcontext also saves the signal mask: a system call).
#if defined(__x86_64__) && !defined(TQSIM_UCONTEXT)
#define TQSIM_ASM_SWITCH 1
// tqsim_switch(&from_sp, to_sp): pushes this fiber's callee-saved state, stores its stack pointer in *from_sp, loads
// to_sp and pops the other fiber's state; its `ret` continues the other fiber (or, the first time, enters
// tqsim_fiber_start through the frame tqsim::start_frame built).
extern "C" __attribute__((visibility("hidden"))) void tqsim_switch(void** from_sp, void* to_sp);
__asm__(
    ".text\n.p2align 4\n.globl tqsim_switch\n.hidden tqsim_switch\n.type tqsim_switch,@function\n"
    "tqsim_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  subq $16, %rsp\n  stmxcsr 8(%rsp)\n  fnstcw (%rsp)\n"
    "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
    "  ldmxcsr 8(%rsp)\n  fldcw (%rsp)\n  addq $16, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n  ret\n"
    ".size tqsim_switch, .-tqsim_switch\n");
#else
#define TQSIM_ASM_SWITCH 0
#endif

namespace tqsim {

struct dim3 {
  unsigned x, y, z;
};

enum Wait : int { RUNNING = 0, SHFL, SHFL_XOR, VOTE_ANY, SYNC, WARP_SYNC, COLLECTIVE, DONE };

struct Lane {
#if TQSIM_ASM_SWITCH
  void* sp;        // the fiber's saved stack pointer (tqsim_switch)
#else
  ucontext_t ctx;
#endif
  unsigned tid;
  int wait;        // Wait
  int site;        // the call's source line (lanes meet only at the same site)
  int width;       // shuffles: the segment width
  int arg;         // shuffles: source lane / xor mask; votes: the predicate
  uint64_t val;    // shuffles: this lane's value
  uint64_t res;    // the result handed back
  void* data;      // collectives: this lane's operands and results
  void (*collective)(struct Lane* const* warp);  // collectives: computes every lane's results from all 32 lanes
  // CUDA cp.async: copies issued and not yet landed, each with its commit group (cuda_fp16.h)
  struct Copy {
    void* dst;
    const void* src;
    int n;
    unsigned group;
  } copies[64];
  int ncopies;
  unsigned group;  // the open (uncommitted) group's number
};

struct State {
  dim3 grid, block_idx, block_dim;
  void (*call)(void**) = nullptr;
  void** params = nullptr;
  Lane* lanes = nullptr;
  Lane* cur = nullptr;
  unsigned nthreads = 0;
#if TQSIM_ASM_SWITCH
  void* sched_sp = nullptr;
#else
  ucontext_t sched;
#endif
  char* stacks = nullptr;
  size_t stack_size = 0, stack_count = 0;
  char error[1024] = {0};
};

inline State g;

constexpr uint64_t POISON = 0x7fbadbad7fbadbadull;  // an fp32 (and fp64) NaN in each half
constexpr uint64_t CANARY = 0x5ca1ab1e0ddba11ull;    // the lowest word of each fiber stack: overwritten = overflow

inline dim3 thread_idx() { return dim3{g.cur->tid, 0, 0}; }

inline void to_scheduler(Lane* l) {
#if TQSIM_ASM_SWITCH
  tqsim_switch(&l->sp, g.sched_sp);
#else
  swapcontext(&l->ctx, &g.sched);
#endif
}
inline void to_lane(Lane* l) {
  g.cur = l;
#if TQSIM_ASM_SWITCH
  tqsim_switch(&g.sched_sp, l->sp);
#else
  swapcontext(&g.sched, &l->ctx);
#endif
}

inline uint64_t block_until(int wait, int site, int width, int arg, uint64_t val) {
  Lane* l = g.cur;
  l->wait = wait;
  l->site = site;
  l->width = width;
  l->arg = arg;
  l->val = val;
  to_scheduler(l);
  return l->res;
}

template <class T> inline uint64_t bits_of(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "tqsim: shuffles move at most 8 bytes");
  uint64_t b = 0;
  memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T> inline T of_bits(uint64_t b) {
  T v;
  memcpy(&v, &b, sizeof(T));
  return v;
}

template <class T> inline T shfl(T v, int src, int width, int site) {
  return of_bits<T>(block_until(SHFL, site, width, src, bits_of(v)));
}
template <class T> inline T shfl_xor(T v, int mask, int width, int site) {
  return of_bits<T>(block_until(SHFL_XOR, site, width, mask, bits_of(v)));
}
inline int vote_any(int p, int site) { return (int)block_until(VOTE_ANY, site, TQSIM_WAVE, p != 0, 0); }
inline void syncthreads(int site) { block_until(SYNC, site, 0, 0, 0); }
inline void syncwarp(int site) { block_until(WARP_SYNC, site, 32, 0, 0); }
// A warp-collective instruction: `fn` gets the 32 lanes of the warp in order (their `data`) once all are here.
inline void collective(void (*fn)(Lane* const*), void* data, int site) {
  g.cur->data = data;
  g.cur->collective = fn;
  block_until(COLLECTIVE, site, 32, 0, 0);
}

inline void fail(const char* msg) {
  if (!g.error[0]) snprintf(g.error, sizeof g.error, "%s", msg);
}

// ---------------------------------------------------------------- the scheduler
inline void lane_entry() {
  g.call(g.params);
  g.cur->wait = DONE;
  to_scheduler(g.cur);
  __builtin_unreachable();  // a finished fiber is never resumed
}

// A new fiber's stack: the frame tqsim_switch pops (x87 control word, MXCSR, six callee-saved registers), then
// lane_entry as the address its `ret` takes, then a zero return address for lane_entry (entered with the stack
// pointer 8 below a 16-byte boundary, as after a call).
inline void start_fiber(Lane& l, char* stack, size_t size) {
#if TQSIM_ASM_SWITCH
  uint64_t* top = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(stack) + size) & ~(uintptr_t)15);
  uint64_t* sp = top - 10;
  memset(sp, 0, 10 * sizeof(uint64_t));
  const uint16_t fpu_cw = 0x037f;  // the x86-64 ABI's defaults: x87 double extended, round to nearest, all masked
  const uint32_t mxcsr = 0x1f80;   // SSE: round to nearest, exceptions masked, no flush to zero
  memcpy(sp, &fpu_cw, sizeof fpu_cw);
  memcpy(reinterpret_cast<char*>(sp) + 8, &mxcsr, sizeof mxcsr);
  sp[8] = reinterpret_cast<uint64_t>(&lane_entry);
  l.sp = sp;
#else
  getcontext(&l.ctx);
  l.ctx.uc_stack.ss_sp = stack;
  l.ctx.uc_stack.ss_size = size;
  l.ctx.uc_link = nullptr;
  makecontext(&l.ctx, lane_entry, 0);
#endif
}

// Resolves every group of blocked lanes that can proceed; returns how many lanes it released.
inline unsigned resolve() {
  const unsigned n = g.nthreads;
  unsigned released = 0, alive = 0, at_sync = 0;
  for (unsigned t = 0; t < n; ++t) {
    if (g.lanes[t].wait != DONE) ++alive;
    if (g.lanes[t].wait == SYNC) ++at_sync;
  }
  if (alive && at_sync == alive) {
    for (unsigned t = 0; t < n; ++t)
      if (g.lanes[t].wait == SYNC) g.lanes[t].wait = RUNNING, ++released;
    return released;
  }
  // __syncwarp and collectives: per 32-lane warp, once every live lane of it waits there
  for (unsigned w0 = 0; w0 < n; w0 += 32) {
    const unsigned w1 = w0 + 32 < n ? w0 + 32 : n;
    unsigned live = 0, at = 0;
    int kind = -1, site = 0;
    bool same = true;
    for (unsigned t = w0; t < w1; ++t) {
      const Lane& a = g.lanes[t];
      if (a.wait == DONE) continue;
      ++live;
      if (a.wait != WARP_SYNC && a.wait != COLLECTIVE) continue;
      if (!at++) kind = a.wait, site = a.site;
      same &= a.wait == kind && (kind == WARP_SYNC || a.site == site);
    }
    if (!live || at != live || !same) continue;
    if (kind == COLLECTIVE) {
      if (live != 32) {
        char m[200];
        snprintf(m, sizeof m, "a warp-collective instruction (site %d) reached by %u of the 32 lanes of warp %u: "
                 "mma.sync / movmatrix (.aligned) need the whole warp", site, live, w0 / 32);
        fail(m);
        return 0;
      }
      Lane* warp[32];
      for (unsigned t = 0; t < 32; ++t) warp[t] = &g.lanes[w0 + t];
      warp[0]->collective(warp);
    }
    for (unsigned t = w0; t < w1; ++t)
      if (g.lanes[t].wait == kind) g.lanes[t].wait = RUNNING, ++released;
  }
  if (released) return released;
  // shuffles and votes: per wavefront, the lanes of one group are those at the same site (and segment)
  for (unsigned w0 = 0; w0 < n; w0 += TQSIM_WAVE) {
    const unsigned w1 = w0 + TQSIM_WAVE < n ? w0 + TQSIM_WAVE : n;
    for (unsigned t = w0; t < w1; ++t) {
      Lane& a = g.lanes[t];
      if (a.wait != SHFL && a.wait != SHFL_XOR && a.wait != VOTE_ANY) continue;
      const int kind = a.wait, site = a.site, width = a.width;
      if (width <= 0 || width > TQSIM_WAVE || (width & (width - 1))) {
        char m[200];
        snprintf(m, sizeof m, "shuffle of width %d at line %d: the width must be a power of two <= %d", width, site,
                 TQSIM_WAVE);
        fail(m);
        return 0;
      }
      const unsigned lane = t - w0, seg = lane & ~(unsigned)(width - 1);
      auto member = [&](unsigned u) {  // lane u of this wavefront is in a's group
        const Lane& b = g.lanes[w0 + u];
        return w0 + u < w1 && b.wait == kind && b.site == site && b.width == width &&
               (kind == VOTE_ANY || (u & ~(unsigned)(width - 1)) == seg);
      };
      const unsigned lo = kind == VOTE_ANY ? 0 : seg, hi = kind == VOTE_ANY ? TQSIM_WAVE : seg + width;
      uint64_t any = 0;
      if (kind == VOTE_ANY)
        for (unsigned u = lo; u < hi; ++u)
          if (member(u) && g.lanes[w0 + u].arg) any = 1;
      // results first (every member reads the others' values), then release
      unsigned members[TQSIM_WAVE];
      unsigned nm = 0;
      for (unsigned u = lo; u < hi; ++u)
        if (member(u)) members[nm++] = u;
      for (unsigned i = 0; i < nm; ++i) {
        Lane& b = g.lanes[w0 + members[i]];
        if (kind == VOTE_ANY) {
          b.res = any;
          continue;
        }
        const unsigned within = members[i] & (unsigned)(width - 1);
        const unsigned src = kind == SHFL ? seg + ((unsigned)b.arg & (unsigned)(width - 1))
                                          : seg + ((within ^ (unsigned)b.arg) & (unsigned)(width - 1));
        b.res = member(src) ? g.lanes[w0 + src].val : POISON;
      }
      for (unsigned i = 0; i < nm; ++i) g.lanes[w0 + members[i]].wait = RUNNING;
      released += nm;
    }
  }
  return released;
}

inline const char* wait_name(int w) {
  switch (w) {
    case SHFL: return "__shfl";
    case SHFL_XOR: return "__shfl_xor";
    case VOTE_ANY: return "__any";
    case SYNC: return "__syncthreads";
    case WARP_SYNC: return "__syncwarp";
    case COLLECTIVE: return "a warp-collective instruction";
    default: return "?";
  }
}

inline int run_block() {
  const unsigned n = g.nthreads;
  for (unsigned t = 0; t < n; ++t) {
    Lane& l = g.lanes[t];
    memcpy(g.stacks + (size_t)t * g.stack_size, &CANARY, sizeof CANARY);
    l.tid = t;
    l.wait = RUNNING;
    l.ncopies = 0;
    l.group = 0;
    start_fiber(l, g.stacks + (size_t)t * g.stack_size, g.stack_size);
  }
  for (;;) {
    unsigned done = 0;
    for (unsigned t = 0; t < n; ++t) {
      Lane& l = g.lanes[t];
      if (l.wait == RUNNING) to_lane(&l);
      if (l.wait == DONE) ++done;
    }
    if (g.error[0]) return 1;
    for (unsigned t = 0; t < n; ++t) {
      uint64_t c;
      memcpy(&c, g.stacks + (size_t)t * g.stack_size, sizeof c);
      if (c != CANARY) {
        snprintf(g.error, sizeof g.error, "thread %u overflowed its %zu-byte fiber stack (block %u, %u, %u)", t,
                 g.stack_size, g.block_idx.x, g.block_idx.y, g.block_idx.z);
        return 1;
      }
    }
    if (done == n) return 0;
    if (!resolve()) {
      if (g.error[0]) return 1;
      char m[sizeof g.error];
      int k = snprintf(m, sizeof m, "deadlock in block (%u, %u, %u): no thread can proceed;", g.block_idx.x,
                       g.block_idx.y, g.block_idx.z);
      for (unsigned t = 0; t < n && k < (int)sizeof m - 64; ++t)
        if (g.lanes[t].wait != DONE && (t == 0 || g.lanes[t].wait != g.lanes[t - 1].wait ||
                                        g.lanes[t].site != g.lanes[t - 1].site))
          k += snprintf(m + k, sizeof m - k, " thread %u at %s (line %d);", t, wait_name(g.lanes[t].wait),
                        g.lanes[t].site);
      fail(m);
      return 1;
    }
  }
}

}  // namespace tqsim

// ---------------------------------------------------------------- names both languages use
#define threadIdx (::tqsim::thread_idx())
#define blockIdx (::tqsim::g.block_idx)
#define blockDim (::tqsim::g.block_dim)
#define gridDim (::tqsim::g.grid)
#define __syncthreads() ::tqsim::syncthreads(__LINE__)

struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }

inline unsigned __float_as_uint(float x) { return __builtin_bit_cast(unsigned, x); }
inline float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
inline int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
inline float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline float __log2f(float a) { return log2f(a); }
inline float rsqrtf(float a) { return 1.0f / sqrtf(a); }
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
  return (unsigned)((((uint64_t)hi << 32) | lo) >> (s & 31u));
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t v = ((uint64_t)y << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
  return r;
}
// A shared-memory address in the 32-bit window the ld.shared / cp.async instructions take: the low 32 bits of the
// static's host address, every `__shared__` static (a .bss variable of the one library) sharing the high ones.
namespace tqsim {
inline uint64_t shared_hi = ~0ull;
alignas(128) inline char dyn_pool[232448];  // dynamic shared memory (`extern __shared__`): 227 KB, sm_90's most
inline void* shared_ptr(uint32_t a) { return reinterpret_cast<void*>((shared_hi << 32) | a); }
}  // namespace tqsim
inline size_t __cvta_generic_to_shared(const void* p) {
  const uint64_t hi = (uint64_t)(uintptr_t)p >> 32;
  if (::tqsim::shared_hi == ~0ull) ::tqsim::shared_hi = hi;
  if (hi != ::tqsim::shared_hi) ::tqsim::fail("shared memory statics straddle a 4 GB boundary: the simulator's 32-bit "
                                              "shared addresses cannot reach them all");
  return (uint32_t)(uintptr_t)p;
}

#define TQSIM_MINMAX(T)                                   \
  inline T min(T a, T b) { return a < b ? a : b; }        \
  inline T max(T a, T b) { return a < b ? b : a; }
TQSIM_MINMAX(int)
TQSIM_MINMAX(unsigned)
TQSIM_MINMAX(long long)
TQSIM_MINMAX(unsigned long long)
TQSIM_MINMAX(long)
TQSIM_MINMAX(unsigned long)
#undef TQSIM_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }

// ---------------------------------------------------------------- launch
namespace tqsim {
template <class... A, size_t... I> inline void call_with(void (*f)(A...), void** p, std::index_sequence<I...>) {
  f(*static_cast<std::remove_cv_t<A>*>(p[I])...);
}
template <class... A> inline void call_with(void (*f)(A...), void** p) {
  call_with(f, p, std::index_sequence_for<A...>{});
}
}  // namespace tqsim

// The library's entry points (the header is compiled into one translation unit a kernel library).
// One launch: every block of the grid in turn. Returns 0, or 1 with the reason in tqsim_error().
extern "C" int tqsim_launch(void (*call)(void**), void** params, unsigned gx, unsigned gy, unsigned gz,
                                   unsigned threads) {
  using namespace tqsim;
  g.error[0] = 0;
  if (threads == 0 || threads > 1024) {
    snprintf(g.error, sizeof g.error, "block of %u threads: 1..1024 allowed", threads);
    return 1;
  }
  const size_t stack = 256 * 1024;
  if (g.stack_count < threads) {
    free(g.stacks);
    free(g.lanes);
    g.stacks = static_cast<char*>(aligned_alloc(64, stack * threads));
    g.lanes = static_cast<Lane*>(calloc(threads, sizeof(Lane)));
    if (!g.stacks || !g.lanes) {
      snprintf(g.error, sizeof g.error, "cannot allocate %u fiber stacks of %zu bytes", threads, stack);
      g.stack_count = 0;
      return 1;
    }
    g.stack_count = threads;
  }
  g.stack_size = stack;
  g.call = call;
  g.params = params;
  g.nthreads = threads;
  g.grid = dim3{gx, gy, gz};
  g.block_dim = dim3{threads, 1, 1};
  for (unsigned z = 0; z < gz; ++z)
    for (unsigned y = 0; y < gy; ++y)
      for (unsigned x = 0; x < gx; ++x) {
        g.block_idx = dim3{x, y, z};
        if (run_block()) return 1;
      }
  return 0;
}
extern "C" const char* tqsim_error() { return tqsim::g.error; }
extern "C" int tqsim_wave() { return TQSIM_WAVE; }
extern "C" size_t tqsim_dyn_pool_bytes() { return sizeof tqsim::dyn_pool; }
