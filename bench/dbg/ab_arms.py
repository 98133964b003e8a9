"""Source patches shared by the dense rotation's A/B scripts (dense_store_ab.py, dense_dequant_ab.py): a rendering's
arms joined by "+", the rotation without its products, a kernel's launch bound, the sm90 cubin of a source."""
import re
import tempfile
from pathlib import Path

from tqgen.nvrtc import compile_cuda_any


def joined(patch, src: str, arm: str) -> str | None:
    """``patch(src, a)`` for each arm ``a`` of "a+b" in turn (None once one does not apply)."""
    for a in arm.split("+"):
        src = patch(src, a) if src is not None else None
    return src


def no_products(src: str) -> str | None:
    """(timing only: wrong outputs) tq_dr_product's k-chunk loop run zero times: no B loads, no products."""
    out = src.replace("  for (int kc = 0; kc < KC; ++kc) {", "  for (int kc = 0; kc < 0; ++kc) {")
    return out if out != src else None


def launch_bound(src: str, kernel: str, blocks: str, count: int) -> str:
    """The ``kernel`` family's __launch_bounds__ minimum at ``blocks`` an SM (``count`` instances: one a dtype)."""
    out, n = re.subn(rf"__launch_bounds__\(TQ_ROW_WARPS \* 32(, \d+)?\)\n{kernel}",
                     f"__launch_bounds__(TQ_ROW_WARPS * 32, {blocks})\n{kernel}", src)
    assert n == count, n
    return out


def cubin(src: str | None) -> bytes | None:
    """The source's sm90 cubin (compile_cuda_any: nvcc, else NVRTC), None for None (an arm that does not apply)."""
    if src is None:
        return None
    d = Path(tempfile.mkdtemp())
    (d / "k.cu").write_text(src)
    r = compile_cuda_any(d / "k.cu", "sm90", d)
    assert r.ok, r.log[-2000:]
    return Path(r.output).read_bytes()
