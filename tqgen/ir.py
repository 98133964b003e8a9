"""The layout IR: what a TurboQuant KV cache is, as frozen, hashable data.

One enum per axis, each with its spelling next to it (CLI token == value), presets as
data, targets as data. Every check returns *all* reasons (what, given, allowed, what to
try); constructing an invalid spec raises :class:`SpecError` listing every reason.

This module imports neither torch nor triton.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable


def _close_value(given: Any, values: list[str]) -> str | None:
    """The one allowed value a wrong spelling most likely meant: the only one it begins (a shortened name: '4bit'
    for '4bit_nc'), else a close misspelling (difflib, cutoff 0.75: 'sm_90', 'SOA'); None for none (another GPU)."""
    import difflib  # the error path only

    g = str(given).strip().lower()
    starts = [v for v in values if g and v.startswith(g)]
    if len(starts) == 1:
        return starts[0]
    close = difflib.get_close_matches(g, values, n=1, cutoff=0.75)
    return close[0] if close else None


class _Token(str, Enum):
    """A string enum whose value is the one spelling used everywhere (CLI, files, logs)."""

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, given: Any, field: str) -> "_Token":
        if isinstance(given, cls):
            return given
        for member in cls:
            if member.value == given:
                return member
        values = [m.value for m in cls]
        close = _close_value(given, values)
        hint = f"did you mean {close!r}?" if close else f"pass one of them as written, e.g. {field}={values[0]!r}"
        raise SpecError([Reason(field, given, values, hint)], cls._unknown_title())

    @classmethod
    def _unknown_title(cls) -> str:  # the error's first line for a value of none of the members
        return "invalid TurboQuant spec"


class Layout(_Token):
    AOS = "aos"  # array of structures: K data | K norm | V data | V scale | V zero in each slot
    SOA = "soa"  # per block: data region, then fp16 metadata region [H][F][block_size]


class KeyCodec(_Token):
    LLOYD_MAX = "lloyd_max"  # rotation + Lloyd-Max scalar codebook + fp16 norm
    FP8_E4M3FN = "fp8_e4m3fn"  # OCP E4M3 (Triton float8e4nv), max 448
    FP8_E4M3FNUZ = "fp8_e4m3fnuz"  # AMD MI300 native (Triton float8e4b8), max 240
    FP8_E4B15 = "fp8_e4b15"  # Triton float8e4b15 emulation for sm80/sm86, stores at most 1.75

    @property
    def is_fp8(self) -> bool:
        return self is not KeyCodec.LLOYD_MAX


#: largest finite magnitude of each fp8 key format (values beyond it saturate)
FP8_MAX = {
    KeyCodec.FP8_E4M3FN: 448.0,
    KeyCodec.FP8_E4M3FNUZ: 240.0,
    # e4b15 decodes 0x7F as 1.875, but Triton's satfinite conversion (measured on the H200) never
    # emits it: values saturate to 1.75, so 1.75 is what a store can hold
    KeyCodec.FP8_E4B15: 1.75,
}


class Rotation(_Token):
    HADAMARD = "hadamard"  # Sylvester Hadamard / sqrt(D), symmetric; D a power of two (vLLM's)
    RHT = "rht"  # Hadamard · diag(seeded ±1): no adversarial inputs; D a power of two
    ORTHOGONAL = "orthogonal"  # seeded random orthogonal matrix (any D), applied as a GEMM
    NONE = "none"  # fp8 keys only: cast as they are (vLLM's k8v4)


class Backend(_Token):
    TRITON = "triton"
    CUDA = "cuda"
    HIP = "hip"
    REFERENCE = "reference"


class Vendor(_Token):
    NVIDIA = "nvidia"
    AMD = "amd"
    CPU = "cpu"


@dataclass(frozen=True, slots=True)
class TargetInfo:
    name: str
    vendor: Vendor
    arch: int | str  # compute capability (80) or gfx name
    warp_size: int
    fp8: tuple[KeyCodec, ...]  # fp8 key formats the hardware converts natively (or Triton emulates)


class Target(_Token):
    SM80 = "sm80"
    SM86 = "sm86"
    SM89 = "sm89"
    SM90 = "sm90"
    GFX90A = "gfx90a"
    GFX942 = "gfx942"
    GFX950 = "gfx950"
    CPU = "cpu"

    @classmethod
    def _unknown_title(cls) -> str:
        return "unknown target"

    @property
    def info(self) -> TargetInfo:
        return TARGETS[self]


_E4NV, _FNUZ, _B15 = KeyCodec.FP8_E4M3FN, KeyCodec.FP8_E4M3FNUZ, KeyCodec.FP8_E4B15
TARGETS: dict[Target, TargetInfo] = {
    Target.SM80: TargetInfo("sm80", Vendor.NVIDIA, 80, 32, (_B15,)),  # no e4nv before sm89
    Target.SM86: TargetInfo("sm86", Vendor.NVIDIA, 86, 32, (_B15,)),
    Target.SM89: TargetInfo("sm89", Vendor.NVIDIA, 89, 32, (_E4NV, _B15)),
    Target.SM90: TargetInfo("sm90", Vendor.NVIDIA, 90, 32, (_E4NV, _B15)),
    Target.GFX90A: TargetInfo("gfx90a", Vendor.AMD, "gfx90a", 64, ()),  # MI200: no fp8
    Target.GFX942: TargetInfo("gfx942", Vendor.AMD, "gfx942", 64, (_FNUZ,)),  # MI300: fnuz
    Target.GFX950: TargetInfo("gfx950", Vendor.AMD, "gfx950", 64, (_E4NV,)),  # MI350: OCP
    Target.CPU: TargetInfo("cpu", Vendor.CPU, "cpu", 1, (_E4NV, _FNUZ, _B15)),  # reference: all
}

#: the fp8 key format each target stores natively (used when a preset says "fp8")
NATIVE_FP8: dict[Target, KeyCodec | None] = {
    Target.SM80: _B15,
    Target.SM86: _B15,
    Target.SM89: _E4NV,
    Target.SM90: _E4NV,
    Target.GFX90A: None,
    Target.GFX942: _FNUZ,
    Target.GFX950: _E4NV,
    Target.CPU: _E4NV,
}

HEAD_DIMS_TESTED = (64, 96, 128, 256)
BLOCK_SIZES = (16, 32, 64, 128)
LLOYD_MAX_BITS = (2, 3, 4)
VALUE_BITS = (2, 3, 4, 8)


@dataclass(frozen=True, slots=True)
class Reason:
    """One failed check: what field, what was given, what is allowed, what to try."""

    field: str
    given: Any
    allowed: Any
    hint: str = ""

    def __str__(self) -> str:
        allowed = self.allowed
        if isinstance(allowed, (list, tuple)):
            allowed = "one of " + ", ".join(str(a) for a in allowed)
        text = f"{self.field}={self.given!r} not supported: {allowed}."
        return f"{text} {self.hint}" if self.hint else text


class SpecError(ValueError):
    """An invalid spec, target or request; carries every reason."""

    def __init__(self, reasons: Iterable[Reason], what: str = "invalid TurboQuant spec"):
        self.reasons = list(reasons)
        lines = "\n".join(f"  - {r}" for r in self.reasons)
        super().__init__(f"{what} ({len(self.reasons)} problem(s)):\n{lines}")


def is_power_of_two(n: int) -> bool:
    return n > 0 and (n & (n - 1)) == 0


def pow2_at_least(n: int) -> int:
    """The least power of two >= n (1 for n <= 1)."""
    return 1 << max(0, (n - 1).bit_length())


def rotation_at(rotation: "Rotation", head_dim: int) -> "Rotation":
    """The rotation a spec with ``rotation`` takes at ``head_dim``: a Hadamard-type one becomes the orthogonal one where
    head_dim is no power of two (a Sylvester Hadamard matrix needs one; the slot bytes are the same)."""
    if rotation in (Rotation.HADAMARD, Rotation.RHT) and not is_power_of_two(head_dim):
        return Rotation.ORTHOGONAL
    return rotation


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    key_codec: KeyCodec
    key_bits: int
    value_bits: int
    norm_correction: bool
    vllm_ppl_cost: str  # published by vLLM, for the docs


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("k8v4", KeyCodec.FP8_E4M3FN, 8, 4, False, "+1.17 %"),
        Preset("4bit_nc", KeyCodec.LLOYD_MAX, 4, 4, True, "+2.71 %"),
        Preset("k3v4_nc", KeyCodec.LLOYD_MAX, 3, 4, True, "+10.63 %"),
        Preset("3bit_nc", KeyCodec.LLOYD_MAX, 3, 3, True, "+20.59 %"),
    )
}
PRESET_PREFIX = "turboquant_"


def resolve_preset(name: str) -> Preset:
    key = name[len(PRESET_PREFIX):] if name.startswith(PRESET_PREFIX) else name
    if key not in PRESETS:
        close = _close_value(key, list(PRESETS))
        hint = f"the '{PRESET_PREFIX}' prefix is optional"
        raise SpecError([Reason("preset", name, list(PRESETS), f"did you mean {close!r}? ({hint})" if close else hint)],
                        "unknown preset")
    return PRESETS[key]


@dataclass(frozen=True, slots=True, kw_only=True)
class LayoutSpec:
    """One TurboQuant cache format. Derived numbers (bytes, offsets) live in tqgen.layout."""

    layout: Layout = Layout.AOS
    head_dim: int = 128
    block_size: int = 16
    key_codec: KeyCodec = KeyCodec.LLOYD_MAX
    key_bits: int = 4  # 8 for fp8 codecs
    value_bits: int = 4
    norm_correction: bool = True
    fold_norm: bool = False  # store ‖k‖/‖c[idx]‖ so decode skips the per-token renormalisation
    rotation: Rotation | None = None  # None: hadamard for lloyd_max, none for fp8 (fp8 may rotate too)
    rotation_seed: int = 0

    def __post_init__(self) -> None:
        reasons: list[Reason] = []
        for name, enum in (("layout", Layout), ("key_codec", KeyCodec), ("rotation", Rotation)):
            value = getattr(self, name)
            if value is None:
                continue
            try:
                object.__setattr__(self, name, enum.parse(value, name))
            except SpecError as e:
                reasons.extend(e.reasons)
        if self.rotation is None and isinstance(self.key_codec, KeyCodec):
            object.__setattr__(self, "rotation", Rotation.NONE if self.key_codec.is_fp8 else Rotation.HADAMARD)
        reasons += self.check()  # every reason at once, also when an enum field failed to parse
        if reasons:
            raise SpecError(reasons)

    # ----------------------------------------------------------------- checks
    def check(self) -> list[Reason]:
        """Every reason this spec is invalid (empty when valid)."""
        r: list[Reason] = []
        if not isinstance(self.head_dim, int) or self.head_dim < 8 or self.head_dim % 8:
            r.append(Reason("head_dim", self.head_dim, "a multiple of 8, at least 8",
                            "bit packing needs head_dim·bits to fill whole bytes; e.g. --head-dim 128"))
        if self.block_size not in BLOCK_SIZES:
            r.append(Reason("block_size", self.block_size, list(BLOCK_SIZES), "Try --block-size 16."))
        if self.key_codec is KeyCodec.LLOYD_MAX:
            if self.key_bits not in LLOYD_MAX_BITS:
                r.append(Reason("key_bits", self.key_bits, list(LLOYD_MAX_BITS),
                                "lloyd_max keys use 2-4 bit codes (key_bits=3, --key-bits 3); for 8-bit keys pick "
                                "an fp8 key_codec"))
            if self.rotation is Rotation.NONE:
                r.append(Reason("rotation", "none", ["hadamard", "rht", "orthogonal"],
                                "lloyd_max keys must be rotated (the codebook assumes N(0, 1/D) coordinates)"))
        elif isinstance(self.key_codec, KeyCodec):  # an unparsable codec is already a reason
            if self.key_bits != 8:
                r.append(Reason("key_bits", self.key_bits, [8], f"{self.key_codec} keys are one byte each"
                                + (f"; {self.key_bits}-bit keys are Lloyd-Max codes: key_codec='lloyd_max' "
                                   "(--key-codec lloyd_max)" if self.key_bits in LLOYD_MAX_BITS else "")))
            if self.norm_correction:
                r.append(Reason("norm_correction", True, [False], "fp8 keys store no norm; use norm_correction=False"))
            if self.fold_norm:
                r.append(Reason("fold_norm", True, [False], "fp8 keys store no norm to fold into"))
        if self.value_bits not in VALUE_BITS:
            r.append(Reason("value_bits", self.value_bits, list(VALUE_BITS), "Try value_bits=4."))
        if self.fold_norm and not self.norm_correction and self.key_codec is KeyCodec.LLOYD_MAX:
            r.append(Reason("fold_norm", True, [False],
                            "folding stores ‖k‖/‖c[idx]‖, which is norm correction; set norm_correction=True"))
        if (self.rotation in (Rotation.HADAMARD, Rotation.RHT) and isinstance(self.head_dim, int)
                and not is_power_of_two(self.head_dim)):
            r.append(Reason("rotation", str(self.rotation), ["orthogonal"],
                            f"a Sylvester Hadamard matrix needs head_dim a power of two (given {self.head_dim}); "
                            "use rotation='orthogonal' (--rotation orthogonal), a seeded orthogonal matrix"))
        if not isinstance(self.rotation_seed, int) or not 0 <= self.rotation_seed < 2**63:
            r.append(Reason("rotation_seed", self.rotation_seed, "an integer in [0, 2**63)"))
        return r

    # ------------------------------------------------------------- presets
    @classmethod
    def from_preset(cls, name: str, *, layout: str | Layout = "aos", head_dim: int = 128,
                    block_size: int = 16, **overrides: Any) -> "LayoutSpec":
        """vLLM's presets; AoS stores the raw norm (fold off), SoA folds (vLLM defaults)."""
        p = resolve_preset(name)
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - fields)
        if unknown:
            raise SpecError([Reason("override", u, sorted(fields)) for u in unknown], "unknown LayoutSpec field")
        # raw tokens pass through (str enums compare equal to their token): an unknown layout or codec
        # is reported by LayoutSpec together with every other reason
        codec = overrides.get("key_codec", p.key_codec)
        fp8 = codec != KeyCodec.LLOYD_MAX
        nc = overrides.get("norm_correction", p.norm_correction)
        kw: dict[str, Any] = dict(
            layout=layout, head_dim=head_dim, block_size=block_size, key_codec=codec,
            key_bits=8 if fp8 else p.key_bits, value_bits=p.value_bits,
            norm_correction=nc and not fp8,
            fold_norm=layout == Layout.SOA and nc and not fp8,
        )
        kw.update(overrides)
        return cls(**kw)

    def replace(self, **changes: Any) -> "LayoutSpec":
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------ naming
    @property
    def renorm_at_decode(self) -> bool:
        """Whether decode divides each Lloyd-Max key's centroids by ‖c[idx]‖ itself (norm correction not folded into
        the stored norm at store time; fp8 keys have none)."""
        return self.key_codec is KeyCodec.LLOYD_MAX and self.norm_correction and not self.fold_norm

    @property
    def preset_name(self) -> str | None:
        """The preset this spec equals in its quantizer fields, if any."""
        for p in PRESETS.values():
            if (p.key_codec.is_fp8 == self.key_codec.is_fp8 and (self.key_codec.is_fp8 or p.key_bits == self.key_bits)
                    and p.value_bits == self.value_bits and p.norm_correction == self.norm_correction):
                return p.name
        return None

    @property
    def token(self) -> str:
        """Readable identity in a fixed field order, e.g. ``soa-k4nc-v4-fold-hadamard-d128-b16``."""
        k = f"k{str(self.key_codec).replace('_', '')}" if self.key_codec.is_fp8 else f"k{self.key_bits}"
        parts = [str(self.layout), k + ("nc" if self.norm_correction else ""), f"v{self.value_bits}"]
        if self.fold_norm:
            parts.append("fold")
        if self.rotation is not Rotation.NONE:
            parts.append(str(self.rotation) + (f"{self.rotation_seed}" if self.rotation is not Rotation.HADAMARD else ""))
        parts += [f"d{self.head_dim}", f"b{self.block_size}"]
        return "-".join(parts)

    def to_dict(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.value if isinstance(v, Enum) else v
        return out


def parse_target(name: str | Target) -> Target:
    return Target.parse(name, "target")  # type: ignore[return-value]


def check_target(spec: LayoutSpec, target: str | Target) -> list[Reason]:
    """Reasons the *format* cannot be held on this target (independent of backend)."""
    t = parse_target(target)
    r: list[Reason] = []
    if spec.key_codec.is_fp8 and spec.key_codec not in t.info.fp8:
        native = NATIVE_FP8[t]
        hint = (f"use key_codec={native} (--key-codec {native}) on {t}" if native
                else f"{t} has no fp8 conversion; use a lloyd_max preset such as 4bit_nc")
        r.append(Reason("key_codec", str(spec.key_codec), [str(c) for c in t.info.fp8] or "no fp8 format", hint))
    return r
