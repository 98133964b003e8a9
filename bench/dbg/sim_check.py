"""The C++ GPU tests' checks (tests/cpp_checks.py) on the CPU simulator (tqgen.cpu_sim), for a variant as generated or
for a modified rendering of it: a kernel experiment's correctness before any GPU time (its speed still needs a GPU;
bench/dbg/sass_tile.py reads its instruction count on the CPU).

    python bench/dbg/sim_check.py 3bit_nc soa                       # sm90, head_dim 128, the default options
    python bench/dbg/sim_check.py 3bit_nc soa --source my_kernel.cu  # a modified kernel.cu of that variant
    python bench/dbg/sim_check.py 4bit_nc aos --target gfx942 --head-dim 64 decode_warps=4
    python bench/dbg/sim_check.py k8v4 soa --checks variant,special,moving,balanced,dequant

Needs a host clang (clang-22 or clang++); prints one line a check and exits non-zero on the first failure.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import torch  # noqa: E402

import cpp_checks as cc  # noqa: E402
from tqgen import cpu_sim  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import cuda_options, make_variant  # noqa: E402

CHECKS = {
    "variant": lambda run, v: cc.check_variant(run, v, cc.SIM_SHAPES),
    "special": lambda run, v: [cc.check_store_special_values(run, v, dt) for dt in (torch.bfloat16, torch.float16)],
    "moving": lambda run, v: [cc.check_moving_maximum(run, v, r, lens=cc.SIM_MOVING_LENS) for r in ("rising", "falling")],
    "unwritten": lambda run, v: cc.check_unwritten_slots(run, v),
    "splits": lambda run, v: cc.check_decode_past_64_splits(run, v, lens=cc.SIM_PAST_64_LENS),
    "balanced": lambda run, v: cc.check_balanced_decode(run, v, [(cc.balanced_lens(n, cc.SIM_BALANCED_SCALE), g, c)
                                                                 for n, g, c in cc.BALANCED_CASES]),
    "dequant": lambda run, v: cc.check_dequant(run, v, shapes=cc.SIM_DEQUANT_SHAPES),
}


def add_variant_args(ap: argparse.ArgumentParser) -> None:
    """The arguments that name one C++ variant (bench/dbg/sim_barriers.py takes them too)."""
    ap.add_argument("preset")
    ap.add_argument("layout", choices=["soa", "aos"])
    ap.add_argument("changes", nargs="*", help="CudaOptions changes, key=value")
    ap.add_argument("--target", default="sm90")
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--kind", default="generic", choices=["generic", "portable"])


def variant_from(a: argparse.Namespace):
    """The variant ``add_variant_args``' arguments name: the preset for the target, its options with the changes."""
    t = Target.parse(a.target, "target")
    spec = preset_spec_for_target(a.preset, t, layout=a.layout, head_dim=a.head_dim)
    opts = cuda_options(spec, t, a.kind).with_changes(a.changes) if a.changes else None
    return make_variant(spec, t, a.kind, options=opts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_variant_args(ap)
    ap.add_argument("--source", type=Path, help="a modified rendering of the variant to run in its place")
    ap.add_argument("--checks", default="variant,special,moving,unwritten",
                    help=f"comma-separated, of {','.join(CHECKS)}")
    a = ap.parse_args()
    v = variant_from(a)
    src = a.source.read_text() if a.source else None
    t0 = time.perf_counter()
    kern = cpu_sim.load_sim_variant(v, source=src)
    print(f"{v.id}{' (' + str(a.source) + ')' if a.source else ''}: built and loaded in {time.perf_counter() - t0:.1f} s")
    run = cc.sim_runner(lambda _v: kern)
    for name in a.checks.split(","):
        if name not in CHECKS:
            ap.error(f"unknown check {name!r}; choose from {', '.join(CHECKS)}")
        t0 = time.perf_counter()
        try:
            CHECKS[name](run, v)
        except AssertionError as e:
            print(f"  {name}: FAIL ({time.perf_counter() - t0:.1f} s): {e}")
            return 1
        print(f"  {name}: ok ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
