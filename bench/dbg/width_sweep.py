"""Compile the C++ instance of every key / value width no preset has (key bits 2, 3, 4 and fp8 e4m3fn x value bits 2,
3, 4, 8 x AoS / SoA x head_dim 64, 128) for the given targets, warnings as errors, and list each one that fails or
spills: the presets' per-spec options are matched by field, so a width no preset has can inherit a launch bound or
a pipeline measured for another (session 46 found ten on sm90; tests/test_generated_cpp.py keeps a sample).

    python bench/dbg/width_sweep.py sm90,sm80 [out.json]
    python bench/dbg/width_sweep.py gfx90a,gfx942,gfx950

Needs nvcc for sm targets, the HIP toolchain (tools/hip_toolchain.sh) for gfx ones; two compiles at a time.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tqgen.compile_cpp import compile_cuda, compile_hip  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import cuda_reasons, make_variant, render_cuda  # noqa: E402
from tqgen.testing import width_spec  # noqa: E402

PRESET_WIDTHS = {(8, 4), (4, 4), (3, 4), (3, 3)}
# HEAD_DIMS=256 python bench/dbg/width_sweep.py sm90: every width at head_dim 256, the presets' included
HEAD_DIMS = tuple(int(d) for d in os.environ.get("HEAD_DIMS", "64,128").split(","))


def jobs(targets: list[str]) -> list[tuple]:
    out = []
    for kb, vb, layout, d in itertools.product((2, 3, 4, 8), (2, 3, 4, 8), ("aos", "soa"), HEAD_DIMS):
        spec = width_spec(layout, kb, vb, d)
        if (kb, vb) in PRESET_WIDTHS and d in (64, 128):
            continue  # the presets at 64 / 128: tests/test_generated_cpp.py compiles them
        out += [(spec, t) for t in targets if not cuda_reasons(spec, Target.parse(t, "target"))]
    return out


def compile_one(job: tuple) -> dict:
    spec, t = job
    d = Path(tempfile.mkdtemp())
    src = d / ("kernel.cu" if t.startswith("sm") else "kernel.hip")
    src.write_text(render_cuda(make_variant(spec, t)))
    r = compile_cuda(src, t, d) if t.startswith("sm") else compile_hip(src, t, d)
    errors = sorted({line.strip()[:160] for line in r.log.splitlines() if "error" in line and not line.startswith("$")})
    spilled = {k: (x.get("registers"), x.get("spill_stores", 0)) for k, x in r.kernels.items() if x.get("spill_stores")}
    return dict(target=t, spec=spec.token, ok=r.ok, spills=r.spills, spilled=spilled, errors=errors[:4])


def main() -> None:
    targets = sys.argv[1].split(",") if len(sys.argv) > 1 else ["sm90"]
    todo = jobs(targets)
    print(f"{len(todo)} instances for {', '.join(targets)}", flush=True)
    results = []
    with ThreadPoolExecutor(2) as pool:
        for res in pool.map(compile_one, todo):
            results.append(res)
            if not res["ok"] or res["spills"]:
                print("BAD", json.dumps(res), flush=True)
    bad = sum(1 for r in results if not r["ok"] or r["spills"])
    print(f"{len(results)} compiled, {bad} failed or spilled")
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
