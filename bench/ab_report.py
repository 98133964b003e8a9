"""Same-run A/B table from two `tqgen bench` JSON files (base tree, new tree) of one device run.

    python bench/ab_report.py BASE.json NEW.json "title" "command line" > bench/results/<name>.md
"""
import json
import sys


def main(base: str, new: str, title: str, command: str) -> None:
    b = json.load(open(base))["rows"]
    n = json.load(open(new))["rows"]
    key = lambda r: (r["op"], r["preset"], r["layout"], r["B"], r["L"], r["N"], r["Hq"], r["Hk"], r["D"])  # noqa: E731
    nb = {key(r): r for r in n}
    print(f"# {title}\n\nCommand: {command}\n")
    print("| op | preset | layout | shape | base us | new us | base % ceiling | new % ceiling | speed-up | base x SDPA | new x SDPA |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in b:
        m = nb.get(key(r))
        if not m or r.get("time_us") is None or m.get("time_us") is None:
            continue
        shape = f"N={r['N']}" if r["op"] == "store" else f"B={r['B']} L={r['L']} Hq{r['Hq']} Hk{r['Hk']} D{r['D']}"
        sd = lambda x: f"{x['vs_sdpa']:.2f}x" if x.get("vs_sdpa") else "-"  # noqa: E731
        print(f"| {r['op']} | {r['preset']} | {r['layout']} | {shape} | {r['time_us']:.1f} | {m['time_us']:.1f} | "
              f"{r['pct_ceiling']:.1f} | {m['pct_ceiling']:.1f} | {r['time_us'] / m['time_us']:.2f}x | {sd(r)} | {sd(m)} |")


if __name__ == "__main__":
    main(*sys.argv[1:5])
