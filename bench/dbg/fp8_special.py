import torch
from tqgen import reference as ref
from tqgen.build import default_matrix
from tqgen.ir import Backend
from tqgen.cuda_launch import load_variant
import tests.test_cuda_gpu as T
v = [x for x in T.CUDA if str(x.target) == "sm90" and x.spec.key_codec.is_fp8][0]
kern = load_variant(v)
spec = v.spec
dev = torch.device("cuda")
for dt in (torch.bfloat16, torch.float16):
    k, val = T._special_rows(spec.head_dim, dt)
    n = k.shape[0] // 2
    key = k.reshape(n, 2, -1).to(dev); value = val.reshape(n, 2, -1).to(dev)
    slots = torch.arange(n, dtype=torch.int32, device=dev)
    got = ref.allocate(spec, 4, 2, dev); want = ref.allocate(spec, 4, 2, dev)
    kern.store(key, value, got, slots); ref.store(spec, key, value, want, slots)
    from tqgen.layout import derive_layout
    bl = derive_layout(spec)
    blk = torch.zeros(2 * n, dtype=torch.long, device=dev); t = torch.arange(n, device=dev).repeat_interleave(2); hh = torch.arange(2, device=dev).repeat(n)
    fg = ref._read_fields(bl, got, blk, t, hh); fw = ref._read_fields(bl, want, blk, t, hh)
    d = (fg["k_data"] != fw["k_data"])
    for r in range(2 * n):
        idx = d[r].nonzero().flatten().tolist()
        if idx:
            kk = k[r]
            print(dt, "row", r, [(i, float(kk[i]), hex(int(fg["k_data"][r, i])), hex(int(fw["k_data"][r, i]))) for i in idx[:8]])
