"""Compile rendered CUDA sources (patched or alternative renderings of a variant) to sm_90 cubins on the CPU machine,
in parallel, printing the balanced decode's registers and spills: the compile step of bench/dbg/bal_exp.py and
bench/dbg/deal_ab.py (debug; no sys.path changes here, so a caller's tqgen checkout stays the one imported)."""
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tqgen.compile_cpp import compile_cuda


def item_spec(item: str, head_dim: int):
    """``PRESET:LAYOUT`` -> the sm_90 preset spec at ``head_dim`` (the debug scripts' variant names)."""
    import dataclasses

    from tqgen.build import preset_spec_for_target
    from tqgen.ir import Target
    preset, layout = item.split(":")
    return dataclasses.replace(preset_spec_for_target(preset, Target.SM90, layout=layout), head_dim=head_dim)


def cubin_path(dirpath: Path, item: str, head_dim: int, tag: str) -> Path:
    """Where a rendering ``tag`` of ``item`` at ``head_dim`` is compiled to."""
    return dirpath / f"{item.replace(':', '-')}-d{head_dim}-{tag.replace('+', '_')}.cubin"


def compile_cubins(jobs, dest, workers: int = 4, kernel: str = "tq_decode_split_bal_bf16") -> None:
    """jobs: (item, tag, source text); dest(item, tag) -> the cubin's path; ``kernel``: whose registers are printed."""
    def one(job):
        item, tag, text = job
        with tempfile.TemporaryDirectory() as td:
            p = Path(td) / "kernel.cu"
            p.write_text(text)
            r = compile_cuda(p, "sm_90", Path(td))
            if not r.ok:
                return f"{item} {tag}: FAILED\n{r.log[-2000:]}"
            Path(r.output).replace(dest(item, tag))
            k = r.kernels.get(kernel, {})
            return f"{item} {tag}: regs {k.get('registers')} spills {k.get('spill_stores')} smem {k.get('smem')}"
    with ThreadPoolExecutor(workers) as ex:
        for line in ex.map(one, jobs):
            print(line, flush=True)
