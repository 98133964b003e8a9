"""Whether a grid with blocks that exit at once spreads its working blocks over the SMs as a grid of only the working
blocks does (debug, session 42). The balanced decode on equal lengths at one block a unit launches a wider grid whose
blocks past B x units exit; it ran 1.17-1.25x the classic grid's time on an H100 with the same loop and registers
(bench/results/h100-2026-12-05-tune-gap.md). A stand-in kernel: 128 threads, __launch_bounds__(128, 4), 48 KB of
static shared memory (4 blocks an SM, as SoA 3bit_nc's decode), the first M blocks of the grid run a fixed FMA / shared
memory loop and record %smid, the rest exit. For M working blocks in grids of N >= M: the kernel's time (CUDA events,
median of 9) and the most working blocks one SM got.
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
extern "C" __global__ void __launch_bounds__(128, 4) work(int* smid_of, int working, int iters, int stride,
                                                          float* sink) {
  __shared__ float buf[12000];  // 48 KB: 4 blocks an SM, as the decode's registers allow
  const long long blk = ((long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  if (blk % stride != 0 || blk / stride >= working) return;
  unsigned int sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  if (threadIdx.x == 0) smid_of[blk / stride] = (int)sm;
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
params = KernelParams("PiiiP")
sink = torch.zeros(128, device=dev)
stream = torch.cuda.current_stream(dev).cuda_stream
sms = torch.cuda.get_device_properties(dev).multi_processor_count
print(torch.cuda.get_device_name(dev), sms, "SMs")
print("| working M | grid N | stride | us | x grid M | SMs used | most a SM |\n|---|---|---|---|---|---|---|")
for m in ms:
    base = None
    for n, stride in ((m, 1), (2 * m, 1), (3 * m, 1), (4 * m, 1), (2 * m, 2), (3 * m, 3)):
        smid = torch.full((m,), -1, dtype=torch.int32, device=dev)
        f = lambda: drv.launch(fn, (n, 1, 1), 128, params, (smid.data_ptr(), m, iters, stride, sink.data_ptr()),  # noqa: E731
                               stream)
        f()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        ts = []
        for _ in range(9):
            ev[0].record(); f(); ev[1].record(); ev[1].synchronize()  # noqa: E702
            ts.append(ev[0].elapsed_time(ev[1]) * 1e3)
        t = statistics.median(ts)
        base = base or t
        counts = torch.bincount(smid.long(), minlength=sms)
        print(f"| {m} | {n} | {stride} | {t:.1f} | {t / base:.2f} | {int((counts > 0).sum())} | {int(counts.max())} |",
              flush=True)
