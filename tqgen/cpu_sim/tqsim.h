// tqgen's CPU simulator of the GPU device API the generated C++ kernels use (tqgen/cpu_sim/__init__.py compiles a rendered
// kernel.hip, or a kernel.cu with its inline PTX translated, against this header with the host's clang and runs its
// kernels here, on the CPU). hip/hip_runtime.h and cuda_fp16.h add each language's names.
//
// Each GPU thread of a block is a fiber on one OS thread; blocks run one after the other, so a `__shared__` variable
// is a static (one copy, which every block of a launch reuses in turn), kept in one section (tqsim_shared) that is
// filled with 0xff bytes (NaN in fp32 / fp16 / bf16, -1 in integers) before each launch, as is the launch's dynamic
// shared memory, and before each block where tqsim_set_schedule asks (183 KB of statics a library: 1.7x the time of a
// store-heavy check): a block that reads shared memory it has not written reads that, not what an earlier block left.
// Threads run until they block at a shuffle, a vote, a warp-collective instruction or a barrier; once every thread of
// the block is blocked or done, the scheduler resolves what can proceed, as a SIMT machine would:
//   - a shuffle of width W: the lanes of one W-lane segment of a wavefront (TQSIM_WAVE lanes: 64 as AMD's gfx9,
//     32 as an NVIDIA warp) waiting at the same call site exchange their values; a source lane not among them
//     (exited, or in another branch) gives a poison NaN pattern, where the hardware would give a stale register;
//   - a vote (__any): the lanes of the wavefront at the same call site (a divergent wavefront votes per branch);
//   - a warp-collective instruction (mma.sync, movmatrix: CUDA): every live lane of the 32-lane warp at the same site
//     (fewer than 32 is an error: the .aligned instructions need the whole warp);
//   - __syncwarp: every live lane of the 32-lane warp at one; __syncthreads: every live thread of the block at one.
// The order in which the runnable threads of a block run, and the blocks of a grid, is thread / block index order, or
// reversed, or shuffled anew each round; and a wavefront may run on alone through its own shuffles and votes until it
// reaches a __syncthreads, as a GPU's warps run ahead of each other (tqsim_set_schedule). A correct kernel gives the
// same bytes under every schedule; a shared-memory read that a missing __syncthreads leaves unordered after another
// warp's write reads the old value (or the poison) under one and the new under another: the race check of
// tests/test_cpu_sim.py, by differing outputs. (Without `by_wavefront` a shuffle stops every thread until all block,
// which orders one warp's writes before another's reads as a barrier would.)
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
#define __shared__ static __attribute__((section("tqsim_shared")))
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

// The schedule's order (tqsim_set_schedule): 0 index order, 1 reversed, 2 shuffled each round by xorshift64* from a
// seed; and whether shared memory is poisoned before every block (else before every launch).
enum Order : int { FORWARD = 0, REVERSE = 1, SHUFFLE = 2 };
inline int order = FORWARD;
inline bool poison_blocks = false;
inline bool eager_units = false;  // each wavefront runs past its own shuffles before the next starts (see run_block)
inline uint64_t order_state = 1;
inline uint64_t next_random() {
  order_state ^= order_state >> 12;
  order_state ^= order_state << 25;
  order_state ^= order_state >> 27;
  return order_state * 0x2545f4914f6cdd1dull;
}
// perm[0..n) = the order to visit n things in this round.
inline void order_of(unsigned* perm, unsigned n) {
  for (unsigned i = 0; i < n; ++i) perm[i] = order == REVERSE ? n - 1 - i : i;
  if (order == SHUFFLE)
    for (unsigned i = n; i > 1; --i) {
      const unsigned j = (unsigned)(next_random() % i);
      const unsigned t = perm[i - 1];
      perm[i - 1] = perm[j];
      perm[j] = t;
    }
}

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

