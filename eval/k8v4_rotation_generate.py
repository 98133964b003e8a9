"""Greedy 64-token agreement with the unquantised model, k8v4 with plain vs rotated fp8 keys, through
``tqgen_runtime.hf.TurboQuantCache`` (CPU, reference backend; the prompts of ``tqgen eval --generate``).

    python eval/k8v4_rotation_generate.py   # writes eval/results/smollm2-k8v4-rotation-generate.{md,json}"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tqgen import evaluation as E

OUT = Path(__file__).resolve().parent / "results"


def main() -> int:
    model, tok = E.load_model()
    res = E.generation_agreement(model, tok, presets=("k8v4", "k8v4+hadamard", "k8v4+rht"), n_new=64,
                                 controls=False, progress=lambda m: print(m, flush=True))
    lines = ["# Greedy agreement, k8v4 with plain vs rotated fp8 keys (SmolLM2-135M, 10 prompts x 64 tokens)", "",
             "Command: `python eval/k8v4_rotation_generate.py` (CPU, reference backend through TurboQuantCache).", "",
             "| KV cache | prompts identical | mean fraction of tokens equal | median first divergence |",
             "|---|---|---|---|"]
    for s in res["summary"]:
        lines.append(f"| {s['kv']} | {s['identical']}/{s['prompts']} | {100 * s['mean_match_fraction']:.0f} % | "
                     f"{s['median_first_divergence']} |")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "smollm2-k8v4-rotation-generate.md").write_text("\n".join(lines) + "\n")
    (OUT / "smollm2-k8v4-rotation-generate.json").write_text(json.dumps(res, indent=1) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
