"""One case runner for every backend's tests: inputs, the oracle, and the comparison rules.

Store comparison rule (why not plain byte equality): V data, V scale, V zero and fp8 keys are
elementwise IEEE operations and must be byte-identical. Lloyd-Max key indices come from a
rotation whose fp32 summation order differs between backends (reference: a GEMM; Triton: a
fast Walsh-Hadamard transform; |Δy| ≤ log2(D)·2^-24·‖x̂‖₁/√D < 1e-6 for unit x̂), so an index may
differ by one where the rotated coordinate lies within ``FLIP_DELTA`` = 1e-5 of the decision
midpoint (``DENSE_FLIP_DELTA`` for the orthogonal rotation, whose C++ store multiplies by two bf16 parts of Πᵀ); the
stored fp16 norm may differ by one fp16 ulp (its fp32 sum of squares is ordered
differently) — for a folded slot with such a flip, one ulp from the fold of the codes it stored.
Rotated fp8 keys (fp8 of y = k·Πᵀ) are likewise summed in a different order: a byte may be the
neighbouring fp8 value where y lies within ``FP8_TIE_REL``·(|midpoint| + ‖k‖/√D) of the two values'
midpoint (the summation error is absolute: near zero, fp8's fine subnormal steps tie more often; for huge keys the
band can be wider than the gap between two values, which are then both explained).
A NaN (fp16 field or fp8 key) matches any NaN, and an fp8 +0 matches -0: their sign and payload
carry nothing (the CPU rounds NaN to fp16 0x7e00 where a GPU conversion may give 0x7fff; torch's
e4m3fn cast keeps the sign bit, 0xff, where the hardware conversion gives 0x7f). Anything else is
a mismatch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from . import reference as ref
from .codebook import lloyd_max
from .ir import LayoutSpec, Rotation, rotation_at
from .layout import derive_layout

FLIP_DELTA = 1e-5
# The orthogonal (dense) rotation's C++ store takes y = x·Πᵀ from two bf16 parts of Πᵀ (b0 + b1, each part within
# 2^-8 of its rest: |Π - b0 - b1| <= 2^-16·|Π|), so |Δy_j| <= 2^-16·Σ|x_i||Π_ji| <= 2^-16·‖x‖·‖Π_j‖ = 2^-16 for the unit
# x (Cauchy-Schwarz); fp16 keys enter as two parts a0 + a1 (|a1| <= 2^-8·|x|) whose a1·b1 it drops: 2^-16 more; the
# fp32 sums' rounding (ten accumulations of 2^-23 at most, ~1.2e-6) and the reference's own below that:
# 2^-15 + 2e-6 < 4e-5
DENSE_FLIP_DELTA = 4e-5
FP8_TIE_REL = 1e-5  # rotated fp8 keys: a byte may round the other way within this relative distance of a tie


@dataclass
class StoreDiff:
    slots: int = 0
    identical_slots: int = 0
    index_flips: int = 0
    max_norm_ulp: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        return (f"{self.identical_slots}/{self.slots} slots byte-identical, {self.index_flips} explained index "
                f"flip(s), max norm diff {self.max_norm_ulp} fp16 ulp" + (f"; PROBLEMS: {self.problems[:5]}"
                                                                           if self.problems else ""))


def _fp16_ulps(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    ia = a.view(torch.int16).to(torch.int32)
    ib = b.view(torch.int16).to(torch.int32)
    # map sign-magnitude to a monotonic integer line
    ia = torch.where(ia < 0, -32768 - ia, ia)
    ib = torch.where(ib < 0, -32768 - ib, ib)
    return torch.where(torch.isnan(a) & torch.isnan(b), 0, (ia - ib).abs())


def _fp8_ranks(codec, device) -> torch.Tensor:
    """Each fp8 byte's position among the format's distinct finite values in increasing order (+0 and -0 one value,
    NaN bytes -1): two bytes are neighbours where their ranks differ by one."""
    vals = ref._fp8_decode(torch.arange(256, dtype=torch.int32).to(torch.uint8), codec).double()
    grid = torch.unique(vals[torch.isfinite(vals)])  # sorted; -0.0 == 0.0
    return torch.where(torch.isfinite(vals), torch.searchsorted(grid, vals), torch.full_like(vals, -1).long()).to(device)


def compare_store(spec: LayoutSpec, got: torch.Tensor, want: torch.Tensor, key: torch.Tensor,
                  slot_mapping: torch.Tensor) -> StoreDiff:
    """Compare two caches written from the same (key, slot_mapping); see the module docstring."""
    out = StoreDiff()
    bl = derive_layout(spec)
    h = got.shape[2]
    keep = slot_mapping >= 0
    slots = slot_mapping[keep].to(torch.int64)
    m = slots.shape[0]
    if m == 0:
        return out
    blk = (slots // spec.block_size)[:, None].expand(m, h).reshape(-1)
    t = (slots % spec.block_size)[:, None].expand(m, h).reshape(-1)
    hh = torch.arange(h, device=got.device)[None, :].expand(m, h).reshape(-1)
    fg = ref._read_fields(bl, got, blk, t, hh)
    fw = ref._read_fields(bl, want, blk, t, hh)
    out.slots = m * h
    same = torch.ones(m * h, dtype=torch.bool, device=got.device)
    for name in ("v_data", "v_scale", "v_zero"):
        eq = (fg[name].view(torch.uint8).reshape(m * h, -1) == fw[name].view(torch.uint8).reshape(m * h, -1)).all(-1)
        if name != "v_data":
            eq |= (torch.isnan(fg[name]) & torch.isnan(fw[name])).reshape(m * h)
        if not bool(eq.all()):
            out.problems.append(f"{name} differs in {int((~eq).sum())} slot(s)")
        same &= eq
    if spec.key_codec.is_fp8:
        dg, dw = ref._fp8_decode(fg["k_data"], spec.key_codec), ref._fp8_decode(fw["k_data"], spec.key_codec)
        nan_both = torch.isnan(dg) & torch.isnan(dw)  # 0x7f and 0xff are both NaN
        diff = (fg["k_data"] != fw["k_data"]) & ~nan_both & ~(dg == dw)  # and +0 / -0 are both zero
        if spec.rotation is not Rotation.NONE and bool(diff.any()):
            # rotated fp8 keys: y = k·Πᵀ is summed in a different order (Walsh-Hadamard vs GEMM), so a byte
            # may round the other way where y lies within FP8_TIE_REL of the midpoint of two fp8 neighbours
            rows = diff.any(-1)
            kk = key[keep].reshape(-1, spec.head_dim)[rows].double()
            y = kk @ ref.rotation(spec, got.device).double().T
            mid = (dg[rows].double() + dw[rows].double()) / 2
            # neighbours: adjacent values of the format (not adjacent bytes: fnuz has no -0, so 0x00's negative
            # neighbour is 0x81)
            rank = _fp8_ranks(spec.key_codec, got.device)
            step = (rank[fg["k_data"][rows].long()] - rank[fw["k_data"][rows].long()]).abs() == 1
            # the summation error is absolute (~2^-24·‖k‖₁/√D per element), so near zero the band is ‖k‖/√D-wide
            tol = FP8_TIE_REL * (mid.abs() + kk.norm(dim=-1, keepdim=True) / math.sqrt(spec.head_dim))
            # where the band is wider than the two values' gap (huge keys: ±1e30 entries cancel to an exact 0 in one
            # order and to a 1e22 rounding residue, saturated, in another) any two values inside it are explained
            wide = (dg[rows].double() - dw[rows].double()).abs() <= 2 * tol
            near = (step | wide) & ((y - mid).abs() <= tol)
            d = diff[rows]
            out.index_flips = int((d & near).sum())
            if bool((d & ~near).any()):
                bad = d & ~near
                out.problems.append(f"fp8 k_data: {int(bad.sum())} byte(s) differ away from a rounding tie (worst "
                                    f"|y - tie| / band {float(((y - mid).abs() / tol)[bad].max()):.3g}, at |y| "
                                    f"{float(y.abs()[bad].min()):.3g}..{float(y.abs()[bad].max()):.3g}, "
                                    f"{int((bad & ~step).sum())} not neighbours)")
        elif bool(diff.any()):
            out.problems.append(f"fp8 k_data differs in {int(diff.any(-1).sum())} slot(s)")
        same &= ~diff.any(-1)
    else:
        cg = ref.unpack_bits(fg["k_data"], spec.key_bits, spec.head_dim)
        cw = ref.unpack_bits(fw["k_data"], spec.key_bits, spec.head_dim)
        diff = cg != cw
        flipped_slot = diff.any(-1)
        if bool(flipped_slot.any()):
            # recompute the rotated coordinates in float64 for the slots that differ
            kk = key[keep].reshape(-1, spec.head_dim)[flipped_slot].double()
            x = kk / (kk.norm(dim=-1, keepdim=True) + ref.NORM_EPS)
            y = x @ ref.rotation(spec, kk.device).double().T
            mid = torch.from_numpy(lloyd_max(spec.head_dim, spec.key_bits).midpoints.copy()).double().to(kk.device)
            d = diff[flipped_slot]
            lo = torch.minimum(cg[flipped_slot], cw[flipped_slot])
            band = DENSE_FLIP_DELTA if spec.rotation is Rotation.ORTHOGONAL else FLIP_DELTA
            near = ((cg[flipped_slot] - cw[flipped_slot]).abs() == 1) & \
                   ((y - mid[lo.clamp(max=mid.numel() - 1)]).abs() <= band)
            bad = d & ~near
            out.index_flips = int((d & near).sum())
            if bool(bad.any()):
                out.problems.append(f"k_data: {int(bad.sum())} index difference(s) not explained by a near-midpoint "
                                    "rotation rounding")
        ulps = _fp16_ulps(fg["k_norm"], fw["k_norm"])
        if spec.fold_norm and bool(flipped_slot.any()):
            # a flipped index changes ‖c[idx]‖ and so the folded norm: check it against the fold of the
            # codes actually stored, within one fp16 ulp
            c = torch.from_numpy(lloyd_max(spec.head_dim, spec.key_bits).centroids.copy()).to(got.device)
            kk = key[keep].reshape(-1, spec.head_dim)[flipped_slot].float()
            n = torch.sqrt((kk * kk).sum(-1))
            cv = c[cg[flipped_slot]]
            own = ref._to_fp16(n / torch.sqrt((cv * cv).sum(-1) + ref.CNORM_EPS))
            ulps = ulps.clone()
            ulps[flipped_slot] = _fp16_ulps(fg["k_norm"][flipped_slot], own)
        allowed = 1
        out.max_norm_ulp = int(ulps.max())
        if bool((ulps > allowed).any()):
            out.problems.append(f"k_norm differs by more than the allowed fp16 ulps in {int((ulps > allowed).sum())} "
                                f"slot(s) (max {out.max_norm_ulp})")
        same &= ~flipped_slot & (ulps == 0)
    out.identical_slots = int(same.sum())
    return out


def special_store_rows(d: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """[16, d] keys and values with the store's edge cases in rows 0-9, each row next to ordinary ones (10-15; every
    backend's store tests: compare_store's rule against the reference). As tokens of 2 heads, token t holds rows 2t
    and 2t + 1: a padding slot belongs on token 5 or later."""
    big = 1e30 if dtype == torch.bfloat16 else 6e4  # bf16: squares overflow fp32 (the norm is inf)
    nan, inf = float("nan"), float("inf")
    g = torch.Generator().manual_seed(7)
    k = torch.randn(16, d, generator=g) * 2.0
    v = torch.randn(16, d, generator=g)
    k[0] = 0.0                                    # zero key: norm 0, every code at the middle
    v[0] = 0.0                                    # constant value: span 0, scale 1e-8
    k[1, 5] = nan                                 # NaN key: codes 0, NaN norm
    v[2, 7] = nan                                 # NaN value: codes 0, NaN metadata
    k[3, 9] = inf                                 # inf key: codes 0, norm saturated
    v[4, 3], v[4, 4] = inf, -inf                  # ±inf values count as ±65504
    k[5] = big * torch.sign(torch.randn(d, generator=g))  # huge finite keys
    v[6, :4] = torch.tensor([1e5, -1e5, 7e4, -3e4]) if dtype == torch.bfloat16 else v[6, :4]  # beyond ±65504
    k[7] = torch.tensor([500.0, -449.0, 448.0, 2.0**-9, 3 * 2.0**-10, -2.0**-7, -0.0, 0.0] * (d // 8))  # fp8 edges
    k[8] = -0.0
    v[9] = torch.arange(d, dtype=torch.float32) * 0.5 - 7.0  # half-steps of a 0.5 grid
    return k.to(dtype), v.to(dtype)


def special_store_diff(store, spec: LayoutSpec, dtype: torch.dtype, device="cpu", num_kv_heads: int = 2) -> StoreDiff:
    """``store(key, value, cache, slots)`` of ``special_store_rows`` (8 tokens x 2 heads, one padding slot, shuffled
    slots in 4 blocks) against the reference store of the same rows, by ``compare_store``."""
    k, v = special_store_rows(spec.head_dim, dtype)
    n = k.shape[0] // num_kv_heads
    key, value = k.reshape(n, num_kv_heads, -1).to(device), v.reshape(n, num_kv_heads, -1).to(device)
    slots = torch.randperm(4 * spec.block_size, generator=torch.Generator().manual_seed(1))[:n].to(torch.int32)
    slots[-1] = -1  # a padding token: the last, whose rows are ordinary ones (every special row is stored)
    slots = slots.to(device)
    got, want = ref.allocate(spec, 4, num_kv_heads, device), ref.allocate(spec, 4, num_kv_heads, device)
    store(key, value, got, slots)
    ref.store(spec, key, value, want, slots)
    return compare_store(spec, got, want, key, slots)


def prefill_batch_case(spec: LayoutSpec, store, num_kv_heads: int, num_q_heads: int, ctxs: list[int],
                       news: list[int], *, blocks: int, device="cpu", seed: int = 0) -> dict:
    """A varlen prefill batch: sequence i owns ``blocks`` pages (rows of ``block_table``), its history of ``ctxs[i]``
    random tokens stored through ``store(key, value, cache, slots)`` (values = keys / 2), then ``news[i]`` new tokens:
    query / key / value of all of them concatenated, their slots, ``seq_lens`` (history + new) and
    ``query_start_loc``; the cache's remaining slots zero."""
    g = torch.Generator(device=device).manual_seed(seed)
    bs, b, d = spec.block_size, len(ctxs), spec.head_dim
    cache = ref.allocate(spec, blocks * b, num_kv_heads, device)
    slots = []
    for i, (c, n) in enumerate(zip(ctxs, news)):
        hist = torch.randn(c, num_kv_heads, d, generator=g, device=device).to(torch.bfloat16)
        base = i * blocks * bs
        store(hist, hist * 0.5, cache, torch.arange(base, base + c, dtype=torch.int32, device=device))
        slots.append(torch.arange(base + c, base + c + n, device=device))
    t = sum(news)
    q, k, v = (torch.randn(t, h, d, generator=g, device=device).to(torch.bfloat16)
               for h in (num_q_heads, num_kv_heads, num_kv_heads))
    qsl = [0]
    for n in news:
        qsl.append(qsl[-1] + n)
    return dict(cache=cache, block_table=torch.arange(blocks * b, dtype=torch.int32, device=device).reshape(b, blocks),
                query=q, key=k, value=v, slot_mapping=torch.cat(slots).to(torch.int32),
                seq_lens=torch.tensor([c + n for c, n in zip(ctxs, news)], dtype=torch.int32, device=device),
                query_start_loc=torch.tensor(qsl, dtype=torch.int32, device=device))


