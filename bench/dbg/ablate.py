"""Decode ablation on the H200 (debug, not a result): which part of the 4bit_nc loop costs what.

    python bench/dbg/ablate.py build          # here: render, patch, nvcc -> bench/dbg/abl/*.cubin
    python bench/dbg/ablate.py run            # device: time every cubin at B=32 L=32K (splits 8/16)

Patched kernels give wrong answers on purpose (a part of the work removed); only their time matters.
"""
import math
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, "bench")
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.compile_cpp import find_nvcc  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import make_variant, render_cuda  # noqa: E402

OUT = Path("bench/dbg/abl")
LUT = "tq_lut4((kw[j][c / 2] >> (16 * (c % 2))) & 0xffffu, b0, b1);"
ISSUE = "block_of(tile) * (unsigned long long)L.block_bytes"
AFTER_READ = "st_read = st_read + 1 == TQ_STAGES ? 0 : st_read + 1;"
MEMONLY = AFTER_READ + """
    { uint32_t x = 0u;
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int q = 0; q < KW; ++q) x ^= cur.kw[j][q];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int q = 0; q < VW; ++q) x ^= cur.vw[i][q];
      x ^= cur.kn[0] ^ cur.kn[1] ^ cur.vs[0] ^ cur.vs[1] ^ cur.vz[0] ^ cur.vz[1];
      o[0][0] += __uint_as_float(x & 0x3fffffffu); l += 1.f; continue; }"""
VX = re.compile(r"const uint32_t x0 = TQ_PRMT\(vw\[0\]\[wi\], vw\[1\]\[wi\], sel\), x1 = TQ_PRMT\(vw\[2\]\[wi\], vw\[3\]\[wi\], sel\);\n"
                r"(.*\n){4}")

PREFETCH = "if (tile + 1 < t_end) load_tile(tile + 1, nxt);"
K8_PATCHES = {
    "nomem": [("const long long blk0 = block_of(tile);", "const long long blk0 = block_of(t_begin);")],
    "memonly": [(PREFETCH, PREFETCH + MEMONLY.split(AFTER_READ, 1)[1].replace("continue;", "cur = nxt; continue;"))],
}
SWAP = [("const int h = blockIdx.y / QH, q0 = (blockIdx.y % QH) * 8;", "const int h = blockIdx.x / QH, q0 = (blockIdx.x % QH) * 8;"),
        ("const int split = blockIdx.x * TQ_DEC_WARPS + warp;", "const int split = blockIdx.y * TQ_DEC_WARPS + warp;")]
ISSUE_BODY = """    uint32_t* rec = rec0 + st * STAGE_WORDS;
#pragma unroll
    for (int j = 0; j < 2; ++j) tq_cp_async<KQ, CK>(rec + j * KWP, base + (ok_off[j] + t0 * (unsigned int)L.k.ts));
#pragma unroll
    for (int i = 0; i < 4; ++i) tq_cp_async<VQ, CV>(rec + OV + i * VWP, base + (ov_off[i] + t0 * (unsigned int)L.v.ts));
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      tq_cp_async<4, 4>(rec + OM + p, base + (om_off[p][0] + t0 * (unsigned int)L.kn.ts));
      tq_cp_async<4, 4>(rec + OM + 2 + p, base + (om_off[p][1] + t0 * (unsigned int)L.vs.ts));
      tq_cp_async<4, 4>(rec + OM + 4 + p, base + (om_off[p][2] + t0 * (unsigned int)L.vz.ts));
    }
"""
LINES_BODY = """    uint32_t* recw = smem + warp * 32 * RP + st * STAGE_WORDS;
    constexpr int NC = (TQ_KD + TQ_VD) / 16;
    const unsigned int rbase = (unsigned int)(L.k.off + h * L.k.hs) + t0 * (unsigned int)L.k.ts;
#pragma unroll
    for (int k0 = 0; k0 < 16 * NC; k0 += 32) {
      const int k = k0 + lane, t = k / NC, c = k % NC;
      if (k < 16 * NC) tq_cp_async<16, 16>(recw + t * NC * 4 + ((c ^ ((t & 1) << 2)) * 4), base + (rbase + t * (unsigned int)L.k.ts + 16 * c));
    }
    if (lane < 6) {
      const TqAddr& a = lane < 2 ? L.kn : (lane < 4 ? L.vs : L.vz);
      tq_cp_async<16, 16>(recw + 16 * NC * 4 + lane * 4, base + (unsigned int)(a.off + h * a.hs + (lane & 1) * 16 + t0 * 2));
    }
"""
PATCHES = {
    "base": [],
    "nolut": [(LUT, "b0 = kw[j][c / 2]; b1 = kw[j][c / 2] ^ 0x3c003c00u;")],
    "novx": [("VX", "a[0] = vw[0][wi] | VMAGIC; a[1] = vw[1][wi] | VMAGIC; a[2] = vw[2][wi] | VMAGIC; "
                    "a[3] = vw[3][wi] | VMAGIC; (void)sel;\n")],
    "nomem": [(ISSUE, "block_of(t_begin) * (unsigned long long)L.block_bytes")],
    "memonly": [(AFTER_READ, MEMONLY)],
    "swap": SWAP,
    "lines_memonly": [(ISSUE_BODY, LINES_BODY), (AFTER_READ, MEMONLY)],
    "st5_memonly": [("#define TQ_STAGES 3", "#define TQ_STAGES 5"), (AFTER_READ, MEMONLY)],
    "st5_lines_memonly": [("#define TQ_STAGES 3", "#define TQ_STAGES 5"), (ISSUE_BODY, LINES_BODY), (AFTER_READ, MEMONLY)],
    "st5": [("#define TQ_STAGES 3", "#define TQ_STAGES 5")],
    "swap_memonly": SWAP + [(AFTER_READ, MEMONLY)],
}


