"""Every default C++ variant on the CPU simulator (tqgen.cpu_sim), one line each: store bytes against the reference
(compare_store's rule), decode error relative to max |out| (plain and with sinks + a window), dequant fp32 error, and
the simulated seconds. A CPU reading of the kernels' accuracy (no GPU), written as a markdown table to stdout.

    python bench/dbg/sim_errors.py > bench/results/cpu-<date>-cpu-sim-errors.md
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from tqgen import reference as ref  # noqa: E402
from tqgen.build import default_matrix  # noqa: E402
from tqgen.cpu_sim import load_sim_variant  # noqa: E402
from tqgen.ir import Backend  # noqa: E402
from tqgen.lower_cuda import make_variant  # noqa: E402
from tqgen.testing import Case, compare_store, rel_err  # noqa: E402

SHAPES = [([900, 1, 0, 209, 16, 300, 219, 17], 8, 4, torch.bfloat16), ([513, 1096, 77], 4, 1, torch.float16),
          ([700, 250], 2, 12, torch.float16)]


def row(v) -> str:
    kern = load_sim_variant(v)
    spec, t0, dec, dq, store = v.spec, time.perf_counter(), [], 0.0, []
    for i, (lens, hk, g, dt) in enumerate(SHAPES):
        case = Case(spec, lens, hk, g, dtype=dt, seed=i).build("cpu")
        got, want = ref.allocate(spec, case["num_blocks"], hk), ref.allocate(spec, case["num_blocks"], hk)
        kern.store(case["key"], case["value"], got, case["slot_mapping"])
        ref.store(spec, case["key"], case["value"], want, case["slot_mapping"])
        d = compare_store(spec, got, want, case["key"], case["slot_mapping"])
        store.append("ok" if d.ok else "FAIL")
        for sinks, win in ((None, None), (case["sinks"], 100)):
            out = kern.decode(case["query"], want, case["block_table"], case["seq_lens"], sinks=sinks, sliding_window=win)
            exp = ref.decode(spec, case["query"], want, case["block_table"], case["seq_lens"], sinks=sinks,
                             sliding_window=win)
            dec.append((rel_err(out, exp), dt))
        k, vv = kern.dequant(want, case["block_table"], case["seq_lens"], dtype=torch.float32)
        ek, ev = ref.dequant(spec, want, case["block_table"], case["seq_lens"])
        dq = max(dq, rel_err(k, ek), rel_err(vv, ev))
    bf = max(e for e, dt in dec if dt == torch.bfloat16)
    f16 = max(e for e, dt in dec if dt == torch.float16)
    return (f"| {v.id} | {'/'.join(store)} | {bf:.2e} | {f16:.2e} | {dq:.1e} | {time.perf_counter() - t0:.1f} |")


def main() -> None:
    cpp = [v for v in default_matrix()[0] if v.backend in (Backend.CUDA, Backend.HIP)]
    cpp += [make_variant(v.spec, v.target, "portable") for v in cpp if str(v.target) == "sm90"]
    print("# Every default C++ variant on the CPU simulator\n")
    print(f"Command: `python bench/dbg/sim_errors.py` (torch {torch.__version__}). Shapes (lengths, KV heads, GQA, "
          f"dtype): {[(s[0], s[1], s[2], str(s[3]).split('.')[-1]) for s in SHAPES]}. Decode error: max |out - ref| / "
          "max |ref| over the shapes of that dtype, plain and with sinks + a 100-token window (tolerance "
          "tqgen.testing.DECODE_TOL: bf16 3.1e-2, fp16 3.9e-3). Store: compare_store's rule a shape. Dequant: fp32, "
          "max relative error over K and V. Seconds: the three shapes' simulated calls (x86-64, 2-core VM).\n")
    print("| variant | store | decode bf16 | decode fp16 | dequant fp32 | s |")
    print("|---|---|---|---|---|---|")
    for v in cpp:
        print(row(v), flush=True)


if __name__ == "__main__":
    main()
