"""One decode launch per spec (B=32, L=32K, Hk=8, Hq=32) for a profiler: ncu -k regex:tq_decode_split."""
import sys
from pathlib import Path
import torch
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from tqgen import LayoutSpec
from tqgen.lower_triton import make_variant
from tqgen.triton_launch import load_variant
from triton_h200 import fill_cache

for preset in sys.argv[1:] or ["4bit_nc", "k8v4"]:
    spec = LayoutSpec.from_preset(preset, layout="soa")
    kern = load_variant(make_variant(spec, "sm90"))
    cache, bt, sl = fill_cache(kern, spec, 32, 32768, 8, torch.bfloat16)
    q = torch.randn(32, 32, 128, dtype=torch.bfloat16, device="cuda")
    for _ in range(2):
        kern.decode(q, cache, bt, sl, num_splits=17, check=False)
    torch.cuda.synchronize()
    del cache
