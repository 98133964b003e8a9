"""Which barriers the CPU simulator's race check sees (debug): each `__syncthreads();` and `__syncwarp();` of a variant's
rendered source removed in turn, the mutated kernels run on tests/cpp_checks.SIM_SCHEDULE_SHAPES (tests/cpp_checks.kernel_outputs:
store, decode plain / sinks + window / balanced, merge, dequant) under five schedules of tqgen.cpu_sim
(SimDriver.set_schedule): the default; reverse order with shared memory poisoned before every block; and wavefront at
a time (each wavefront through its own shuffles until a __syncthreads) forward, reverse and shuffled, poisoned. Each
cell names the outputs that differ from the unmodified kernel's under the default schedule ("-": none), "crash" (a
poisoned index read out of bounds: SIGSEGV, in a forked child) or the launch's error. Prints a markdown table.

    python bench/dbg/sim_barriers.py 4bit_nc soa [--target gfx942] [--head-dim 64] [option=value ...]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # sim_check

import torch  # noqa: E402

import cpp_checks as cc  # noqa: E402
from sim_check import add_variant_args, variant_from  # noqa: E402
from tqgen import cpu_sim  # noqa: E402
from tqgen.build import source_name, variant_dir  # noqa: E402
from tqgen.lower_cuda import render_cuda  # noqa: E402

SCHEDULES = [("default", "forward", False, False), ("reverse, poisoned", "reverse", True, False),
             ("by wavefront", "forward", True, True), ("by wavefront, reverse", "reverse", True, True),
             ("by wavefront, shuffled", "shuffle", True, True)]


def outputs(kern, v, order="forward", poison=False, eager=False) -> dict:
    run, out = cc.sim_runner(lambda _v: kern), {}
    with kern.driver.schedule(order, 7, poison, eager):
        for i, shape in enumerate(cc.SIM_SCHEDULE_SHAPES):
            out.update({f"{k}[{i}]": x for k, x in cc.kernel_outputs(run, v, shape, kern).items()})
    return out


def differing(kern, v, want, schedule) -> str:
    """The outputs that differ under ``schedule``, in a forked child (a mutated kernel may crash)."""
    def child(q):
        try:
            got = outputs(kern, v, *schedule[1:])
            q.put(",".join(sorted({k.split("[")[0] for k in want if not torch.equal(want[k], got[k])})) or "-")
        except RuntimeError as e:
            q.put("error: " + str(e).split(": ", 2)[-1][:60])
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    p.join(120)
    if p.exitcode is None:
        p.kill()
        p.join()
        return "hang"
    return q.get() if p.exitcode == 0 else ("crash" if p.exitcode == -11 else f"exit {p.exitcode}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_variant_args(ap)
    a = ap.parse_args()
    torch.set_num_threads(1)  # forked children run torch: one thread, no pool to inherit
    v = variant_from(a)
    gen = variant_dir(v) / source_name(v)  # line numbers as in generated/ where the variant is there
    src = gen.read_text() if not a.changes and gen.exists() else render_cuda(v)
    want = outputs(cpu_sim.load_sim_variant(v), v)
    print(f"{v.id}: each `__syncthreads();` / `__syncwarp();` removed in turn; cells: outputs that differ from the "
          "unmodified kernel's\n")
    print("| line | before it | " + " | ".join(s[0] for s in SCHEDULES) + " |\n|" + "---|" * (2 + len(SCHEDULES)))
    lines = src.splitlines()
    for m in re.finditer(r"__syncthreads\(\);|__syncwarp\(\);", src):
        ln = src.count("\n", 0, m.start()) + 1
        kern = cpu_sim.load_sim_variant(v, source=src[:m.start()] + ";" + src[m.end():])
        cells = [differing(kern, v, want, s) for s in SCHEDULES]
        before = lines[ln - 2].strip().replace("|", "\\|")[:50]
        print(f"| {ln} | `{before}` | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
