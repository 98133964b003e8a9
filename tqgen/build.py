"""``tqgen build`` / ``tqgen list``: write variants to generated/ deterministically + the manifest.

Layout on disk::

    generated/<target>/<backend>/<variant_id>/kernel.py    rendered kernel source
                                             /layout.json   derive_layout(spec) (+ page for 8 kv heads)
                                             /meta.json     id, kind, spec, options, rules, hash inputs
    generated/manifest.json                                 sorted; every file's sha256; dropped pairs + reasons

Rebuilding rewrites nothing (write-if-different); ``tqgen check --manifest`` re-renders the
default matrix in memory and reports stale, missing, extra and hand-edited files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Iterable

from . import __version__
from .backends import backend_label, generated_chain
from .cli import add_spec_args, command, spec_from_args
from .ir import NATIVE_FP8, PRESETS, Backend, Layout, LayoutSpec, Reason, SpecError, Target, rotation_at
from .layout import derive_layout
from .lower_triton import make_variant, render_triton, triton_reasons
from .variants import Variant

log = logging.getLogger("tqgen.build")

REPO_GENERATED = Path(__file__).resolve().parent.parent / "generated"
MANIFEST = "manifest.json"
DEFAULT_TARGETS = (Target.SM80, Target.SM86, Target.SM89, Target.SM90, Target.GFX90A, Target.GFX942, Target.GFX950)
#: C++ sources in the default matrix: an sm80 source also serves sm86/sm89 devices (compiled for the
#: device's own arch at load time); HIP for every AMD target
CPP_TARGETS = (Target.SM80, Target.SM90, Target.GFX90A, Target.GFX942, Target.GFX950)
LAYOUT_EXAMPLE_HEADS = 8


def default_root() -> Path:
    env = os.environ.get("TQGEN_GENERATED")
    return Path(env) if env else REPO_GENERATED


def user_cache() -> Path:
    """The on-demand cache (``$TQGEN_CACHE_DIR``, default ``~/.cache/tqgen``): sources under generated/,
    compiled C++ binaries under <backend>/."""
    return Path(os.environ.get("TQGEN_CACHE_DIR", Path.home() / ".cache" / "tqgen"))


def source_name(v: Variant) -> str:
    """The kernel source file of a variant: kernel.py (Triton), kernel.cu / kernel.hip (C++)."""
    if v.backend is Backend.TRITON:
        return "kernel.py"
    from .lower_cuda import source_name as cpp_source_name
    return cpp_source_name(v)


def variant_dir(v: Variant, roots: list[Path] | None = None) -> Path:
    """generated/ first (the pre-filled cache), else the on-demand cache (written now if missing)."""
    for root in (roots or [default_root()]):
        d = Path(root) / v.relpath
        if (d / source_name(v)).exists():
            return d
    d, changed = write_variant(v, user_cache() / "generated")
    if changed:
        log.info("built %s on demand in %s", v.id, d)
    return d


def _dumps(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def preset_spec_for_target(preset: str, target: Target, **kw) -> LayoutSpec:
    """A preset as stored on a target: a preset's fp8 keys use the target's native fp8 format."""
    native = NATIVE_FP8[target]
    over = {}
    if PRESETS[preset].key_codec.is_fp8 and native is not None and "key_codec" not in kw:
        over["key_codec"] = native
    return LayoutSpec.from_preset(preset, **kw, **over)


def rotation_for(head_dim: int, preset: str) -> dict:
    """A preset's spec overrides at ``head_dim``: where head_dim is no power of two, a preset that rotates (Hadamard:
    the Lloyd-Max ones) takes the orthogonal rotation (the slot bytes are the same); fp8 keys stay unrotated."""
    rot = LayoutSpec.from_preset(preset).rotation
    return {} if rotation_at(rot, head_dim) is rot else {"rotation": str(rotation_at(rot, head_dim))}


def _matrix(targets, reasons_of, make, backend_of, variants: list[Variant], dropped: list[dict]) -> None:
    """Every preset × layout (D128, b16) on ``targets``: a variant, or a dropped entry with its reasons."""
    for target in targets:
        for preset in PRESETS:
            for layout in (Layout.AOS, Layout.SOA):
                spec = preset_spec_for_target(preset, target, layout=layout)
                reasons = reasons_of(spec, target)
                if reasons:
                    dropped.append({"target": str(target), "backend": backend_of(target), "spec": spec.token,
                                    "reasons": [str(r) for r in reasons]})
                else:
                    variants.append(make(spec, target))


def default_matrix() -> tuple[list[Variant], list[dict]]:
    """4 presets × 2 layouts × D128 × b16: Triton on 7 targets plus the gfx950 MFMA special, C++ on
    CPP_TARGETS (cuda for NVIDIA, hip for AMD)."""
    from .lower_cuda import backend_for, cuda_reasons, make_variant as make_cpp_variant
    variants: list[Variant] = []
    dropped: list[dict] = []
    _matrix(DEFAULT_TARGETS, triton_reasons, make_variant, lambda t: "triton", variants, dropped)
    variants.append(make_variant(LayoutSpec.from_preset("4bit_nc", layout="soa"), Target.GFX950, "gfx950_mfma"))
    _matrix(CPP_TARGETS, cuda_reasons, make_cpp_variant, lambda t: str(backend_for(t)), variants, dropped)
    return variants, dropped


def make_any(spec: LayoutSpec, target: Target, backend: str, kind: str = "generic") -> Variant:
    """A variant of any backend: triton, cuda (NVIDIA targets) or hip (AMD targets)."""
    from .lower_cuda import backend_for, make_variant as make_cpp_variant
    b = Backend.parse(backend, "backend")
    if b is Backend.TRITON:
        return make_variant(spec, target, kind)
    if b not in (Backend.CUDA, Backend.HIP):
        raise SpecError([Reason("backend", str(b), ["triton", "cuda", "hip"], "the reference backend is not generated")])
    if backend_for(target) is not b:
        raise SpecError([Reason("backend", str(b), [str(backend_for(target)), "triton"],
                                f"{target} compiles {backend_for(target)} C++")])
    return make_cpp_variant(spec, target, kind)


def render_files(v: Variant) -> dict[str, str]:
    bl = derive_layout(v.spec)
    meta = {
        "id": v.id, "backend": str(v.backend), "target": str(v.target), "kind": v.kind,
        "spec": v.spec.to_dict(), "spec_token": v.spec.token, "options": v.options.to_dict(),
        "rules": v.rules.to_dict(), "content_hash": v.content_hash, "template_sha256": v.template_digest,
        "tqgen_version": v.version,
        "regenerate": f"tqgen build --backend {v.backend} --preset <see spec> --layout {v.spec.layout} "
                      f"--target {v.target}" + ("" if v.kind == "generic" else f" --kind {v.kind}"),
    }
    if v.backend is Backend.TRITON:
        source = {"kernel.py": render_triton(v)}
    else:
        from .lower_cuda import render_cuda, source_name
        source = {source_name(v): render_cuda(v)}
    return source | {"layout.json": _dumps(bl.to_dict(LAYOUT_EXAMPLE_HEADS)), "meta.json": _dumps(meta)}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def write_if_different(path: Path, text: str) -> bool:
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    # the writer's own temporary file (processes or threads rendering one variant at once), renamed into place
    tmp = path.with_suffix(f"{path.suffix}.{os.getpid()}-{threading.get_ident()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return True


def write_variant(v: Variant, root: Path) -> tuple[Path, int]:
    d = root / v.relpath
    changed = sum(write_if_different(d / name, text) for name, text in render_files(v).items())
    return d, changed


def manifest_entry(v: Variant) -> dict:
    return {"id": v.id, "path": v.relpath, "backend": str(v.backend), "target": str(v.target), "kind": v.kind,
            "spec": v.spec.token, "rules": v.rules.to_dict(),
            "files": {name: _sha(text) for name, text in sorted(render_files(v).items())}}


def manifest_text(variants: Iterable[Variant], dropped: list[dict]) -> str:
    entries = sorted((manifest_entry(v) for v in variants), key=lambda e: e["path"])
    return _dumps({"tqgen_version": __version__, "variants": entries,
                   "dropped": sorted(dropped, key=lambda d: (d["target"], d["backend"], d["spec"]))})


def read_manifest(root: Path | None = None) -> dict:
    root = Path(root) if root else default_root()
    p = root / MANIFEST
    if not p.exists():
        return {"variants": [], "dropped": []}
    return json.loads(p.read_text())


def build(variants: list[Variant], dropped: list[dict], root: Path, *, merge: bool = True) -> int:
    """Write variants and the manifest; returns how many files changed."""
    root.mkdir(parents=True, exist_ok=True)
    changed = 0
    for v in variants:
        _, c = write_variant(v, root)
        changed += c
    entries = {v.relpath: manifest_entry(v) for v in variants}
    if not merge:  # a full rebuild owns generated/: drop variants it no longer produces
        import shutil
        for meta in sorted(root.glob("*/*/*/meta.json")):
            rel = meta.parent.relative_to(root).as_posix()
            if rel not in entries:
                shutil.rmtree(meta.parent)
                changed += 1
    old = read_manifest(root)
    if merge:  # keep earlier entries whose files still exist
        for e in old.get("variants", []):
            if e["path"] not in entries and (root / e["path"]).exists():
                entries[e["path"]] = e
        keep = {(d["target"], d["backend"], d["spec"]) for d in dropped}
        dropped = dropped + [d for d in old.get("dropped", []) if (d["target"], d["backend"], d["spec"]) not in keep]
    text = _dumps({"tqgen_version": __version__, "variants": sorted(entries.values(), key=lambda e: e["path"]),
                   "dropped": sorted(dropped, key=lambda d: (d["target"], d["backend"], d["spec"]))})
    changed += write_if_different(root / MANIFEST, text)
    return changed


def check_manifest(root: str | Path | None = None) -> list[str]:
    """Problems with generated/: stale or hand-edited files, missing or extra variants."""
    root = Path(root) if root else default_root()
    variants, dropped = default_matrix()
    problems = []
    man = read_manifest(root)
    listed = {e["path"]: e for e in man.get("variants", [])}
    for v in variants:
        d = root / v.relpath
        if v.relpath not in listed:
            problems.append(f"missing from manifest: {v.relpath}")
        for name, text in render_files(v).items():
            f = d / name
            if not f.exists():
                problems.append(f"missing: {v.relpath}/{name}")
            elif f.read_text() != text:
                problems.append(f"stale or hand-edited: {v.relpath}/{name}")
    for path, e in listed.items():
        for name, sha in e.get("files", {}).items():
            f = root / path / name
            if not f.exists():
                problems.append(f"manifest lists a missing file: {path}/{name}")
            elif _sha(f.read_text()) != sha:
                problems.append(f"hand-edited (sha256 differs from manifest): {path}/{name}")
    known = set(listed) | {v.relpath for v in variants}
    if root.exists():
        for meta in sorted(root.glob("*/*/*/meta.json")):
            rel = meta.parent.relative_to(root).as_posix()
            if rel not in known:
                problems.append(f"extra variant not in manifest: {rel}")
    expected_default = {v.relpath for v in variants}
    if (root / MANIFEST).exists() and not problems:
        # the manifest of a default build must be exactly what a fresh default build writes
        fresh = manifest_text(variants, dropped)
        if set(listed) == expected_default and (root / MANIFEST).read_text() != fresh:
            problems.append("stale: manifest.json differs from a fresh build")
    elif not (root / MANIFEST).exists():
        problems.append(f"no {MANIFEST} in {root}")
    return problems


# ------------------------------------------------------------------------------------- CLI
def _build_args(p: argparse.ArgumentParser) -> None:
    add_spec_args(p, preset_required=False)
    p.add_argument("--target", action="append", default=None, help="target(s); repeatable")
    p.add_argument("--backend", action="append", default=None,
                   help="triton | cuda (NVIDIA targets) | hip (AMD targets); repeatable (default: every backend "
                        "the runtime tries on the target, as eligible for the spec: cuda + triton on NVIDIA, hip + "
                        "triton on AMD, and gfx950's triton:gfx950_mfma decode)")
    p.add_argument("--kind", default=None, help="generic | gfx950_mfma (triton) | portable (cuda); only the backends "
                                                "that have it (default generic, and the chain's own kinds)")
    p.add_argument("--out", default=None, help="output folder (default: the repository's generated/)")
    p.add_argument("--all", action="store_true", help="the default matrix (checked into generated/)")


def backend_kinds() -> dict[str, tuple[str, ...]]:
    """The variant kinds each generated backend has (the HIP kernels are the portable fragment path already)."""
    from .lower_cuda import KINDS as CPP_KINDS
    from .lower_triton import KINDS as TRITON_KINDS

    return {"triton": TRITON_KINDS, "cuda": CPP_KINDS, "hip": ("generic",)}


def build_requests(target: Target, backends: list[str] | None, kind: str | None) -> list[tuple[str, str]]:
    """(backend, kind) pairs ``tqgen build`` renders for one target: the named backends with ``kind`` (default
    generic), or without names every generated candidate of the runtime's chain for the target (its order;
    ``kind`` then keeps the backends that have it)."""
    if backends:
        return [(b, kind or "generic") for b in backends]
    pairs = generated_chain(target)
    if kind is not None:
        kinds = backend_kinds()
        pairs = [(b, kind) for b in dict.fromkeys(b for b, _ in pairs) if kind in kinds.get(b, ())]
        if not pairs:
            known = sorted({k for ks in kinds.values() for k in ks})
            raise SpecError([Reason("kind", kind, known, f"no backend of {target} has it; name one with --backend")],
                            "unknown variant kind")
    return pairs


def cmd_build(a: argparse.Namespace) -> int:
    root = Path(a.out) if a.out else default_root()
    if a.all:
        variants, dropped = default_matrix()
        changed = build(variants, dropped, root, merge=False)
    else:
        if not a.preset or not a.target:
            print("tqgen build needs --preset and --target (or --all)")
            return 2
        variants, dropped = [], []
        for t in a.target:
            target = Target.parse(t, "target")
            spec = spec_from_args(a, target)
            try:
                requests = build_requests(target, a.backend, a.kind)
            except SpecError as e:
                print(f"tqgen build: {e}")
                return 1
            skipped = []
            for backend, kind in requests:
                try:
                    variants.append(make_any(spec, target, backend, kind))
                except SpecError as e:
                    if a.backend:  # a backend asked for by name must build
                        print(f"tqgen build: {e}")
                        return 1
                    skipped.append(f"  {backend_label(backend, kind)}: {e}")
            if skipped:
                print(f"{target}: not rendered for {spec.token} (the runtime skips these too):\n" + "\n".join(skipped))
                if len(skipped) == len(requests):
                    print(f"tqgen build: no backend of {target} can lower {spec.token}; see the reasons above")
                    return 1
        changed = build(variants, dropped, root)
    for v in variants:
        print(f"{v.relpath}")
    print(f"{len(variants)} variant(s) in {root}; {changed} file(s) written")
    return 0


cmd_build.add_args = _build_args  # type: ignore[attr-defined]
command("build", "render kernels into generated/ (+ manifest.json)")(cmd_build)


def _list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--generated", default=None)
    p.add_argument("--target", default=None)


def cmd_list(a: argparse.Namespace) -> int:
    man = read_manifest(a.generated)
    rows = [e for e in man["variants"] if not a.target or e["target"] == a.target]
    for e in rows:
        print(f"{e['target']:<7} {e['backend']:<7} {e['kind']:<12} {e['id']}")
    for d in man.get("dropped", []):
        if not a.target or d["target"] == a.target:
            print(f"{d['target']:<7} {d['backend']:<7} dropped      {d['spec']}: {'; '.join(d['reasons'])}")
    print(f"{len(rows)} variant(s)")
    return 0


cmd_list.add_args = _list_args  # type: ignore[attr-defined]
command("list", "list the variants in generated/manifest.json")(cmd_list)
