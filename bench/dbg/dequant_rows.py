"""The C++ dequant: the lane kernel (dequant_rows=0, 4 tokens a warp: the session-31 default) against the rows kernel
(CudaOptions.dequant_rows = 1, 2, 4 rounds of 32·32/D tokens a warp) on this GPU: every preset x layout at head_dim 128
(Hk 8: B=32 L=32K, B=8 L=4K) and 64 (Hk 3: B=32 L=32K), CUDA-event medians over 2 input sets larger than L2 in turn,
% of the device-copy ceiling measured in the same run (bytes: packed slots read + bf16 K and V written, as tqgen
bench); the last column: the largest relative difference of a rows kernel's bf16 outputs from the lane kernel's.
    python bench/dbg/dequant_rows.py        (session 33; the tqgen first on PYTHONPATH is the one timed)"""
import dataclasses
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
KINDS = [("lane x4", dict(dequant_rows=0, dequant_tokens=4)), ("rows 1", dict(dequant_rows=1)),
         ("rows 2", dict(dequant_rows=2)), ("rows 4", dict(dequant_rows=4))]
PRESETS = ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc")
variants = {}
for d in (128, 64):
    for p in PRESETS:
        for lay in ("soa", "aos"):
            spec = preset_spec_for_target(p, t, layout=lay, head_dim=d)
            for name, ch in KINDS:
                variants[(p, lay, d, name)] = make_variant(spec, t, options=dataclasses.replace(cuda_options(spec, t), **ch))
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
del src, dst
print(f"{torch.cuda.get_device_name()}: copy ceiling {ceiling / 1e9:.0f} GB/s")
rows = []
for (b, l, hk, d) in ((32, 32768, 8, 128), (8, 4096, 8, 128), (32, 32768, 3, 64)):
    for p in PRESETS:
        for lay in ("soa", "aos"):
            spec = variants[(p, lay, d, KINDS[0][0])].spec
            nblk = b * l // spec.block_size
            g = torch.Generator(device=dev).manual_seed(0)
            sets = []
            for s in range(2):
                # a real cache: random keys and values through the reference's store would take minutes at this
                # size; random bytes with finite fp16 fields (every byte pair's high byte in the normal range)
                cache = torch.randint(0, 256, (nblk,) + tuple(ref.allocate(spec, 1, hk, dev).shape[1:]),
                                      dtype=torch.uint8, device=dev, generator=g)
                cache[..., 1::2] &= 0x3b
                bt = torch.randperm(nblk, device=dev, dtype=torch.int32, generator=g).reshape(b, -1)
                sets.append((cache, bt, torch.full((b,), l, dtype=torch.int32, device=dev)))
            rd, wr = dequant_bytes(spec, b, l, hk)
            line = f"| {p} | {lay} | {d} | {b} | {l} |"
            outs = {}
            for name, _ in KINDS:
                kern = load_variant(variants[(p, lay, d, name)], dev)
                fns = [lambda c=c, bt=bt, sl=sl: kern.dequant(c, bt, sl, l, torch.bfloat16, check=False)
                       for c, bt, sl in sets]
                sec = timed(fns)
                outs[name] = fns[0]()
                line += f" {sec * 1e6:.1f} us {100 * (rd + wr) / sec / ceiling:.1f} % |"
            base = outs[KINDS[0][0]]
            worst = 0.0
            for name, _ in KINDS[1:]:
                for i in (0, 1):
                    x, y = outs[name][i].float(), base[i].float()
                    fin = torch.isfinite(y)
                    worst = max(worst, ((x - y).abs()[fin].max() / y.abs()[fin].max().clamp_min(1e-30)).item())
            rows.append(line + f" {worst:.1e} |")
            del sets, outs, base
            torch.cuda.empty_cache()
print("| preset | layout | D | B | L | " + " | ".join(name for name, _ in KINDS) + " | max rel diff vs lane |")
print("|---" * (6 + len(KINDS)) + "|")
print("\n".join(rows))
