#!/bin/bash
# Session 31, run 1: the batched prefill and the C++ dequant's vector stores, several tokens a warp, on the H200.
#   1. torch's bottom-right causal bias with GQA (the prefill's SDPA for longer chunks): which kernel, equal to a mask
#   2. GPU tests: the prefill batch (cuda, triton), every C++ variant's dequant (bf16 / fp16 / fp32)
#   3. the C++ dequant at 1, 2, 4, 8 tokens a warp (bench/dbg/dequant_tokens.py)
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
python - <<'PY'
import torch, torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right
q = torch.randn(2, 32, 40, 128, device="cuda", dtype=torch.bfloat16)
k = torch.randn(2, 8, 1040, 128, device="cuda", dtype=torch.bfloat16)
v = torch.randn_like(k)
o = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(40, 1040), enable_gqa=True)
m = torch.arange(1040, device="cuda")[None] <= torch.arange(1000, 1040, device="cuda")[:, None]
e = F.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(4, 1), v.float().repeat_interleave(4, 1), attn_mask=m)
print("torch", torch.__version__, "lower-right + gqa vs fp32 mask: max abs err", float((o.float() - e).abs().max()))
PY
OUT=$OUT timeout 330 bash bench/dbg/gpu_tests.sh 8 tests/test_runtime_gpu.py tests/test_cuda_gpu.py::test_variant_matches_reference 2>&1 | tail -12
timeout 240 python bench/dbg/dequant_tokens.py 1 2 4 8
