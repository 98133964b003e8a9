"""The classic split-KV decode (balanced=False) vs the launcher's default (balanced from 2 sequences when a
(sequence, KV head) has more than one block: cuda_launch.balanced_blocks) on batches of equal and of mixed lengths,
by CUDA-graph replay (tqgen.tuning._graph_us: two disjoint page sets in turn, L2 never holds the next call's), the
launcher's own split count for (B, max length) in both; % of the copy ceiling counts the packed bytes of the tokens
actually attended; "balanced blocks a unit" is balanced_blocks' deal (the default's when it balances). Hq 32, Hk 8, D 128 (D=64 in the environment: Hq 9, Hk 3, D 64).
Usage: balanced.py [PRESET:LAYOUT,...]   (default: every preset x layout)
(debug script: its table goes to bench/results with the command.)"""
import dataclasses
import math
import os
import sys

import torch

sys.path.insert(0, "bench")
from cuda_h200 import copy_ceiling  # noqa: E402
from tqgen import reference as ref  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.cuda_launch import balanced_blocks, balanced_cap, decode_grid, load_variant  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.layout import derive_layout  # noqa: E402
from tqgen.lower_cuda import make_variant  # noqa: E402
from tqgen.testing import rel_err  # noqa: E402
from tqgen.tuning import _graph_us, sm_count  # noqa: E402

dev = torch.device("cuda")
D = int(os.environ.get("D", "128"))
HQ, HK = (32, 8) if D == 128 else (9, 3)
g = torch.Generator().manual_seed(7)


def long_tail(b, mean, cap):
    x = -torch.log(torch.rand(b, generator=g)) * mean  # exponential lengths
    return [int(min(cap, max(1, v))) for v in x]


MIXES = [
    ("B=32 L=32K equal", [32768] * 32),
    ("B=128 L=8K equal", [8192] * 128),
    ("B=32: one 32K + 31 x 1K", [32768] + [1024] * 31),
    ("B=32: long tail, mean 4K, max 32K", long_tail(32, 4096, 32768)),
    ("B=8: 32K 16K 8K 4K 2K 1K 512 256", [32768 >> i for i in range(8)]),
    ("B=128: long tail, mean 2K, max 32K", long_tail(128, 2048, 32768)),
    ("B=64: half 16K, half 100", [16384] * 32 + [100] * 32),
]


def case(spec, lens, kern):
    bs = spec.block_size
    nb = [max(1, math.ceil(n / bs)) for n in lens]
    total = sum(nb)
    cache = ref.allocate(spec, 2 * total + 1, HK, dev)
    n = 2 * total * bs
    slots = torch.arange(n, device=dev, dtype=torch.int64)
    for s in range(0, n, 1 << 20):
        m = min(1 << 20, n - s)
        kern.store(torch.randn(m, HK, D, device=dev, dtype=torch.bfloat16),
                   torch.randn(m, HK, D, device=dev, dtype=torch.bfloat16), cache, slots[s:s + m], check=False)
    perm = torch.randperm(2 * total, generator=g).to(torch.int32)
    tables = []
    for t in range(2):
        bt = torch.zeros(len(lens), max(nb), dtype=torch.int32)
        used = t * total
        for i, k in enumerate(nb):
            bt[i, :k] = perm[used:used + k]
            used += k
        tables.append(bt.to(dev))
    return cache, tables, torch.tensor(lens, dtype=torch.int32, device=dev)


ceil = copy_ceiling()
items = sys.argv[1].split(",") if len(sys.argv) > 1 else [f"{p}:{lay}" for lay in ("soa", "aos")
                                                          for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc")]
rows = []
print(f"copy ceiling {ceil / 1e9:.0f} GB/s, D={D} Hq={HQ} Hk={HK}", flush=True)
for item in items:
    preset, layout = item.split(":")
    spec = dataclasses.replace(preset_spec_for_target(preset, Target.SM90, layout=layout), head_dim=D)
    v = make_variant(spec, Target.SM90)
    kern = load_variant(v)
    per_tok = derive_layout(spec).slot_bytes  # packed bytes a token-head (as tqgen.bench.decode_bytes)
    for name, lens in MIXES:
        cache, tables, sl = case(spec, lens, kern)
        b = len(lens)
        q = torch.randn(b, HQ, D, device=dev, dtype=torch.bfloat16)
        splits = kern.num_splits_for(b, HK, tables[0].shape[1] * spec.block_size, dev)
        exp = ref.decode(spec, q, cache, tables[0], sl)
        errs = [rel_err(kern.decode(q, cache, tables[0], sl, num_splits=splits, balanced=bal), exp)
                for bal in (False, True) if bal is False or splits > v.options.split_step()]
        tc = _graph_us(kern, q, cache, tables, sl, splits, dev, balanced=False)
        tb = _graph_us(kern, q, cache, tables, sl, splits, dev)  # the launcher's choice (classic at one block a unit)
        nbytes = sum(lens) * HK * per_tok
        grid = decode_grid(v.options, splits, HK, HQ // HK, b)
        xb = balanced_blocks(lens, 0, splits // v.options.split_step(), balanced_cap(v.options, sm_count(dev), grid[1]))
        rows.append(f"| {preset} {layout} | {name} | {splits} | {min(xb)}-{max(xb)} | {tc:.1f} | {tb:.1f} | "
                    f"{tc / tb:.2f} | {100 * nbytes / (tc * 1e-6) / ceil:.1f} | {100 * nbytes / (tb * 1e-6) / ceil:.1f} | "
                    f"{max(errs):.1e} |")
        print(rows[-1], flush=True)
        del cache, tables
        torch.cuda.empty_cache()
print("\n| variant | batch | splits | balanced blocks a unit (min-max) | classic us | default (balanced) us | classic / default | "
      "classic % ceiling | default % ceiling | max rel err |")
print("|---|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
