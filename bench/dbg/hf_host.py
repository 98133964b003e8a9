"""Where a transformers ``generate`` step through TurboQuantCache spends its time (session 32).

Random-init LlamaForCausalLM with SmolLM2-135M's shape (eval/h200_hf.py's), greedy generation of --new tokens after a
prompt of --prompt tokens, batch 1 and 3 (left-padded rows of different lengths), unquantised vs TurboQuantCache
(4bit_nc / k8v4 SoA, the runtime's kernels); ms a generated token (warm: a first call compiles and loads); then
cProfile over one batch-1 TurboQuantCache generate (the functions with the most own time, and tqgen's by cumulative
time).
    PYTHONPATH=$PWD:/tmp/pp python bench/dbg/hf_host.py [--device cuda] [--dtype bfloat16] [--tag NAME]"""
import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))
import h200_hf  # noqa: E402  (the model and tokenizer)

from tqgen_runtime.hf import TurboQuantCache  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--device", default="cuda")
p.add_argument("--dtype", default="bfloat16")
p.add_argument("--new", type=int, default=32)
p.add_argument("--prompts", default="62,2000")
p.add_argument("--tiny", action="store_true")
p.add_argument("--backend", default=None)
p.add_argument("--tag", default="")
p.add_argument("--profile", type=int, default=1)
p.add_argument("--tokens-out", default=None, help="write every generation's tokens here (JSON), to compare two trees")
a = p.parse_args()
args = argparse.Namespace(dtype=a.dtype, tiny=a.tiny, random_init=True, device=a.device)
model, tok, desc = h200_hf.load(args)
arg = "cache" if "cache" in __import__("inspect").signature(type(model).forward).parameters else "past_key_values"
gk = dict(max_new_tokens=a.new, min_new_tokens=a.new, do_sample=False, pad_token_id=tok.pad_token_id,
          eos_token_id=tok.eos_token_id)
cuda = torch.device(a.device).type == "cuda"


def sync():
    if cuda:
        torch.cuda.synchronize()


def generate(ids, mask, kv):
    extra = {}
    if kv is None:
        model.set_attn_implementation("sdpa")
    else:
        extra = {arg: TurboQuantCache(model, preset=kv, layout="soa", backend=a.backend)}
    sync()
    t0 = time.perf_counter()
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, **gk, **extra)
    sync()
    return time.perf_counter() - t0, out[:, ids.shape[1]:]


print(f"# {desc} on {a.device} {a.tag}")
print("| prompt | batch | KV cache | ms a step (warm) | x unquantised | tokens = unquantised |")
print("|---|---|---|---|---|---|")
g = torch.Generator().manual_seed(0)
record = {}
for n in map(int, a.prompts.split(",")):
    for b in (1, 3):
        ids = torch.randint(3, 250, (b, n), generator=g)
        mask = torch.ones(b, n, dtype=torch.int64)
        for r in range(1, b):  # rows shorter by 7r tokens, left-padded
            mask[r, :7 * r] = 0
            ids[r, :7 * r] = 0
        ids, mask = ids.to(a.device), mask.to(a.device)
        base = None
        for kv in (None, "4bit_nc", "k8v4"):
            generate(ids, mask, kv)  # warm-up (compiles, loads)
            s = min(generate(ids, mask, kv)[0] for _ in range(2))
            toks = generate(ids, mask, kv)[1]
            if kv is None:
                base, ref = s, toks
            same = (toks == ref).all(dim=1).sum().item()
            record[f"{n}/{b}/{kv}"] = toks.tolist()
            print(f"| {n} | {b} | {kv or 'unquantised'} | {1e3 * s / a.new:.2f} | {s / base:.2f} | {same}/{b} |",
                  flush=True)

if a.tokens_out:
    Path(a.tokens_out).write_text(__import__("json").dumps(record))
if a.profile:
    ids = torch.randint(3, 250, (1, 62), generator=g).to(a.device)
    mask = torch.ones_like(ids)
    generate(ids, mask, "4bit_nc")
    pr = cProfile.Profile()
    pr.enable()
    generate(ids, mask, "4bit_nc")
    pr.disable()
    for key, filt, n in (("tottime", None, 30), ("cumulative", "tqgen|runtime|hf.py|api.py|cuda_launch|reference", 40)):
        s = io.StringIO()
        st = pstats.Stats(pr, stream=s).sort_stats(key)
        st.print_stats(*([filt] if filt else []), n)
        print("\n".join(line[:200] for line in s.getvalue().splitlines()[6:]))
