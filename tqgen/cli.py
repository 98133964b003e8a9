"""The ``tqgen`` command line: show, check (more verbs register themselves in COMMANDS)."""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from .ir import (
    LLOYD_MAX_BITS, PRESETS, BLOCK_SIZES, VALUE_BITS, KeyCodec, Layout, LayoutSpec, Rotation, SpecError, Target,
    check_target, parse_target,
)
from .layout import derive_layout

COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]] = {}


def command(name: str, help: str):
    def wrap(fn):
        def add(p):  # default: spec flags
            add_spec_args(p)
        COMMANDS[name] = (getattr(fn, "add_args", add), fn, help)
        return fn
    return wrap


def add_spec_args(p: argparse.ArgumentParser, *, preset_required: bool = True) -> None:
    g = p.add_argument_group("spec")
    g.add_argument("--preset", required=preset_required,
                   help=f"one of {', '.join(PRESETS)} (the 'turboquant_' prefix is optional)")
    g.add_argument("--layout", default="aos", help="aos | soa (default aos)")
    g.add_argument("--head-dim", type=int, default=128)
    g.add_argument("--block-size", type=int, default=16, help=f"one of {', '.join(map(str, BLOCK_SIZES))}")
    g.add_argument("--key-codec", default=None, help=f"override: {', '.join(c.value for c in KeyCodec)}")
    g.add_argument("--rotation", default=None, help=f"override: {', '.join(r.value for r in Rotation)}")
    g.add_argument("--rotation-seed", type=int, default=None)
    g.add_argument("--key-bits", type=int, default=None,
                   help=f"override: Lloyd-Max key code bits, one of {', '.join(map(str, LLOYD_MAX_BITS))}")
    g.add_argument("--value-bits", type=int, default=None,
                   help=f"override: value code bits, one of {', '.join(map(str, VALUE_BITS))}")
    g.add_argument("--norm-correction", dest="norm_correction", action="store_true", default=None,
                   help="override: rescale each key's centroids to unit norm (the *_nc presets)")
    g.add_argument("--no-norm-correction", dest="norm_correction", action="store_false")
    g.add_argument("--fold", dest="fold_norm", action="store_true", default=None, help="fold 1/‖c[idx]‖ into the norm")
    g.add_argument("--no-fold", dest="fold_norm", action="store_false")


def spec_from_args(a: argparse.Namespace, target: Target | None = None) -> LayoutSpec:
    over = {}
    for name in ("rotation", "rotation_seed", "fold_norm", "key_bits", "value_bits", "norm_correction"):
        if getattr(a, name, None) is not None:
            over[name] = getattr(a, name)
    if getattr(a, "key_codec", None):
        over["key_codec"] = a.key_codec
    elif target is not None:
        from .ir import NATIVE_FP8, resolve_preset
        p = resolve_preset(a.preset)
        native = NATIVE_FP8[target]
        if p.key_codec.is_fp8 and native is not None:
            over["key_codec"] = native  # a preset's "fp8" means the target's native format
    return LayoutSpec.from_preset(a.preset, layout=a.layout, head_dim=a.head_dim, block_size=a.block_size, **over)


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    lines = [fmt.format(*header), fmt.format(*["-" * w for w in widths])]
    lines += [fmt.format(*map(str, r)) for r in rows]
    return "\n".join(lines)


def _show_args(p):
    add_spec_args(p)
    p.add_argument("--num-kv-heads", type=int, default=8, help="heads per block for the page table (default 8)")


