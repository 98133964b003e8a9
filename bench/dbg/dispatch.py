"""Whether a grid with blocks that exit at once spreads its working blocks over the SMs as a grid of only the working
blocks does (debug, session 42). The balanced decode on equal lengths at one block a unit launches a wider grid whose
blocks past B x units exit; it ran 1.17-1.25x the classic grid's time on an H100 with the same loop and registers
(bench/results/h100-2026-12-05-tune-gap.md). A stand-in kernel: 128 threads, __launch_bounds__(128, 4), 48 KB of
static shared memory (4 blocks an SM, as SoA 3bit_nc's decode), the first M blocks of the grid run a fixed FMA / shared
memory loop and record %smid, the rest exit (or, session 44: the last M blocks; or a per-SM ticket: a block works if
it is among the first ceil(M / SMs) to arrive on its SM or among the grid's last M arrivals, items in order, the
counters reset by the last block to decide: the protocol a balanced decode would use). For M working blocks in
grids of N >= M: the kernel's time (CUDA events, median of 9) and the most working items one SM ran.
    python bench/dbg/dispatch.py [M,...] [ITERS]"""
import statistics
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tqgen.cuda_launch import Driver, KernelParams  # noqa: E402
from tqgen.nvrtc import compile_cuda_any  # noqa: E402

SRC = r"""
__device__ __forceinline__ void body(int iters, float* buf, float* sink) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f;
  for (int i = threadIdx.x; i < 12000; i += 128) buf[i] = i;
  __syncthreads();
  for (int i = 0; i < iters; ++i) {
    a = fmaf(a, b, buf[(i * 33 + threadIdx.x) % 12000]);
    a = fmaf(a, b, 0.5f);
    a = fmaf(a, b, -0.25f);
    a = fmaf(a, b, 0.125f);
  }
  if (a == 12345.f) sink[threadIdx.x] = a;
  __syncthreads();
}
// mode 0: blocks 0, stride, 2·stride, ... work (the first M at stride 1); mode 1: the last M blocks work; modes 2-4:
// a per-SM ticket, one item a block at most: a block takes an item (ctr[1], in order) if it is among the first `quota`
// to arrive on its SM (ctr[8 + smid]), else by the mode's rule; an item past M exits. The last block to decide
// (ctr[2]) zeroes the counters for the next launch.
extern "C" __global__ void __launch_bounds__(128, 4) work(int* smid_of, int working, int iters, int stride,
                                                          float* sink, int mode, int* ctr, int quota) {
  __shared__ float buf[12000];  // 48 KB: 4 blocks an SM, as the decode's registers allow
  __shared__ int item_s;
  const long long blk = ((long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const long long n = (long long)gridDim.x * gridDim.y * gridDim.z;
  unsigned int sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  if (mode >= 2) {  // a ticket: one item a block at most
    __shared__ int last_s;
    if (threadIdx.x == 0) {
      // mode 2: the last M arrivals (ctr[0]) must take one; modes 3 and 4: a block past its SM's quota skips while
      // the grid's n - M skips last (ctr[3]), so at least M blocks take and every item runs; mode 4 counts no
      // arrivals and counts its decision by an acq_rel add instead of an SC fence and a relaxed one
      const int arrival = mode == 4 ? 0 : atomicAdd(&ctr[0], 1), rank = atomicAdd(&ctr[8 + (sm & 1023)], 1);
      const bool take = rank < quota || (mode == 2 ? arrival >= n - working : atomicAdd(&ctr[3], 1) >= n - working);
      item_s = take ? atomicAdd(&ctr[1], 1) : working;
      int done;
      if (mode == 4) {
        asm volatile("atom.add.acq_rel.gpu.s32 %0, [%1], 1;" : "=r"(done) : "l"(&ctr[2]) : "memory");
      } else {
        __threadfence();
        done = atomicAdd(&ctr[2], 1);
      }
      last_s = done == n - 1;
    }
    __syncthreads();
    if (last_s)  // every other block has decided: the counters are free
      for (int i = threadIdx.x; i < 8 + 1024; i += 128) ctr[i] = 0;
    if (item_s >= working) return;
    if (threadIdx.x == 0) smid_of[item_s] = (int)sm;
    body(iters, buf, sink);
    return;
  }
  const long long w = mode == 1 ? blk - (n - working) : (blk % stride != 0 ? -1 : blk / stride);
  if (w < 0 || w >= working) return;
  if (threadIdx.x == 0) smid_of[w] = (int)sm;
  body(iters, buf, sink);
}
"""

dev = torch.device("cuda")
ms = [int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "256,1024").split(",")]
iters = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
tmp = Path(tempfile.mkdtemp())
(tmp / "d.cu").write_text(SRC)
r = compile_cuda_any(tmp / "d.cu", "sm90", tmp)
assert r.ok, r.log
drv = Driver.get("cuda")
torch.zeros(1, device=dev)
fn = drv.function(drv.load_module(r.output.read_bytes()), "work")
params = KernelParams("PiiiPiPi")
ctr = torch.zeros(8 + 1024, dtype=torch.int32, device=dev)  # zeroed once: mode 2 resets its own
sink = torch.zeros(128, device=dev)
stream = torch.cuda.current_stream(dev).cuda_stream
sms = torch.cuda.get_device_properties(dev).multi_processor_count
print(torch.cuda.get_device_name(dev), sms, "SMs")
print("| working M | grid N | working blocks | us | x grid M | SMs used | most a SM |\n|---|---|---|---|---|---|---|")
for m in ms:
    base = None
    quota = -(-m // sms)
    for n, stride, mode in ((m, 1, 0), (2 * m, 1, 0), (4 * m, 1, 0), (2 * m, 2, 0), (2 * m, 1, 1), (4 * m, 1, 1),
                            (m, 1, 2), (2 * m, 1, 2), (4 * m, 1, 2), (m, 1, 3), (2 * m, 1, 3), (4 * m, 1, 3),
                            (m, 1, 4), (2 * m, 1, 4), (4 * m, 1, 4)):
        smid = torch.full((m,), -1, dtype=torch.int32, device=dev)
        f = lambda: drv.launch(fn, (n, 1, 1), 128, params, (smid.data_ptr(), m, iters, stride, sink.data_ptr(),  # noqa: E731
                                                            mode, ctr.data_ptr(), quota), stream)
        f()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        ts = []
        for _ in range(9):
            ev[0].record(); f(); ev[1].record(); ev[1].synchronize()  # noqa: E702
            ts.append(ev[0].elapsed_time(ev[1]) * 1e3)
        t = statistics.median(ts)
        base = base or t
        assert int((smid >= 0).sum()) == m, "a working item was not run"
        assert int(ctr.abs().sum()) == 0, "the ticket's counters were not reset"
        counts = torch.bincount(smid.long(), minlength=sms)
        how = {0: f"first, stride {stride}", 1: "last", 2: f"per-SM ticket (quota {quota})", 3: f"per-SM ticket, skip budget (quota {quota})",
               4: f"skip budget, acq_rel, no fence (quota {quota})"}[mode]
        print(f"| {m} | {n} | {how} | {t:.1f} | {t / base:.2f} | {int((counts > 0).sum())} | {int(counts.max())} |",
              flush=True)
