"""The balanced decode's mixed-length rows against a packing model (CPU reading of committed measurements; debug).

For each head_dim-128 row of a mixed-suite JSON (C++ decode, not head-group variants): the blocks a unit that
tqgen.cuda_launch.balanced_blocks deals each sequence (the kernel's plan, re-enacted), the dealt blocks and their
waves (132 SMs x the launch bound's blocks an SM), and two model times from a per-tile time t: t = the same
variant's equal-length B=32 L=32K time in a targets JSON over (its waves x its tiles a warp); "packed" = every warp-tile
of the batch spread over all warp slots; "waves" = whole waves of the longest block. Measured balanced / classic
times from the mixed JSON beside them.

    python bench/dbg/bal_model.py MIXED.json TARGETS.json
"""
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tqgen.bench import mixed_lengths  # noqa: E402
from tqgen.build import preset_spec_for_target  # noqa: E402
from tqgen.cuda_launch import balanced_blocks, balanced_cap, balanced_width, span_tiles  # noqa: E402
from tqgen.ir import Target  # noqa: E402
from tqgen.lower_cuda import cuda_options  # noqa: E402

SMS, UNITS = 132, 8  # H200; Hk 8, one query octet a KV head (Hq 32)


def main(mixed_path: str, targets_path: str) -> None:
    mixed = json.load(open(mixed_path))["rows"]
    eq = {(r["preset"], r["layout"]): r for r in json.load(open(targets_path))["rows"]
          if r.get("op") == "decode" and r["B"] == 32 and r["D"] == 128 and not r.get("mix")}
    print("| preset | layout | B | mix | splits | blocks a unit: longest / shortest sequence | dealt blocks | waves "
          "| model us: packed / waves | measured us: balanced / classic | measured / packed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in mixed:
        if r["op"] != "decode" or r["D"] != 128 or not r.get("mix"):
            continue
        p, lay, b, big = r["preset"], r["layout"], r["B"], r["L"]
        o = cuda_options(preset_spec_for_target(p, Target.SM90, layout=lay), Target.SM90)
        if o.head_groups:
            continue
        w, slots, e = o.decode_warps, SMS * o.decode_min_blocks, eq[(p, lay)]
        t = e["time_us"] / (32 * UNITS * (e["splits"] // w) / slots * (span_tiles(e["L"]) / e["splits"]))
        lens = mixed_lengths(r["mix"], b, big)
        xb = balanced_blocks(lens, 0, balanced_width(o, SMS, UNITS, b, r["splits"] // w), balanced_cap(o, SMS, UNITS))
        tiles = [span_tiles(n) for n in lens]
        per_warp = max(math.ceil(n / (x * w)) for n, x in zip(tiles, xb))
        dealt = sum(xb) * UNITS
        packed = sum(tiles) * UNITS / (slots * w) * t
        print(f"| {p} | {lay} | {b} | {r['mix']} | {r['splits']} | {xb[tiles.index(max(tiles))]} / "
              f"{xb[tiles.index(min(tiles))]} | {dealt} | {dealt / slots:.2f} | {packed:.0f} / "
              f"{math.ceil(dealt / slots) * per_warp * t:.0f} | {r['time_us']:.1f} / {r['classic_us']:.1f} | "
              f"{r['time_us'] / packed:.2f} |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