// Resolves every group of blocked lanes of threads [lo, hi) that can proceed (lo, hi: whole wavefronts), a block's
// __syncthreads only where [lo, hi) is the block; returns how many lanes it released.
inline unsigned resolve(unsigned lo, unsigned hi) {
  const unsigned n = hi;
  unsigned released = 0, alive = 0, at_sync = 0;
  for (unsigned t = lo; t < hi; ++t) {
    if (g.lanes[t].wait != DONE) ++alive;
    if (g.lanes[t].wait == SYNC) ++at_sync;
  }
  if (lo == 0 && hi == g.nthreads && alive && at_sync == alive) {
    for (unsigned t = 0; t < n; ++t)
      if (g.lanes[t].wait == SYNC) g.lanes[t].wait = RUNNING, ++released;
    return released;
  }
  // __syncwarp and collectives: per 32-lane warp, once every live lane of it waits there
  for (unsigned w0 = lo; w0 < n; w0 += 32) {
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
  for (unsigned w0 = lo; w0 < n; w0 += TQSIM_WAVE) {
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

// The linker's bounds of the section every `__shared__` static and the dynamic pool live in.
extern "C" char __start_tqsim_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_tqsim_shared[] __attribute__((weak, visibility("hidden")));
inline size_t dyn_bytes = 0;  // the launch's dynamic shared memory
inline void poison_shared();  // before each block (defined with the dynamic pool, below)

inline int run_block() {
  const unsigned n = g.nthreads;
  if (poison_blocks) poison_shared();
  for (unsigned t = 0; t < n; ++t) {
    Lane& l = g.lanes[t];
    memcpy(g.stacks + (size_t)t * g.stack_size, &CANARY, sizeof CANARY);
    l.tid = t;
    l.wait = RUNNING;
    l.ncopies = 0;
    l.group = 0;
    start_fiber(l, g.stacks + (size_t)t * g.stack_size, g.stack_size);
  }
  static unsigned perm[1024], uperm[1024];
  const unsigned unit = TQSIM_WAVE > 32 ? TQSIM_WAVE : 32, nunits = (n + unit - 1) / unit;
  for (;;) {
    if (eager_units) {  // each wavefront (32-lane warp) alone as far as it goes, its own shuffles, votes, collectives
      order_of(uperm, nunits);
      for (unsigned i = 0; i < nunits; ++i) {
        const unsigned lo = uperm[i] * unit, hi = lo + unit < n ? lo + unit : n;
        do {
          order_of(perm, hi - lo);
          for (unsigned j = 0; j < hi - lo; ++j)
            if (g.lanes[lo + perm[j]].wait == RUNNING) to_lane(&g.lanes[lo + perm[j]]);
          if (g.error[0]) return 1;
        } while (resolve(lo, hi));
      }
    } else {
      order_of(perm, n);
      for (unsigned i = 0; i < n; ++i)
        if (g.lanes[perm[i]].wait == RUNNING) to_lane(&g.lanes[perm[i]]);
    }
    if (g.error[0]) return 1;
    unsigned done = 0;
    for (unsigned t = 0; t < n; ++t) done += g.lanes[t].wait == DONE;
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
    if (!resolve(0, n)) {
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
// dynamic shared memory (`extern __shared__`): 227 KB, sm_90's most
alignas(128) inline char dyn_pool[232448] __attribute__((section("tqsim_shared")));
inline void* shared_ptr(uint32_t a) { return reinterpret_cast<void*>((shared_hi << 32) | a); }
// 0xff over the section but the dynamic pool's bytes past the launch's dyn_bytes (nothing reads them: 227 KB a block
// left alone)
inline void poison_shared() {
  char* const a = __start_tqsim_shared;
  char* const b = __stop_tqsim_shared;
  char* const skip = dyn_pool + dyn_bytes;
  char* const skip_end = dyn_pool + sizeof dyn_pool;
  if (!a || a >= b) return;
  if (skip < a || skip_end > b) {  // the pool outside the section: the linker did not gather it
    fail("tqsim: the dynamic shared-memory pool is not in the tqsim_shared section");
    return;
  }
  memset(a, 0xff, (size_t)(skip - a));
  memset(skip_end, 0xff, (size_t)(b - skip_end));
}
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
                                   unsigned threads, unsigned long long smem) {
  using namespace tqsim;
  g.error[0] = 0;
  if (smem > sizeof dyn_pool) {
    snprintf(g.error, sizeof g.error, "dynamic shared memory of %llu bytes: the pool holds %zu", smem, sizeof dyn_pool);
    return 1;
  }
  dyn_bytes = (size_t)smem;
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
  const uint64_t blocks = (uint64_t)gx * gy * gz;
  if (blocks > 0xffffffffull) {
    snprintf(g.error, sizeof g.error, "grid of %llu blocks: at most 2^32 - 1 allowed", (unsigned long long)blocks);
    return 1;
  }
  unsigned* perm = static_cast<unsigned*>(malloc(sizeof(unsigned) * (blocks ? blocks : 1)));
  if (!perm) {
    snprintf(g.error, sizeof g.error, "cannot allocate the order of %llu blocks", (unsigned long long)blocks);
    return 1;
  }
  order_of(perm, (unsigned)blocks);
  poison_shared();
  int rc = 0;
  for (uint64_t i = 0; i < blocks && !rc; ++i) {
    const unsigned b = perm[i];
    g.block_idx = dim3{b % gx, b / gx % gy, b / gx / gy};
    rc = run_block();
  }
  free(perm);
  return rc;
}
// The schedule from now on: threads, wavefronts and blocks in index order (mode 0, the default), reversed (1) or
// shuffled from `seed` (2); shared memory poisoned before each block (`each_block`) or each launch; `by_wavefront`:
// each wavefront runs on through its own shuffles, votes and warp collectives until it waits at __syncthreads or ends
// before the next one starts (else every thread of the block runs until it blocks, then all resolve together).
extern "C" int tqsim_set_schedule(int mode, unsigned long long seed, int each_block, int by_wavefront) {
  if (mode < 0 || mode > 2) return 1;
  tqsim::order = mode;
  tqsim::eager_units = by_wavefront != 0;
  tqsim::order_state = seed ? seed : 1;  // xorshift's state must not be 0
  tqsim::poison_blocks = each_block != 0;
  return 0;
}
extern "C" const char* tqsim_error() { return tqsim::g.error; }
extern "C" int tqsim_wave() { return TQSIM_WAVE; }
