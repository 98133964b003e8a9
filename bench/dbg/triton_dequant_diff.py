"""How far the Triton dequant's outputs at other tokens-a-program x warps are from the default's (16 x 4) and from
the reference dequant (session 32; the sweep's "same output: False" rows), B=4 L=2K (smaller than the sweep's).
    PYTHONPATH=$PWD:/tmp/pp python bench/dbg/triton_dequant_diff.py"""
import torch

import tqgen_runtime as tqr
from tqgen import reference as ref
from tqgen.triton_launch import layout_constexprs, load_triton, triton_cdiv

dev = torch.device("cuda")
B, L, HK = 4, 2048, 8
print("| preset | layout | BLOCK_N x warps | max abs diff vs 16 x 4 | elements differing | max abs diff vs reference (fp32) | 16 x 4 vs reference |")
print("|---|---|---|---|---|---|---|")
for preset, layout, combos in (("4bit_nc", "soa", ((32, 1), (64, 2))), ("4bit_nc", "aos", ((16, 2), (16, 8), (32, 8))),
                               ("k3v4_nc", "soa", ((32, 1), (64, 2)))):
    kv = tqr.load(preset, layout=layout, num_kv_heads=HK, num_q_heads=32, device=dev, backend="triton")
    tk = load_triton(kv.spec, "sm90")
    pages = L // kv.spec.block_size
    cache = kv.allocate(B * pages)
    x = torch.randn(B * L, HK, 128, device=dev, dtype=torch.bfloat16)
    kv.store(x, x, cache, torch.arange(B * L, dtype=torch.int32, device=dev))
    bt = torch.arange(B * pages, device=dev, dtype=torch.int32).view(B, pages)
    sl = torch.full((B,), L, dtype=torch.int32, device=dev)
    c = tk._device_consts(dev)
    rk, rv = ref.dequant(kv.spec, cache.cpu(), bt.cpu(), sl.cpu())

    def run(bn, warps):
        k = torch.empty(B, HK, L, 128, dtype=torch.bfloat16, device=dev)
        v = torch.empty_like(k)
        tk.module.tq_dequant[(B * HK, triton_cdiv(L, bn))](
            cache, cache.view(torch.int16), bt, sl, c["rot"], c["cent"], k, v, bt.stride(0), L,
            **layout_constexprs(kv.spec, HK), BLOCK_N=bn, num_warps=warps, num_stages=1)
        return torch.cat([k.float().cpu().flatten(), v.float().cpu().flatten()])

    base, want = run(16, 4), torch.cat([rk.flatten(), rv.flatten()])
    for bn, w in combos:
        o = run(bn, w)
        print(f"| {preset} | {layout} | {bn} x {w} | {float((o - base).abs().max()):.3e} | {int((o != base).sum())} of "
              f"{o.numel()} | {float((o - want).abs().max()):.3e} | {float((base - want).abs().max()):.3e} |", flush=True)
