"""AoS line loads: shared-memory wavefronts of one tile's fragment reads (lower_cuda's bank model) as the kernel
reads them today, against word-interleaved reads (a CPU reading for a next step, no kernel built; debug).

Today thread (g, r) reads its K quarter r (KQ contiguous bytes) of tokens g and 8 + g and its V eighth g (VQ
contiguous bytes) of 4 tokens, each piece as aligned words funnel-shifted (the slot starts 2-byte aligned): at one
instruction every lane reads the same word of its 16-byte chunk, so 32 lanes meet 8 banks. Interleaved: thread r
reads key words r, r + 4, ... and thread g value words g, g + 8, ... (any fixed permutation of dims works: the
query fragments and the output rows follow it), each word as the 1 or 2 aligned words that hold it (2 where the slot
starts 2 bytes into a word): the 4 lanes of a token then read 4 consecutive words. For each, the fewest wavefronts
over lower_cuda.line_swizzle_aos's candidate rows (unswizzled nc / nc + 1 chunks, or power-of-two rows with the
swizzle swz(t) = sa·((t >> 1) & 3) ^ sb·(t & 1)), summed over the slot's shifts in its chunk, per tile.

    python bench/dbg/interleave_model.py [PRESET:HEAD_DIM ...]   # default 4bit_nc:128 4bit_nc:64 k8v4:128
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tqgen import LayoutSpec  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.layout import derive_layout  # noqa: E402
from tqgen.lower_cuda import (_aos_line_loads, _aos_shifts, aos_swizzle_candidates, line_reads,  # noqa: E402
                              platform_for, read_wavefronts)


def interleaved_reads(kd: int, vd: int, vo: int, o: int, always2: bool = False) -> list[tuple[int, list[tuple[int, int]]]]:
    """Per instruction: (4, [(token, row byte)] x 32 lanes) of the interleaved K and V word reads (``always2``: two
    aligned words a word, as a kernel that does not know the slot's shift in its word would read)."""
    kw, vw = kd // 16, vd // 32  # words a thread holds: K quarter, V eighth
    parts = 1 if o % 4 == 0 and not always2 else 2
    out = []
    for j in range(2):
        for x in range(kw):
            for p in range(parts):
                out.append((4, [(8 * j + ln // 4, 4 * ((o + 4 * (ln % 4 + 4 * x)) // 4) + 4 * p) for ln in range(32)]))
    for i in range(4):
        for x in range(vw):
            for p in range(parts):
                out.append((4, [(2 * (ln % 4) + (i & 1) + 8 * (i >> 1), 4 * ((o + vo + 4 * (ln // 4 + 8 * x)) // 4) + 4 * p)
                                for ln in range(32)]))
    return out


def best(reads_of, shifts, nc):
    return min((sum(read_wavefronts(reads_of(o), n, sa, sb) for o in shifts), n, sa, sb)
               for n, sa, sb in aos_swizzle_candidates(nc))


def main(items):
    print("| AoS preset | head_dim | shifts | reads today: LDS / wavefronts a tile (ncp, sa, sb) | interleaved: LDS / wavefronts "
          "| interleaved, two words each: LDS / wavefronts |")
    print("|---|---|---|---|---|---|")
    for item in items:
        preset, d = item.split(":")
        spec = LayoutSpec.from_preset(preset, layout="aos", head_dim=int(d))
        bl = derive_layout(spec)
        lines = _aos_line_loads(spec, platform_for(Target.SM90))  # the kernel's plan: chunks, V offset, reads
        vo, nc, shifts = lines["vo"], lines["nc"], _aos_shifts(spec)
        today = lambda o: line_reads(bl.kd, bl.vd, vo, o, (lines["rk"], 0, lines["rv"], 0))  # noqa: E731
        w0, n0, a0, b0 = best(today, shifts, nc)
        w1, n1, a1, b1 = best(lambda o: interleaved_reads(bl.kd, bl.vd, vo, o), shifts, nc)
        lds0 = sum(len(today(o)) for o in shifts) / len(shifts)
        lds1 = sum(len(interleaved_reads(bl.kd, bl.vd, vo, o)) for o in shifts) / len(shifts)
        w2, n2, a2, b2 = best(lambda o: interleaved_reads(bl.kd, bl.vd, vo, o, True), shifts, nc)
        lds2 = sum(len(interleaved_reads(bl.kd, bl.vd, vo, o, True)) for o in shifts) / len(shifts)
        print(f"| {preset} | {d} | {len(shifts)} | {lds0:.1f} / {w0 / len(shifts):.1f} ({n0}, {a0}, {b0}) | "
              f"{lds1:.1f} / {w1 / len(shifts):.1f} ({n1}, {a1}, {b1}) | {lds2:.1f} / {w2 / len(shifts):.1f} ({n2}, {a2}, {b2}) |")


if __name__ == "__main__":
    main(sys.argv[1:] or ["4bit_nc:128", "4bit_nc:64", "k8v4:128"])