def cmd_show(a: argparse.Namespace) -> int:
    spec = spec_from_args(a)
    bl = derive_layout(spec)
    page = bl.page(a.num_kv_heads)
    print(f"{spec.token}: slot {bl.slot_bytes} bytes ({bl.slot_bytes_unaligned} + "
          f"{bl.slot_bytes - bl.slot_bytes_unaligned} pad), block {page.block_bytes} bytes "
          f"for {a.num_kv_heads} kv heads x {spec.block_size} tokens")
    print(f"addressing: byte = block*{page.block_bytes} + offset + token*token_stride + head*head_stride\n")
    rows = []
    for f in bl.fields:
        fa = page[f.name]
        rows.append([f.name, fa.offset, fa.token_stride, fa.head_stride, f.nbytes, f.dtype,
                     f.pack.name if f.pack else "-", f.what])
    print(_table(rows, ["field", "offset", "token_stride", "head_stride", "bytes", "dtype", "pack", "holds"]))
    if spec.layout is Layout.AOS:
        print("\nAoS slot: " + " | ".join(f"{f.name} {f.aos_offset}-{f.aos_offset + f.nbytes - 1}" for f in bl.fields))
    else:
        print(f"\nSoA: data region [block_size][H][{bl.kd}+{bl.vd}] at 0, fp16 metadata [H][{len(bl.meta_fields)}]"
              f"[block_size] at {page.meta_offset}")
    return 0


cmd_show.add_args = _show_args  # type: ignore[attr-defined]
command("show", "print the byte layout of a spec")(cmd_show)


def _check_args(p):
    add_spec_args(p, preset_required=False)
    p.add_argument("--target", default=None, help=f"one of {', '.join(t.value for t in Target)}")
    p.add_argument("--manifest", action="store_true", help="check that generated/ matches a fresh build")
    p.add_argument("--generated", default=None, help="generated/ folder (default: the repository's)")


def eligibility(spec: LayoutSpec, target: Target) -> dict[str, list]:
    """Reasons per backend (empty list = eligible). Backends register in tqgen.backends."""
    out = {"format": check_target(spec, target)}
    try:
        from .backends import backend_reasons
    except ImportError:
        return out
    out.update(backend_reasons(spec, target))
    return out


def cmd_check(a: argparse.Namespace) -> int:
    if a.manifest:
        from .build import check_manifest
        problems = check_manifest(a.generated)
        for p in problems:
            print(p)
        print("generated/ is up to date" if not problems else f"{len(problems)} problem(s) in generated/; "
              "run 'tqgen build --all' and commit the result")
        return 1 if problems else 0
    if not a.preset or not a.target:
        print("tqgen check needs --preset and --target (or --manifest)", file=sys.stderr)
        return 2
    target = parse_target(a.target)
    spec = spec_from_args(a, target)
    result = eligibility(spec, target)
    fmt_bad = result.pop("format")
    print(f"{spec.token} on {target}:")
    for r in fmt_bad:
        print(f"  format: {r}")
    ok_any = False  # a generated-kernel backend must fit; the reference oracle always does
    for backend, reasons in result.items():
        if not reasons and not fmt_bad:
            ok_any = ok_any or backend != "reference"
            print(f"  {backend}: eligible" + (" (slow torch fallback; does not count)" if backend == "reference" else ""))
        else:
            print(f"  {backend}: not eligible")
            for r in reasons:
                print(f"    - {r}")
    if not result and not fmt_bad:
        ok_any = True
        print("  format: eligible")
    return 0 if ok_any else 1


cmd_check.add_args = _check_args  # type: ignore[attr-defined]
command("check", "eligibility of a spec on a target, or staleness of generated/ (--manifest)")(cmd_check)


def _load_optional_commands() -> None:
    for mod in ("tqgen.build", "tqgen.evaluation", "tqgen.bench", "tqgen.tuning"):
        try:
            __import__(mod)
        except ImportError as e:  # a verb whose module cannot load is reported, not fatal
            if mod not in str(e):
                raise


def main(argv: list[str] | None = None) -> int:
    _load_optional_commands()
    parser = argparse.ArgumentParser(prog="tqgen", description="TurboQuant KV-cache kernel generator")
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name, (add, fn, help) in COMMANDS.items():
        p = sub.add_parser(name, help=help, description=help)
        add(p)
        p.set_defaults(fn=fn)
    a = parser.parse_args(argv)
    try:
        return a.fn(a)
    except SpecError as e:
        print(f"tqgen {a.cmd}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    # run as a script the verbs would register in a second copy of this module: use the package's
    from tqgen.cli import main as _main
    sys.exit(_main())