@dataclass
class Case:
    """Random inputs for one decode/store case on a shuffled paged cache."""

    spec: LayoutSpec
    seq_lens: list[int]
    num_kv_heads: int
    gqa: int
    dtype: torch.dtype = torch.bfloat16
    padding_slots: int = 3  # extra tokens with slot -1
    seed: int = 0
    extra_blocks: int = 2

    def build(self, device) -> dict:
        """key, value [N, Hk, D], slot_mapping [N] (shuffled rows, padding rows -1), block_table, query, sinks,
        seq_lens, num_blocks; token_seq / token_pos [N]: each row's sequence and position (-1 / 0 for padding)."""
        g = torch.Generator(device="cpu").manual_seed(self.seed)
        bs, h, d = self.spec.block_size, self.num_kv_heads, self.spec.head_dim
        nblk = [math.ceil(n / bs) for n in self.seq_lens]
        total_blocks = sum(nblk) + self.extra_blocks
        perm = torch.randperm(total_blocks, generator=g)
        width = max(1, max(nblk) if nblk else 1)
        block_table = torch.zeros(len(self.seq_lens), width, dtype=torch.int32)
        pad = self.padding_slots
        slots, seqs, poss, used = [], [], [], 0
        for i, (n, nb) in enumerate(zip(self.seq_lens, nblk)):
            block_table[i, :nb] = perm[used:used + nb].to(torch.int32)
            used += nb
            pos = torch.arange(n)
            slots.append(block_table[i, pos // bs].long() * bs + pos % bs)
            seqs.append(torch.full((n,), i, dtype=torch.long))
            poss.append(pos)
        slot = torch.cat(slots + [torch.full((pad,), -1, dtype=torch.long)])
        order = torch.randperm(slot.numel(), generator=g)
        slot = slot[order].to(torch.int32)
        token_seq = torch.cat(seqs + [torch.full((pad,), -1, dtype=torch.long)])[order]
        token_pos = torch.cat(poss + [torch.zeros(pad, dtype=torch.long)])[order]
        n = slot.numel()
        key = (torch.randn(n, h, d, generator=g) * 2.0).to(self.dtype)
        value = torch.randn(n, h, d, generator=g).to(self.dtype)
        b = len(self.seq_lens)
        query = torch.randn(b, h * self.gqa, d, generator=g).to(self.dtype)
        sinks = torch.randn(h * self.gqa, generator=g)
        return {k: v.to(device) for k, v in dict(
            key=key, value=value, slot_mapping=slot, block_table=block_table, query=query, sinks=sinks,
            seq_lens=torch.tensor(self.seq_lens, dtype=torch.int32), token_seq=token_seq,
            token_pos=token_pos).items()} | {"num_blocks": total_blocks}


def width_spec(layout: str, key_bits: int, value_bits: int, head_dim: int = 128) -> LayoutSpec:
    """A spec by its widths, as the tests and bench/dbg sweeps name widths no preset has: ``key_bits`` 8 means fp8
    e4m3fn keys (no norm), 2-4 norm-corrected Lloyd-Max keys, folded on SoA and not on AoS (the presets' defaults),
    rotated by Hadamard (the orthogonal rotation where head_dim is no power of two)."""
    if key_bits == 8:
        return LayoutSpec(layout=layout, key_codec="fp8_e4m3fn", key_bits=8, value_bits=value_bits, head_dim=head_dim,
                          norm_correction=False)
    return LayoutSpec(layout=layout, key_bits=key_bits, value_bits=value_bits, head_dim=head_dim,
                      fold_norm=layout == "soa", rotation=rotation_at(Rotation.HADAMARD, head_dim))


def rel_err(got: torch.Tensor, want: torch.Tensor) -> float:
    """max |got - want| / max |want| (0 when both are zero)."""
    den = float(want.abs().max()) if want.numel() else 0.0
    num = float((got.float() - want.float()).abs().max()) if want.numel() else 0.0
    return num / den if den > 0 else num


#: decode tolerance (max error relative to max |out|): fp16 dots round q_rot, centroids and p·scale to
#: 11 significant bits (2^-11 ≈ 4.9e-4 each, a few per term) and the output to fp16; bf16 keeps 8 bits
#: (2^-8 ≈ 3.9e-3). Errors average over the softmax, so 8x the per-term rounding bounds them.
DECODE_TOL = {torch.float16: 8 * 2**-11, torch.bfloat16: 8 * 2**-8}


def check_decode(kern, spec: LayoutSpec, case: dict, cache: torch.Tensor, window: int, *,
                 num_splits: int | None = None, what: str = "", balanced: bool | None = None) -> list[torch.Tensor]:
    """``kern.decode`` of a ``Case``'s query and tables over ``cache`` against the reference decode, plain and with
    the case's sinks and a sliding ``window``: finite and within DECODE_TOL of the query dtype (assertions naming
    ``what``). ``balanced``: passed to the decode when not None. Returns the two outputs."""
    dt, outs = case["query"].dtype, []
    kw = {} if balanced is None else {"balanced": balanced}
    for sinks, win in ((None, None), (case["sinks"], window)):
        out = kern.decode(case["query"], cache, case["block_table"], case["seq_lens"], sinks=sinks,
                          sliding_window=win, num_splits=num_splits, **kw)
        exp = ref.decode(spec, case["query"], cache, case["block_table"], case["seq_lens"], sinks=sinks,
                         sliding_window=win)
        assert torch.isfinite(out).all(), f"{what}: non-finite decode output (sinks={sinks is not None})"
        err = rel_err(out, exp)
        assert err <= DECODE_TOL[dt], f"{what}: decode rel err {err:.2e} > {DECODE_TOL[dt]:.2e} (sinks={sinks is not None})"
        outs.append(out)
    return outs