def build():
    OUT.mkdir(parents=True, exist_ok=True)
    for preset in ("4bit_nc", "k8v4"):
        spec = preset_spec_for_target(preset, Target.SM90, layout="soa")
        v = make_variant(spec, "sm90")
        src0 = render_cuda(v)
        for name, pats in PATCHES.items():
            if preset == "k8v4" and name not in ("base", "memonly", "nomem", "novx", "swap"):
                continue
            src = src0
            for a, b in (K8_PATCHES.get(name, pats) if preset == "k8v4" else pats):
                if a == "VX":
                    src, n = VX.subn(b, src)
                    assert n >= 1, name
                    continue
                assert a in src, (name, a)
                src = src.replace(a, b)
            f = OUT / f"{preset}_{name}.cu"
            f.write_text(src)
            cmd = [str(find_nvcc()), "-arch=sm_90", "-cubin", "-O3", "-std=c++17", "-Xptxas", "-v", str(f),
                   "-o", str(f.with_suffix(".cubin"))]
            r = subprocess.run(cmd, capture_output=True, text=True)
            regs = re.findall(r"Function properties for (tq_decode_split_bf16)[\s\S]*?Used (\d+) registers", r.stderr)
            print(preset, name, "rc", r.returncode, "regs", regs[:1], r.stderr[-300:] if r.returncode else "")


class Swapper:
    """The driver, with the decode grid's x (splits) and y (heads) exchanged."""

    def __init__(self, drv):
        self.drv = drv

    def launch(self, fn, grid, *a):
        swap = fn.value == self.split_fn.value
        return self.drv.launch(fn, (grid[1], grid[0], grid[2]) if swap else grid, *a)


def run():
    import torch
    import torch.nn.functional as F
    from cuda_h200 import bench, copy_ceiling, paged
    from tqgen.cuda_launch import CudaKernels, Driver, load_cuda
    from tqgen.layout import derive_layout
    from tqgen.lower_cuda import KERNEL_NAMES
    dev = torch.device("cuda")
    ceil = copy_ceiling()
    b, L, hq, hk, d = 32, 32768, 32, 8, 128
    q = torch.randn(b, hq, d, device=dev, dtype=torch.bfloat16)
    kk = torch.randn(b, hk, L, d, device=dev, dtype=torch.bfloat16)
    vv = torch.randn_like(kk)
    sdpa = bench(lambda: F.scaled_dot_product_attention(q[:, :, None], kk, vv, enable_gqa=True))
    del kk, vv
    print(f"copy ceiling {ceil / 1e12:.2f} TB/s, SDPA {sdpa:.0f} us")
    print("| preset | variant | splits | us | % ceiling |\n|---|---|---|---|---|")
    drv = Driver.get("cuda")
    for preset in ("4bit_nc", "k8v4"):
        spec = preset_spec_for_target(preset, Target.SM90, layout="soa")
        base = load_cuda(spec, "sm90")
        cache, bt, sl = paged(spec, b, L, hk, dev, base)
        nbytes = b * L * hk * derive_layout(spec).slot_bytes
        for f in sorted(OUT.glob(f"{preset}_*.cubin")):
            if len(sys.argv) > 2 and f.stem not in sys.argv[2].split(","):
                continue
            mod = drv.load_module(f.read_bytes())
            fns = {n: drv.function(mod, n) for pair in KERNEL_NAMES.values() for n in pair}
            kern = CudaKernels(base.variant, Swapper(drv) if "swap" in f.stem else drv, fns)
            if "swap" in f.stem:
                kern.driver.split_fn = fns["tq_decode_split_bf16"]
            for sp in (8, 16):
                ws = kern.workspace(b, hq, sp, dev)
                out = torch.empty_like(q)
                t = bench(lambda: kern.decode(q, cache, bt, sl, num_splits=sp, workspace=ws, out=out, check=False))
                print(f"| {preset} | {f.stem.split('_', 1 if preset == 'k8v4' else 2)[-1]} | {sp} | {t:.0f} | "
                      f"{100 * nbytes / (t * 1e-6) / ceil:.1f} |", flush=True)
        del cache


if __name__ == "__main__":
    {"build": build, "run": run}[sys.argv[1]]()
