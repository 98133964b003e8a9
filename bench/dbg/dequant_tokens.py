"""The C++ dequant at 1, 2, 4, 8 tokens a warp (CudaOptions.dequant_tokens) on this GPU: every preset x layout at
head_dim 128 (Hk 8), B=32 L=32K and B=8 L=4K, CUDA-event medians over 2 input sets larger than L2 in turn, % of the
device-copy ceiling measured in the same run (bytes: packed slots read + bf16 K and V written, as tqgen bench).
    python bench/dbg/dequant_tokens.py        (session 31; the tqgen first on PYTHONPATH is the one timed)"""
import dataclasses
import sys
from concurrent.futures import ThreadPoolExecutor

import torch

from tqgen.bench import dequant_bytes
from tqgen.build import preset_spec_for_target
from tqgen.cuda_launch import build_binary, device_arch, load_variant
from tqgen.ir import Target
from tqgen.lower_cuda import cuda_options, make_variant
from tqgen import reference as ref

dev = torch.device("cuda")
arch = device_arch(dev)
t = Target.parse(arch, "target")
NTS = [int(x) for x in (sys.argv[1:] or ["1", "2", "4", "8"])]
variants = {}
for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc"):
    for lay in ("soa", "aos"):
        spec = preset_spec_for_target(p, t, layout=lay, head_dim=128)
        for nt in NTS:
            variants[(p, lay, nt)] = make_variant(spec, t, options=dataclasses.replace(cuda_options(spec, t),
                                                                                      dequant_tokens=nt))
with ThreadPoolExecutor(16) as ex:
    list(ex.map(lambda v: build_binary(v, arch), variants.values()))

def timed(fns, reps=20):
    for f in fns:
        f()
    torch.cuda.synchronize()
    ts = []
    for i in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fns[i % len(fns)]()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e-3)
    return sorted(ts)[len(ts) // 2]

src = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
dst = torch.empty_like(src)
ceiling = 2 * src.numel() / timed([lambda: dst.copy_(src)])
print(f"{torch.cuda.get_device_name()}: copy ceiling {ceiling / 1e9:.0f} GB/s")
rows = []
for (b, l) in ((32, 32768), (8, 4096)):
    hk = 8
    for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc"):
        for lay in ("soa", "aos"):
            spec = variants[(p, lay, NTS[0])].spec
            nblk = b * l // spec.block_size
            sets = []
            for s in range(2):
                cache = torch.randint(0, 256, (nblk,) + tuple(ref.allocate(spec, 1, hk, dev).shape[1:]), dtype=torch.uint8,
                                      device=dev)
                # finite fp16 fields: rewrite every byte pair's high byte into the normal range
                cache[..., 1::2] &= 0x3b
                bt = torch.randperm(nblk, device=dev, dtype=torch.int32).reshape(b, -1)
                sets.append((cache, bt, torch.full((b,), l, dtype=torch.int32, device=dev)))
            rd, wr = dequant_bytes(spec, b, l, hk)
            line = f"| {p} | {lay} | {b} | {l} |"
            outs = {}
            for nt in NTS:
                kern = load_variant(variants[(p, lay, nt)], dev)
                fns = [lambda c=c, bt=bt, sl=sl: kern.dequant(c, bt, sl, l, torch.bfloat16, check=False)
                       for c, bt, sl in sets]
                sec = timed(fns)
                outs[nt] = fns[0]()
                line += f" {sec * 1e6:.1f} us {100 * (rd + wr) / sec / ceiling:.1f} % |"
            same = all(torch.equal(outs[nt][i].view(torch.int16), outs[NTS[0]][i].view(torch.int16))
                       for nt in NTS for i in (0, 1))  # bit for bit (random fields may decode to NaN)
            rows.append(line + f" {'identical' if same else 'DIFFER'} |")
            del sets, outs
            torch.cuda.empty_cache()
print("| preset | layout | B | L | " + " | ".join(f"{nt} token(s) a warp" for nt in NTS) + " | outputs |")
print("|---|---|---|---|" + "---|" * (len(NTS) + 1))
print("\n".join(rows))
