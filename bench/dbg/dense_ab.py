"""The dense (orthogonal) rotation's C++ store and rows dequant at head_dim 96, A/B in one run (session 52): session
51's loop order (each unit's k-chunk loop reads its B fragments: a warp's three units read them three times; the
template of commit 32fee8b6, by git show) against the current one (the k-chunk loop outside the units: once a chunk),
beside Triton's store / dequant; 4bit_nc SoA / AoS (bf16 and fp16 keys), rotated fp8 keys SoA / AoS (seed 3, bf16),
64K tokens x 32 KV heads, the dequant at B=8 L=8K (bf16 out). Each store's cache checked against the reference
(compare_store's rule, 4096 tokens) and old vs new C++ bit for bit. Prints a markdown table last.
    PYTHONPATH=.:/tmp/pp python bench/dbg/dense_ab.py
    HEAD_DIM=80 OLD=HEAD ... python bench/dbg/dense_ab.py   # head_dim 80 against the committed template
    OLD=HEAD MB=6 ... python bench/dbg/dense_ab.py   # another old commit (or a template file); also the current
                                                     # rendering with the store's __launch_bounds__ minimum at MB
                                                     # blocks an SM ("cuda mbN")"""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import jinja2
import torch

sys.path.insert(0, "bench")
from cuda_h200 import bench, kernels_from_source  # noqa: E402
from tqgen import LayoutSpec  # noqa: E402
from tqgen import reference as ref  # noqa: E402
from tqgen.cuda_launch import load_variant as load_cuda_variant  # noqa: E402
from tqgen.lower_cuda import CUDA_TEMPLATE, _render_inputs, make_variant as make_cuda, render_cuda  # noqa: E402
from tqgen.lower_triton import BANNER, make_variant as make_triton  # noqa: E402
from tqgen.testing import compare_store  # noqa: E402
from tqgen.triton_launch import load_variant as load_triton_variant  # noqa: E402

OLD_COMMIT = os.environ.get("OLD", "32fee8b6")
MB = os.environ.get("MB")
old_dir = Path(tempfile.mkdtemp()) / "gpu"
old_dir.mkdir()
(old_dir / "kernels.cu.j2").write_bytes(Path(OLD_COMMIT).read_bytes() if Path(OLD_COMMIT).is_file() else subprocess.run(
    ["git", "show", f"{OLD_COMMIT}:tqgen/templates/gpu/kernels.cu.j2"], check=True, capture_output=True).stdout)
old_env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(old_dir.parent)), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
dev = torch.device("cuda")
N, HK, B, L = 65536, 32, 8, 8192
D = int(os.environ.get("HEAD_DIM", 96))


def old_cpp(v, src=None):
    src = src or old_env.get_template(CUDA_TEMPLATE).render(**_render_inputs(v.spec, v.target, v.kind, v.options),
                                                            banner=BANNER, variant_id=v.id)
    return kernels_from_source(v, src, dev)


CASES = [("4bit_nc", "soa", {}, torch.bfloat16), ("4bit_nc", "aos", {}, torch.bfloat16),
         ("4bit_nc", "soa", {}, torch.float16), ("k8v4", "soa", {"rotation_seed": 3}, torch.bfloat16),
         ("k8v4", "aos", {"rotation_seed": 3}, torch.bfloat16)]
g = torch.Generator(device="cuda").manual_seed(0)
rows = []
for preset, lay, kw, dt in CASES:
    spec = LayoutSpec.from_preset(preset, layout=lay, head_dim=D, rotation="orthogonal", **kw)
    vc = make_cuda(spec, "sm90")
    impls = {"cuda new": load_cuda_variant(vc, dev), "cuda old": old_cpp(vc),
             "triton": load_triton_variant(make_triton(spec, "sm90"))}
    if MB:
        src, n = re.subn(r"__launch_bounds__\(TQ_ROW_WARPS \* 32\)\ntq_store",
                         f"__launch_bounds__(TQ_ROW_WARPS * 32, {MB})\ntq_store", render_cuda(vc))
        assert n == 2, n
        impls[f"cuda mb{MB}"] = old_cpp(vc, src)
    key = torch.randn(N, HK, D, device=dev, generator=g).to(dt)
    val = torch.randn(N, HK, D, device=dev, generator=g).to(dt)
    slots = torch.randperm(N, device=dev, generator=g).to(torch.int32)
    s4 = torch.randperm(4096, device=dev, generator=g).to(torch.int32)  # the check's 4096 tokens, every slot once
    want = ref.allocate(spec, 4096 // spec.block_size, HK, "cpu")
    ref.store(spec, key[:4096].cpu(), val[:4096].cpu(), want, s4.cpu())
    caches = {}
    for name, k in impls.items():
        small = ref.allocate(spec, 4096 // spec.block_size, HK, dev)
        k.store(key[:4096], val[:4096], small, s4)
        diff = compare_store(spec, small.cpu(), want, key[:4096].cpu(), s4.cpu())
        caches[name] = small
        cache = ref.allocate(spec, N // spec.block_size, HK, dev)
        us = bench(lambda: k.store(key, val, cache, slots, check=False))
        rows.append(("store", preset, lay, str(dt)[6:], name, us, diff.summary()[:60]))
        print(rows[-1], flush=True)
    same = torch.equal(caches["cuda new"], caches["cuda old"])
    rows.append(("store", preset, lay, str(dt)[6:], "new == old bytes", 0.0, str(same)))
    if dt is torch.bfloat16 and preset == "4bit_nc":
        # the dequant: B sequences of L tokens in a cache the C++ store wrote
        nb = B * L // spec.block_size
        cache = ref.allocate(spec, nb, HK, dev)
        impls["cuda new"].store(key[:B * L], val[:B * L], cache, torch.arange(B * L, device=dev, dtype=torch.int32))
        bt = torch.arange(nb, device=dev, dtype=torch.int32).view(B, -1)
        sl = torch.full((B,), L, device=dev, dtype=torch.int32)
        outs = {}
        for name, k in impls.items():
            outs[name] = k.dequant(cache, bt, sl, L, torch.bfloat16, check=False)
            us = bench(lambda: k.dequant(cache, bt, sl, L, torch.bfloat16, check=False))
            err = (outs[name][0].float() - outs["cuda new"][0].float()).abs().max().item()
            rows.append(("dequant", preset, lay, "bf16", name, us, f"K max |diff| vs new {err:.2e}"))
            print(rows[-1], flush=True)
    del key, val, slots
    torch.cuda.empty_cache()

print("\n| op | preset | layout | keys | impl | median us | check |\n|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]:.1f} | {r[6]} |")
