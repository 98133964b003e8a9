"""Every default C++ variant on the CPU simulator (tqgen.cpu_sim), one line each: tests/cpp_checks.check_variant at the
simulator's shapes (store bytes by compare_store's rule, int32 / int64 slots, decode plain and with sinks + a window,
dequant in three dtypes: it asserts each) and what it measured: the largest decode error a query dtype, the fp32
dequant's, and the simulated seconds. A CPU reading of the kernels' accuracy (no GPU), as a markdown table on stdout.

    python bench/dbg/sim_errors.py > bench/results/cpu-<date>-cpu-sim-errors.md
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import torch  # noqa: E402

import cpp_checks as cc  # noqa: E402
from tqgen.build import default_matrix  # noqa: E402
from tqgen.cpu_sim import load_sim_variant  # noqa: E402
from tqgen.ir import Backend  # noqa: E402
from tqgen.lower_cuda import make_variant  # noqa: E402


def row(v) -> str:
    kern = load_sim_variant(v)
    t0 = time.perf_counter()
    seen = cc.check_variant(cc.sim_runner(lambda _v: kern), v, cc.SIM_SHAPES)
    dec = seen["decode"]
    return (f"| {v.id} | ok | {dec[torch.bfloat16]:.2e} | {dec[torch.float16]:.2e} | {seen['dequant_f32']:.1e} "
            f"| {time.perf_counter() - t0:.1f} |")


def main() -> None:
    cpp = [v for v in default_matrix()[0] if v.backend in (Backend.CUDA, Backend.HIP)]
    cpp += [make_variant(v.spec, v.target, "portable") for v in cpp if str(v.target) == "sm90"]
    shapes = [(s[0] if len(s[0]) < 10 else f"{len(s[0])} lengths 1-299", s[1], s[2], str(s[3]).split(".")[-1])
              for s in cc.SIM_SHAPES]
    print("# Every default C++ variant on the CPU simulator\n")
    print(f"Command: `python bench/dbg/sim_errors.py` (torch {torch.__version__}): `tests/cpp_checks.check_variant` at "
          f"the simulator's shapes (lengths, KV heads, GQA, dtype) {shapes}, which asserts every check (store: "
          "compare_store's rule; decode within tqgen.testing.DECODE_TOL, bf16 3.1e-2, fp16 3.9e-3; dequant fp32 1e-5, "
          "bf16 / fp16 one rounding). Columns: the largest decode error (max |out - ref| / max |ref|, plain and with "
          "sinks + a 1000-token window) a query dtype, the fp32 dequant's largest relative error (K and V), the "
          "simulated calls' seconds (x86-64, 2-core VM).\n")
    print("| variant | checks | decode bf16 | decode fp16 | dequant fp32 | s |")
    print("|---|---|---|---|---|---|")
    for v in cpp:
        print(row(v), flush=True)


if __name__ == "__main__":
    main()
