"""The C++ lowering without a GPU: eligibility reasons, spelling tables, constants, addressing, the CLI."""

import dataclasses
import struct

import numpy as np
import pytest

from tqgen.build import preset_spec_for_target
from tqgen.cli import main
from tqgen.codebook import lloyd_max, lut_words
from tqgen.ir import LayoutSpec, Rotation, SpecError, Target, rotation_at
from tqgen.layout import derive_layout, field_alignment
from tqgen.lower_cuda import (HEAD_DIMS, KERNEL_NAMES, CudaOptions, _access_width, cuda_options,
                              dense_store_units, store_chunk, store_elems, store_lanes,
                              cuda_reasons, layout_params, line_conflicts, line_reads, line_swizzle, make_variant, render_cuda)
from tqgen.variants import Request


def test_reasons_name_what_is_refused():
    d72 = LayoutSpec.from_preset("4bit_nc", head_dim=72, rotation="orthogonal")
    assert {r.field for r in cuda_reasons(d72, Target.SM90)} == {"head_dim"}
    assert any(r.field == "kind" for r in cuda_reasons(LayoutSpec.from_preset("4bit_nc"), Target.GFX942, "portable"))
    with pytest.raises(SpecError, match="head_dim"):
        make_variant(d72, "sm90")
    # head_dim 80 (Phi-2's): every kernel (session 54: the decode; 55: the store and rows dequant, rows of 5 lanes of
    # 16 elements, 3-bit codes in 16-element chunks of 6 bytes); the dense rotation's 24 rows a block (4 warps) in 2
    # m-tiles x 2 groups of 5 n-tiles; the lane dequant (D/32 elements a lane) refuses, naming the rows kernel
    d80 = LayoutSpec.from_preset("4bit_nc", head_dim=80, rotation="orthogonal")
    assert cuda_reasons(d80, Target.SM90) == []
    assert (store_lanes(80), store_elems(80), store_lanes(96), store_elems(96)) == (5, 16, 3, 32)
    assert [store_chunk(b, 16) for b in (2, 3, 4, 8)] == [16, 16, 8, 8] and store_chunk(3) == 32
    assert dense_store_units(80, 4) == (2, 2) and dense_store_units(80, 8) is None
    src = render_cuda(make_variant(d80, "sm90"))
    assert all(f"{n}(" in src for pair in KERNEL_NAMES.values() for n in pair)
    assert "#define TQ_SR 5 " in src and "#define TQ_EL 16 " in src and "__launch_bounds__(TQ_ROW_WARPS * 32, 6)" in src
    # (there the dense rotation's store loads the value row before the key's rotation; fp8 keys: on sm89+ anyway,
    # not at 96's 32-element lanes, not on AMD)
    assert src.count("#define TQ_STORE_V_FIRST 1") == 1 and "#if __CUDA_ARCH__ >= 890" not in src
    assert "#define TQ_STORE_V_FIRST 1" not in render_cuda(make_variant(d80, "gfx942"))
    r8 = render_cuda(make_variant(LayoutSpec.from_preset("k8v4", head_dim=80, rotation="orthogonal"), "sm90"))
    assert "#if __CUDA_ARCH__ >= 890\n#define TQ_STORE_V_FIRST 1" in r8 and "__launch_bounds__(TQ_ROW_WARPS * 32, 4)" in r8
    assert "__launch_bounds__(TQ_ROW_WARPS * 32)\ntq_store" in render_cuda(make_variant(d80, "gfx942"))
    src3 = render_cuda(make_variant(LayoutSpec.from_preset("3bit_nc", layout="aos", head_dim=80, rotation="orthogonal"),
                                    "sm90"))
    assert "#define TQ_KCH 16" in src3 and "#define TQ_VCH 16" in src3
    with pytest.raises(SpecError, match=r"dequant_rows=0 not supported: 1 or more. the dense rotation's dequant"):
        make_variant(d80, "sm90", options=cuda_options(d80, Target.SM90).with_changes(["dequant_rows=0"]))
    k80 = LayoutSpec.from_preset("k8v4", head_dim=80)  # unrotated fp8 keys: no dense rotation, still 5 lanes a row
    with pytest.raises(SpecError, match=r"dequant_rows=0 not supported: 1 or more. the lane dequant takes D/32 elements"):
        make_variant(k80, "sm90", options=cuda_options(k80, Target.SM90).with_changes(["dequant_rows=0"]))
    d96 = LayoutSpec.from_preset("4bit_nc", head_dim=96, rotation="orthogonal")
    # head_dim 96: the orthogonal rotation lowers; the store and rows dequant rotate by m16n8k16 products
    # (tq_dense_rotate: one more parameter, the B fragments of Πᵀ / Π), the decode takes the rotated query
    assert cuda_reasons(d96, Target.SM90) == []
    src = render_cuda(make_variant(d96, "sm90"))
    assert "#define TQ_STORE_V_FIRST 1" not in src and "__launch_bounds__(TQ_ROW_WARPS * 32)\ntq_store" in src
    # the rows dequant's 16-bit outputs rotate two bf16 parts of the rows by two of Π (a0b0 + a0b1 + a1b0: within one
    # bf16 / fp16 rounding; on NVIDIA two rounds of rows at once, 5 m-tiles), fp32 outputs three by three (the
    # simulator and GPU checks hold them to check_dequant's tolerances)
    dq = {dt: src.split(f"tq_dequant_{dt}(")[1].split("\n}")[0] for dt in ("bf16", "f16", "f32")}
    assert all("TqDenseSmemT<2, 5> dsm" in dq[dt] for dt in ("bf16", "f16")) and "TqDenseSmem<3> dsm" in dq["f32"]
    assert all(f"{n}(" in src for pair in KERNEL_NAMES.values() for n in pair)
    assert src.count("TqLayout L, const uint2* __restrict__ rot)") == 5  # store bf16 / f16, dequant bf16 / f16 / f32
    # bf16 keys' rows as loaded (one part), fp16 keys' two parts, each by two of Πᵀ's parts (Lloyd-Max codes: a flip
    # only within testing.DENSE_FLIP_DELTA of a midpoint); the dequant's three (two for 16-bit outputs)
    assert "tq_dense_rotate<1, true, 2>(" in src and "tq_dense_rotate<2, false, 2>(" in src
    assert "tq_dense_rotate<OT == 2 ? 3 : 2, false, OT == 2 ? 3 : 2>(" in src
    fp8 = render_cuda(make_variant(LayoutSpec.from_preset("k8v4", head_dim=96, rotation="orthogonal", rotation_seed=3),
                                   "sm90"))
    # rotated fp8 keys: three of Πᵀ's parts (the fp8 byte's rounding tie band, FP8_TIE_REL, is fp32's)
    assert "tq_dense_rotate<BF16 ? 1 : 2>(" in fp8 and "tq_dense_rotate<1, true" not in fp8  # (±inf clamped first)
    # the dequant's lane kernel cannot (a block's rows rotate together)
    with pytest.raises(SpecError, match=r"dequant_rows=0 not supported: 1 or more. the dense rotation's dequant"):
        make_variant(d96, "sm90", options=cuda_options(d96, Target.SM90).with_changes(["dequant_rows=0"]))
    # its units (m-tiles x n-tile groups) deal evenly to the block's warps: 3 x 4 on 4 warps; 8 warps' 5 m-tiles of 12
    # n-tiles do not (a reason naming the counts that do)
    assert dense_store_units(96, 4) == (3, 4) and dense_store_units(96, 8) is None and dense_store_units(128, 4) == (2, 2)
    with pytest.raises(SpecError, match=r"row_warps=8 not supported: one of 1, 2, 4. the dense rotation deals"):
        make_variant(d96, "sm90", options=cuda_options(d96, Target.SM90).with_changes(["row_warps=8"]))


def test_store_rounds_render_and_refuse():
    """CudaOptions.store_rounds: the dense store of Lloyd-Max keys takes a block's rounds of rows through one rotation
    (head_dim 80, 4 rounds: 96 rows in 6 m-tiles x 2 groups of 5 n-tiles, 3 units a warp, no pad rows; 96, 2 rounds:
    80 rows, 5 m-tiles x 4 groups, 5 a warp), and the launcher's rows a block follow; the default (1) renders no rounds;
    fp8 keys and the Hadamard rotations ignore it (store_rounds()), counts whose units do not deal evenly (80 with 2:
    3 m-tiles) and AMD targets refuse it."""
    from tqgen.lower_cuda import store_rounds
    d80 = LayoutSpec.from_preset("4bit_nc", head_dim=80, rotation="orthogonal")
    o4 = cuda_options(d80, Target.SM90).with_changes(["store_rounds=4"])
    assert dense_store_units(80, 4, 4) == (6, 2) and dense_store_units(80, 4, 2) is None
    assert dense_store_units(96, 4, 2) == (5, 4)
    src = render_cuda(make_variant(d80, "sm90", options=o4))
    for define in ("TQ_DRR_ROUNDS 4", "TQ_DRR_ROWS 96", "TQ_DRR_MT 6", "TQ_DRR_NSPLIT 2", "TQ_DRR_NPU 5", "TQ_DRR_UPW 3"):
        assert f"#define {define} " in src or f"#define {define}\n" in src, define
    assert src.count("tq_store_rounds_impl<") == 2 and "__shared__ TqDenseSmemR<2> dsm;" in src
    assert "#define TQ_STORE_V_FIRST 1" not in src  # (no value row held across the rounds)
    assert "tq_store_rounds_impl" not in render_cuda(make_variant(d80, "sm90"))
    assert store_rounds(d80, o4) == 4
    fp8 = LayoutSpec.from_preset("k8v4", head_dim=80, rotation="orthogonal")
    o8 = cuda_options(fp8, Target.SM90).with_changes(["store_rounds=4"])
    assert store_rounds(fp8, o8) == 1 and "tq_store_rounds_impl<" not in render_cuda(make_variant(fp8, "sm90", options=o8))
    with pytest.raises(SpecError, match=r"store_rounds=2 not supported: one of 1. the rounds' m-tiles"):
        make_variant(d80, "sm90", options=o4.with_changes(["store_rounds=2"]))
    with pytest.raises(SpecError, match=r"store_rounds=4 not supported: one of 1. the store's rounds are built for NVIDIA"):
        make_variant(d80, "gfx942", options=cuda_options(d80, Target.GFX942).with_changes(["store_rounds=4"]))
    d96 = LayoutSpec.from_preset("4bit_nc", head_dim=96, rotation="orthogonal")  # 4 rounds: 160 rows, 65 KB
    with pytest.raises(SpecError, match=r"store_rounds=4 not supported: one of 1. the rounds' rows in shared memory "
                                        r"\(66560 bytes"):
        make_variant(d96, "sm90", options=cuda_options(d96, Target.SM90).with_changes(["store_rounds=4"]))
    with pytest.raises(SpecError, match=r"store_rounds=3 not supported: one of 1, 2, 4"):
        make_variant(d80, "sm90", options=o4.with_changes(["store_rounds=3"]))


def test_dequant_rounds_render_and_refuse():
    """CudaOptions.dequant_rounds: the dense rows dequant's bf16 / fp16 instances take a block's rounds of rows through
    one rotation (80 x 4: TqDrGeom<96, 6, 2, 5, 3>, two parts in 6 m-tiles of shared memory), the fp32 instance one
    round (three parts: TqDenseSmem<3>), the launch bound 4 blocks an SM at 80's 16-element lanes, 3 at 96; the
    launcher's tokens a warp follow per output type. The NVIDIA targets' defaults (measured): 4 rounds at head_dim 80,
    2 at 96, 1 elsewhere and on AMD; 1 renders no rounds; the Hadamard rotations ignore it; uneven units (80 x 2),
    rows past 44 KB (96 x 4) and AMD targets refuse it."""
    from tqgen.cuda_launch import dequant_warp_tokens
    from tqgen.lower_cuda import dequant_rounds
    d80 = LayoutSpec.from_preset("3bit_nc", layout="aos", head_dim=80, rotation="orthogonal")
    o4 = cuda_options(d80, Target.SM90)
    assert o4.dequant_rounds == 4 and cuda_options(d80, Target.SM80).dequant_rounds == 4
    assert cuda_options(d80, Target.GFX942).dequant_rounds == 1
    d96 = LayoutSpec.from_preset("4bit_nc", head_dim=96, rotation="orthogonal")
    assert cuda_options(d96, Target.SM90).dequant_rounds == 2
    d128 = LayoutSpec.from_preset("4bit_nc", rotation="orthogonal")
    assert cuda_options(d128, Target.SM90).dequant_rounds == 1
    src = render_cuda(make_variant(d80, "sm90", options=o4))
    assert "#define TQ_DQR_ROUNDS 4" in src and "using TqDrQ = TqDrGeom<TQ_DQR_ROWS, 6, 2, 5, 3>;" in src
    assert "#define TQ_DQR_ROWS 96" in src and "tq_dr_product<TqDrQ, 2, 2>(dsm, rot);" in src
    assert src.count("__shared__ TqDenseSmemT<2, 6> dsm;") == 2 and src.count("__shared__ TqDenseSmem<3> dsm;") == 1
    assert "__launch_bounds__(TQ_ROW_WARPS * 32, 4)\ntq_dequant_bf16" in src
    assert "__launch_bounds__(TQ_ROW_WARPS * 32, 3)\ntq_dequant_bf16" in render_cuda(make_variant(d96, "sm90"))
    plain = render_cuda(make_variant(d80, "sm90", options=o4.with_changes(["dequant_rounds=1"])))
    assert "TqDrQ" not in plain and "__launch_bounds__(TQ_ROW_WARPS * 32, 4)\ntq_dequant_bf16" in plain
    assert dequant_rounds(d80, o4) == 4 and dequant_warp_tokens(o4, 80, 4) == 24 and dequant_warp_tokens(o4, 80) == 6
    had = LayoutSpec.from_preset("3bit_nc", layout="aos")
    assert dequant_rounds(had, cuda_options(had, Target.SM90).with_changes(["dequant_rounds=4"])) == 1
    with pytest.raises(SpecError, match=r"dequant_rounds=2 not supported: one of 1. the rounds' m-tiles"):
        make_variant(d80, "sm90", options=o4.with_changes(["dequant_rounds=2"]))
    with pytest.raises(SpecError, match=r"dequant_rounds=4 not supported: one of 1. the dense dequant's rounds are built"):
        make_variant(d80, "gfx942", options=cuda_options(d80, Target.GFX942).with_changes(["dequant_rounds=4"]))
    with pytest.raises(SpecError, match=r"dequant_rounds=4 not supported: one of 1. the rounds' rows in shared memory "
                                        r"\(66560 bytes for 16-bit outputs"):
        make_variant(d96, "sm90", options=cuda_options(d96, Target.SM90).with_changes(["dequant_rounds=4"]))
    with pytest.raises(SpecError, match=r"dequant_rounds=3 not supported: one of 1, 2, 4"):
        make_variant(d80, "sm90", options=o4.with_changes(["dequant_rounds=3"]))


def test_fractional_value_eighths_take_line_loads():
    """3-bit values at head_dim 96: an eighth of a token's value codes (a decode thread's) is 36 bits, 4.5 bytes at
    half-byte offsets (value_eighth: the 5 bytes from the eighth's first byte). No per-thread cp.async pieces (not
    whole aligned words); the line loads copy the records like slots (SoA: 72-byte records, not whole chunks) and read
    each eighth as 2 funnel-shifted words (no access width); the P·V plan over 36 bits (6 m-tiles in 2 words, the last
    pair straddling them); every other width's eighths are whole bytes."""
    from tqgen.lower_cuda import _alignments, _render_inputs, line_reads, value_eighth, value_windows
    assert value_eighth(36) == (5, (0, 4, 9, 13, 18, 22, 27, 31)) and value_eighth(48) == (6, (0, 6, 12, 18, 24, 30, 36, 42))
    for lay in ("soa", "aos"):
        spec = LayoutSpec.from_preset("3bit_nc", layout=lay, head_dim=96, rotation="orthogonal")
        assert cuda_reasons(spec, Target.SM90) == []
        assert _alignments(spec)["v_eighth"] == 1
        r = _render_inputs(spec, Target.SM90, "generic", cuda_options(spec, Target.SM90))
        assert r["vd"] == 36 and r["async_copy"] and len(r["vplan"]) == 6
        lines = r["lines"]
        assert lines["aos"] and lines["rv"] == 2 and lines["av"] == 0 and lines["slot"] == (72 if lay == "soa" else 78)
        assert [w is None for w in r["vplan"]] == [False] * 5 + [True]  # codes 10, 11 (bits 30-35) straddle the words
    # lane (g, r)'s reads of the eighth g: the words of bytes 36 + 4.5g .. + 4 (SoA: V after the 36 key bytes)
    v_reads = line_reads(36, 36, reads=(3, 0, 2, 0))[6:]
    assert len(v_reads) == 8 and all(w == 4 for w, _ in v_reads)
    assert [v_reads[0][1][4 * g][1] for g in range(8)] == [4 * ((36 + b) // 4) for b in value_eighth(36)[1]]
    assert [v_reads[1][1][4 * g][1] for g in range(8)] == [4 * ((36 + b + 4) // 4) for b in value_eighth(36)[1]]
    assert value_windows(3, 36)[:4] == value_windows(3, 48)[:4]  # the same windows where both have them
    v = make_variant(LayoutSpec.from_preset("4bit_nc", layout="soa"), "sm90")
    too_wide = Request(spec=v.spec, num_q_heads=64, num_kv_heads=2)
    assert any("at most 16" in str(r) for r in v.rules.reasons(too_wide))


def test_fractional_pieces_at_head_dim_80():
    """Head_dim 80 (session 54): a decode thread's key quarter of 3-bit keys is 60 bits (7.5 bytes), its value eighth
    of 3-bit values 30 bits (3.75 bytes), of 2-bit values 20 bits (2.5 bytes). The register prefetch reads 8 / 5 / 3
    bytes from each piece's first byte (a read moved back where it would pass the field's end: thread_piece) and shifts
    them to bit 0; the line loads read the aligned words that hold each piece's bits (piece_spans, never a word past
    them: 3 for a quarter, 2 for a 3-bit eighth) funnel-shifted by its first bit's place (tq_lds_bits_addr); 2-bit
    eighths (3 bytes, one word read) take the register prefetch. Whole-byte pieces elsewhere are unchanged."""
    from tqgen.lower_cuda import _render_inputs, key_quarter, piece_spans, thread_piece, value_eighth
    assert key_quarter(30) == (8, (0, 7, 15, 22)) and key_quarter(40) == (10, (0, 10, 20, 30))
    assert value_eighth(30) == (5, (0, 3, 7, 11, 15, 18, 22, 25)) and value_eighth(20) == (3, (0, 2, 5, 7, 10, 12, 15, 17))
    assert value_eighth(36) == thread_piece(36, 8) == (5, (0, 4, 9, 13, 18, 22, 27, 31))  # (no read moved at 96)
    assert piece_spans(30, 8) == ((0, 4), (3, 5), (7, 5), (11, 4), (15, 4), (18, 5), (22, 5), (26, 4))
    assert piece_spans(60, 4) == ((0, 8), (7, 8), (15, 8), (22, 8)) and piece_spans(36, 8)[7] == (31, 5)
    for bits, n in ((60, 4), (30, 8), (20, 8), (36, 8)):  # every piece inside its read, no read past the field
        nb, starts = thread_piece(bits, n)
        assert all(8 * b <= i * bits and (i + 1) * bits <= 8 * (b + nb) <= n * bits for i, b in enumerate(starts))
        assert all(8 * b <= i * bits and (i + 1) * bits <= 8 * (b + m) for i, (b, m) in enumerate(piece_spans(bits, n)))
    for p in ("3bit_nc", "k3v4_nc"):
        for lay in ("soa", "aos"):
            spec = LayoutSpec.from_preset(p, layout=lay, head_dim=80, rotation="orthogonal")
            assert cuda_reasons(spec, Target.SM90) == []
            r = _render_inputs(spec, Target.SM90, "generic", cuda_options(spec, Target.SM90))
            assert (r["kd"], r["kq"]) == (30, 8) and r["async_copy"]
            lines = r["lines"]
            assert lines["aos"] and (lines["rk"], lines["ak"]) == (3, 0) and (lines["rv"], lines["av"]) == (2, 0)
            src = render_cuda(make_variant(spec, "sm90"))
            assert "tq_lds_bits_addr<2 * TQ_KD, NRK, NCP>(lw0_s, t, kb, ka[j]);" in src and "constexpr int KQ = 8;" in src
            assert "const int b0 = tq_piece_byte<4, 2 * TQ_KD, KQ>(r);" in src  # (the register prefetch's, unused)
    # 2-bit values at 80: the register prefetch; 4-bit keys and values keep whole-byte pieces and the line loads
    w = LayoutSpec(layout="soa", key_bits=4, value_bits=2, head_dim=80, rotation="orthogonal")
    assert _render_inputs(w, Target.SM90, "generic", cuda_options(w, Target.SM90))["lines"] is None
    r = _render_inputs(d := LayoutSpec.from_preset("4bit_nc", layout="soa", head_dim=80, rotation="orthogonal"),
                       Target.SM90, "generic", cuda_options(d, Target.SM90))
    assert (r["kq"], r["vq"]) == (10, 5) and r["lines"] is not None


def test_platform_spellings_are_the_only_difference():
    spec = LayoutSpec.from_preset("4bit_nc", layout="soa")
    cu = render_cuda(make_variant(spec, "sm90"))
    hip = render_cuda(make_variant(spec, "gfx942"))
    portable = render_cuda(make_variant(spec, "sm90", "portable"))
    assert "mma.sync.aligned.m16n8k16" in cu and "#include <cuda_fp16.h>" in cu
    assert "asm(" not in hip and "__shfl_xor_sync" not in hip and "#include <hip/hip_runtime.h>" in hip
    assert "__shfl_xor((v), (m), 32)" in hip
    assert "mma.sync" not in portable and "tq_prmt((x), (y), (s))" in portable  # the HIP fragment path, as CUDA
    assert render_cuda(make_variant(spec, "sm90")) == cu  # deterministic


def test_codebook_tables_hold_the_centroids():
    cb = lloyd_max(128, 4)
    for bf16, words in ((False, lut_words(cb.centroids, False)), (True, lut_words(cb.centroids, True))):
        lo = b"".join(int(w, 16).to_bytes(4, "little") for w in words["lo"])
        hi = b"".join(int(w, 16).to_bytes(4, "little") for w in words["hi"])
        bits = [lo[i] | (hi[i] << 8) for i in range(16)]
        if bf16:
            vals = [struct.unpack("<f", struct.pack("<I", b << 16))[0] for b in bits]
            tol = 2**-8
        else:
            vals = np.array(bits, dtype=np.uint16).view(np.float16).astype(np.float32).tolist()
            tol = 2**-11
        assert np.allclose(vals, cb.centroids, rtol=tol, atol=0)


def test_layout_params_come_from_derive_layout():
    spec = LayoutSpec.from_preset("3bit_nc", layout="soa")
    page = derive_layout(spec).page(8)
    p = layout_params(spec, 8)
    assert p[0] == page.block_bytes
    for i, name in enumerate(("k_data", "k_norm", "v_data", "v_scale", "v_zero")):
        fa = page[name]
        assert p[1 + 3 * i: 4 + 3 * i] == (fa.offset, fa.token_stride, fa.head_stride)
    # AoS 3bit_nc slots are 102 bytes: only 2-byte aligned, and the kernels are told so
    assert field_alignment(LayoutSpec.from_preset("3bit_nc", layout="aos"), "v_data") == 2


def test_options_are_data_with_measured_overrides():
    fp8 = cuda_options(preset_spec_for_target("k8v4", Target.SM90, layout="soa"), Target.SM90)
    k4 = cuda_options(preset_spec_for_target("4bit_nc", Target.SM90, layout="soa"), Target.SM90)
    k3 = cuda_options(preset_spec_for_target("k3v4_nc", Target.SM90, layout="aos"), Target.SM90)
    assert fp8.stages == 3 and k4.stages == 3 and k3.decode_min_blocks == 6 and k4.decode_min_blocks == 4
    assert (k4.pair_copies, k4.decode_warps, k3.pair_copies) == (16, 4, 32)  # 256- vs 64-entry pair tables
    # 3-bit keys: a copy per lane (lane l reads word 32v + l: bank l whatever v, no conflicts), addressed
    # by OR into a table aligned to its size; k3v4_nc SoA at head_dim 128 in head groups of 2 (its records
    # share 32-byte sectors), the override last in the table winning over the 3-bit SoA block shape
    k3s = cuda_options(preset_spec_for_target("k3v4_nc", Target.SM90, layout="soa"), Target.SM90)
    assert (k3s.pair_copies, k3s.head_groups, k3s.decode_warps, k3s.tile_unroll) == (32, True, 2, 3)
    k3s64 = cuda_options(preset_spec_for_target("k3v4_nc", Target.SM90, layout="soa", head_dim=64), Target.SM90)
    assert not k3s64.head_groups
    # ... and its table addressed by OR of the lane's offset plus the table's address in the load (pair_add: no
    # 8 KB-aligned room for the table, 8 blocks an SM); not at head_dim 64 or for 3bit_nc (ptxas kept an IMAD there)
    k3s3 = cuda_options(preset_spec_for_target("3bit_nc", Target.SM90, layout="soa"), Target.SM90)
    assert k3s.pair_add and not k3s64.pair_add and not k3s3.pair_add and not k3.pair_add
    src_add = render_cuda(make_variant(preset_spec_for_target("k3v4_nc", Target.SM90, layout="soa"), "sm90"))
    assert "add.u32 a, %1, %2" in src_add and "pairs_pad" not in src_add
    assert "__shared__ uint32_t pairs[PAIRS * TQ_PAIR_COPIES];" in src_add
    src = render_cuda(make_variant(preset_spec_for_target("k3v4_nc", Target.SM90, layout="aos"), "sm90"))
    assert "#define TQ_PAIR_COPIES 32" in src and "pair_base | v * (4u * TQ_PAIR_COPIES)" in src
    assert "#define TQ_PAIR_COPIES 0" in render_cuda(make_variant(LayoutSpec.from_preset("k8v4"), "sm90"))
    # 4-bit keys, AoS (both head sizes): a lookup's offset is one byte permute (pair_prmt); not where the pipeline
    # is not in dynamic shared memory (SoA, the portable instance) nor for 3-bit or fp8 keys
    for d in (128, 64):
        a4 = preset_spec_for_target("4bit_nc", Target.SM90, layout="aos", head_dim=d)
        assert cuda_options(a4, Target.SM90).pair_prmt and not cuda_options(a4, Target.SM90, "portable").pair_prmt
        src4 = render_cuda(make_variant(a4, "sm90"))
        assert "#define TQ_PAIR_HOLES 1" in src4 and "TQ_PRMT(w, pair_lane, 0x5504u | (k << 4))" in src4
    assert not (k4.pair_prmt or k3.pair_prmt or k3s.pair_prmt or fp8.pair_prmt)
    assert "#define TQ_PAIR_HOLES 0" in render_cuda(make_variant(preset_spec_for_target("4bit_nc", Target.SM90,
                                                                                        layout="soa"), "sm90"))
    a = make_variant(LayoutSpec.from_preset("4bit_nc"), "sm90")
    b = make_variant(LayoutSpec.from_preset("4bit_nc"), "sm90", options=k3)
    assert a.id != b.id and "TQ_STAGES 3" in render_cuda(a)



def test_dequant_kernel_choice_is_data():
    """The dequant's kernel and rounds per target and spec (lower_cuda.CudaOptions.dequant_rows; the sm90 numbers in
    bench/results/h200-2026-12-04-dequant-rows.md): the rows kernel at 2 rounds for Lloyd-Max keys with 4-bit values on
    sm90, 1 round for 3-bit values, fp8 keys, below sm90 and on AMD; each renders only its kernel (the lane kernel
    where asked for), the launcher's tokens a warp follow it, and other round counts are refused with the allowed
    ones. Its launch bound's minimum is 8 blocks an SM in CUDA and the same occupancy in HIP's unit, waves an EU:
    8 blocks of 4 logical warps (2 wave64) a CU of 4 EUs = 4 (8 there capped the kernel at 64 VGPRs: it spilled)."""
    from tqgen.cuda_launch import dequant_warp_tokens

    def opts(preset, target, layout="soa", d=128):
        return cuda_options(preset_spec_for_target(preset, target, layout=layout, head_dim=d), target)
    for layout in ("soa", "aos"):
        for d in (128, 64):
            assert [opts(p, Target.SM90, layout, d).dequant_rows for p in ("4bit_nc", "k3v4_nc", "3bit_nc", "k8v4")] \
                == [2, 2, 1, 1]
            assert opts("4bit_nc", Target.SM80, layout, d).dequant_rows == 1
            for t in (Target.GFX90A, Target.GFX942, Target.GFX950):
                assert opts("4bit_nc", t, layout, d).dequant_rows == 1
    rows = render_cuda(make_variant(preset_spec_for_target("4bit_nc", Target.SM90, layout="soa"), "sm90"))
    spec_amd = preset_spec_for_target("4bit_nc", Target.GFX942, layout="soa")
    amd = render_cuda(make_variant(spec_amd, "gfx942"))
    lane = render_cuda(make_variant(spec_amd, "gfx942", options=cuda_options(spec_amd, Target.GFX942).with_changes(
        ["dequant_rows=0"])))
    assert "#define TQ_DQ_ROWS 2" in rows and "tq_dequant_rows_impl<0>(cache" in rows and "tq_dequant_impl<0>(cache" not in rows
    assert "#define TQ_DQ_ROWS 1" in amd and "tq_dequant_rows_impl<0>(cache" in amd
    assert "#define TQ_DQ_ROWS 0" in lane and "tq_dequant_impl<0>(cache" in lane and "tq_dequant_rows_impl" not in lane
    assert "__launch_bounds__(TQ_ROW_WARPS * 32, 8)\ntq_dequant_bf16" in rows
    assert "__launch_bounds__(TQ_ROW_WARPS * 32, 4)\ntq_dequant_bf16" in amd and "#define TQ_ROW_WARPS 4" in amd
    # tokens a warp: R rounds of 32 / (D / 32) rows (8 rows at head_dim 128, 16 at 64), else dequant_tokens
    assert dequant_warp_tokens(CudaOptions(dequant_rows=2), 128) == 16
    assert dequant_warp_tokens(CudaOptions(dequant_rows=1), 64) == 16
    assert dequant_warp_tokens(CudaOptions(dequant_rows=0, dequant_tokens=8), 128) == 8
    r = CudaOptions(dequant_rows=3).reasons(Target.SM90)
    assert [x.field for x in r] == ["dequant_rows"] and "one of 0, 1, 2, 4" in str(r[0])


def test_dynamic_smem_sizes_and_reasons():
    """decode_dynamic_smem: stages x warps x one warp's line-load stage (16 tokens x row chunks x 16
    bytes + the fields' 32-byte runs) plus the pair table (entries x copies; doubled for the 3-bit
    table's OR alignment); 0 without the option. Refused on AMD targets and without the pipeline."""
    import dataclasses

    from tqgen.lower_cuda import _line_loads, decode_dynamic_smem, platform_for

    spec = preset_spec_for_target("4bit_nc", Target.SM90, layout="soa")
    o = dataclasses.replace(cuda_options(spec, Target.SM90), decode_warps=8, decode_min_blocks=2, pair_copies=32)
    assert decode_dynamic_smem(spec, Target.SM90, "generic", o) == 0
    lines = _line_loads(spec, platform_for(Target.SM90))
    stage = 4 * (16 * lines["ncp"] * 4 + 8 * lines["nmeta"])
    assert stage == 16 * 128 + 3 * 32  # 16 records of 128 bytes, three fp16 runs
    d = dataclasses.replace(o, dyn_smem=True)
    assert decode_dynamic_smem(spec, Target.SM90, "generic", d) == 3 * 8 * stage + 256 * 32 * 4
    k3 = preset_spec_for_target("3bit_nc", Target.SM90, layout="soa")
    d3 = dataclasses.replace(cuda_options(k3, Target.SM90), dyn_smem=True)
    l3 = _line_loads(k3, platform_for(Target.SM90))
    assert decode_dynamic_smem(k3, Target.SM90, "generic", d3) == (
        3 * d3.decode_warps * 4 * (16 * l3["ncp"] * 4 + 8 * l3["nmeta"]) + 2 * 64 * 32 * 4)
    # pair_add: the 3-bit table once, no alignment room
    assert decode_dynamic_smem(k3, Target.SM90, "generic", dataclasses.replace(d3, pair_add=True)) == (
        3 * d3.decode_warps * 4 * (16 * l3["ncp"] * 4 + 8 * l3["nmeta"]) + 64 * 32 * 4)
    assert [r.field for r in CudaOptions(pair_add=True).reasons(Target.GFX942)] == ["pair_add"]
    assert CudaOptions(pair_add=True).reasons(Target.SM90) == []
    assert [r.field for r in CudaOptions(dyn_smem=True).reasons(Target.GFX942)] == ["dyn_smem"]
    # pair_prmt: the 4-bit table at a 256-byte entry stride (64 KB), the pipeline inside its holes, nothing more
    a4 = preset_spec_for_target("4bit_nc", Target.SM90, layout="aos")
    p4 = cuda_options(a4, Target.SM90)
    assert p4.pair_prmt and p4.dyn_smem and p4.pair_copies == 32
    assert decode_dynamic_smem(a4, Target.SM90, "generic", p4) == 256 * 256
    la = _line_loads(a4, platform_for(Target.SM90))
    assert p4.stages * p4.decode_warps * 4 * 16 * la["ncp"] * 4 <= 256 * 128  # the pipeline fits the holes
    assert {r.field for r in CudaOptions(pair_prmt=True, dyn_smem=True).reasons(Target.GFX942)} == {"pair_prmt", "dyn_smem"}
    assert [r.field for r in CudaOptions(pair_prmt=True).reasons(Target.SM90)] == ["pair_prmt"]  # needs dyn_smem
    for bad_spec, bad_opts, words in (
            (spec, dataclasses.replace(d, pair_prmt=True), "AoS line loads"),  # SoA, 32 copies
            (k3, dataclasses.replace(d3, pair_prmt=True), "4-bit Lloyd-Max keys"),
            (a4, dataclasses.replace(p4, pair_copies=16), "pair_copies=16"),
            (a4, dataclasses.replace(p4, stages=4), "must fit")):
        with pytest.raises(ValueError, match=words):
            decode_dynamic_smem(bad_spec, Target.SM90, "generic", bad_opts)
    assert [r.field for r in CudaOptions(dyn_smem=True, stages=0).reasons(Target.SM90)] == ["dyn_smem"]
    src = render_cuda(make_variant(spec, "sm90", options=d))
    assert "extern __shared__ __align__(128) uint32_t tq_dyn[];" in src and "__shared__ uint32_t pairs[" not in src
    # the async copies' rows start on 128-byte lines, static or dynamic: at 16-byte alignment the balanced kernel's
    # plan (placed first by ptxas) put them 32 bytes off a line, and the same loop ran 10-16 % slower
    assert "__shared__ __align__(128) uint32_t smem[SMEM_WORDS];" in render_cuda(make_variant(spec, "sm90", options=o))

def test_every_eligible_width_renders_on_every_cpp_target():
    """The per-spec overrides were measured on the presets; every other key / value width the IR allows and
    cuda_reasons accepts lowers too (AoS 4-bit keys with 8-bit values at head_dim 128 took sm90's pair_prmt,
    whose pipeline does not fit the table's holes at 3584-byte rows, and raised: cuda_options now keeps the plain
    32-copy table there). The decodes' values: tests/test_cpu_sim.py::test_non_preset_widths_match_reference."""
    import itertools

    failed, rendered = [], {True: 0, False: 0}  # fp8 keys or not
    for kb, vb, layout, d in itertools.product((2, 3, 4, 8), (2, 3, 4, 8), ("aos", "soa"), HEAD_DIMS):
        codec = dict(key_codec="fp8_e4m3fn", norm_correction=False) if kb == 8 else \
            {"rotation": str(rotation_at(Rotation.HADAMARD, d))}  # 96: the orthogonal rotation (a decode only)
        spec = LayoutSpec(layout=layout, key_bits=kb, value_bits=vb, head_dim=d, **codec)
        for t in (Target.SM80, Target.SM89, Target.SM90, Target.GFX90A, Target.GFX942, Target.GFX950):
            if cuda_reasons(spec, t):
                continue
            try:
                assert "tq_decode_split" in render_cuda(make_variant(spec, t))
                rendered[kb == 8] += 1
            except ValueError as e:
                failed.append(f"{spec.token} on {t}: {e}")
    assert not failed, "\n".join(failed)
    assert HEAD_DIMS == (64, 80, 96, 128, 256)
    assert rendered[False] == 3 * 4 * 2 * 5 * 6  # every Lloyd-Max width is eligible on all six targets
    assert rendered[True] == 4 * 2 * 5 * 3  # OCP e4m3fn keys: sm89, sm90, gfx950
    a48 = LayoutSpec(layout="aos", key_bits=4, value_bits=8)
    o = cuda_options(a48, Target.SM90)
    assert (o.decode_warps, o.decode_min_blocks) == (2, 4) and o.pair_prmt  # 8-bit values' bound: 2 warps' rows fit
    assert cuda_options(a48.replace(value_bits=4), Target.SM90).pair_prmt  # the preset keeps it


def test_pair_prmt_is_dropped_where_the_rows_miss_its_holes(monkeypatch):
    """Without the 8-bit values' override, AoS 4-bit keys with 8-bit values at head_dim 128 keep the presets' 4 warps:
    3 stages x 4 warps x 3584-byte rows do not fit pair_prmt's 256 holes of 128 bytes, and cuda_options keeps the
    plain 32-copy table (before session 46, make_variant raised and the runtime fell back to Triton)."""
    import tqgen.lower_cuda as lc

    monkeypatch.setattr(lc, "CUDA_OPTION_OVERRIDES",
                        tuple(x for x in lc.CUDA_OPTION_OVERRIDES if ("value_bits", 8) not in x.match))
    a48 = LayoutSpec(layout="aos", key_bits=4, value_bits=8)
    o = lc.cuda_options(a48, Target.SM90)
    assert o.decode_warps == 4 and not o.pair_prmt and o.dyn_smem and o.pair_copies == 32
    assert "tq_decode_split" in render_cuda(make_variant(a48, "sm90"))


def test_dyn_smem_override_leaves_kinds_without_a_pipeline_static(monkeypatch):
    """An override's dyn_smem places the line-load pipeline: the generic instance takes it, the portable
    instance (no line loads) keeps static shared memory instead of failing to lower; asked for explicitly
    on the portable kind it is refused with the reason."""
    import dataclasses

    from tqgen import lower_cuda
    from tqgen.lower_triton import OptionOverride

    spec = preset_spec_for_target("4bit_nc", Target.SM90, layout="aos")
    extra = OptionOverride(Target.SM90, (("layout", "aos"), ("key_codec", "lloyd_max"), ("key_bits", 4)),
                           (("decode_warps", 4), ("decode_min_blocks", 3), ("pair_copies", 32), ("dyn_smem", True)),
                           "test")
    monkeypatch.setattr(lower_cuda, "CUDA_OPTION_OVERRIDES", lower_cuda.CUDA_OPTION_OVERRIDES + (extra,))
    generic, portable = (lower_cuda.cuda_options(spec, Target.SM90, k) for k in ("generic", "portable"))
    assert generic.dyn_smem and not portable.dyn_smem
    # nothing else differs but pair_prmt, whose table holds the pipeline in dynamic shared memory
    assert generic.pair_prmt and dataclasses.replace(portable, dyn_smem=True, pair_prmt=True) == generic
    assert lower_cuda.decode_dynamic_smem(spec, Target.SM90, "generic", generic) > 48 * 1024 - 16 * 1024
    src = render_cuda(make_variant(spec, "sm90", "portable"))
    assert "tq_dyn" not in src and make_variant(spec, "sm90").options.dyn_smem
    with pytest.raises(ValueError, match="no line-load pipeline"):
        make_variant(spec, "sm90", "portable", options=generic)


def test_tile_unroll_is_the_pipeline_depth_where_measured():
    # unrolled by the stage count every stage slot is a constant; any other factor is refused
    assert not CudaOptions(tile_unroll=3).reasons(Target.SM90)
    assert [r.field for r in CudaOptions(tile_unroll=2).reasons(Target.SM90)] == ["tile_unroll"]
    assert [r.field for r in CudaOptions(tile_unroll=3, stages=4).reasons(Target.SM90)] == ["tile_unroll"]
    unrolled = {(p, lay) for p in ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc") for lay in ("soa", "aos")
                if cuda_options(preset_spec_for_target(p, Target.SM90, layout=lay), Target.SM90).tile_unroll == 3}
    # Lloyd-Max keys (bench/results/h200-2026-12-01-ab12-tile-unroll.md); fp8 keys stay rolled, k3v4_nc SoA
    # where it has no head groups (sm_80-89: -ab12; sm_90: -soa-k3v4-sectors.md)
    assert unrolled == {("4bit_nc", "soa"), ("4bit_nc", "aos"), ("3bit_nc", "soa"), ("3bit_nc", "aos"),
                        ("k3v4_nc", "aos"), ("k3v4_nc", "soa")}
    k3s80 = cuda_options(preset_spec_for_target("k3v4_nc", Target.SM80, layout="soa"), Target.SM80)
    assert k3s80.tile_unroll == 1 and not k3s80.head_groups
    src = render_cuda(make_variant(preset_spec_for_target("3bit_nc", Target.SM90, layout="soa"), "sm90"))
    assert "#pragma unroll 3\n  for (int tile = t_begin" in src
    assert "#pragma unroll 3\n  for (int tile" not in render_cuda(make_variant(LayoutSpec.from_preset("k8v4"), "sm90"))
    assert "%%ctaid.y" not in render_cuda(make_variant(LayoutSpec.from_preset("3bit_nc"), "gfx942"))


def test_build_cli_backends(tmp_path, capsys):
    assert main(["build", "--backend", "cuda", "--preset", "4bit_nc", "--layout", "soa", "--target", "sm90",
                 "--out", str(tmp_path)]) == 0
    assert list(tmp_path.glob("sm90/cuda/*/kernel.cu"))
    assert main(["build", "--backend", "hip", "--preset", "4bit_nc", "--layout", "soa", "--target", "gfx950",
                 "--out", str(tmp_path)]) == 0
    assert list(tmp_path.glob("gfx950/hip/*/kernel.hip"))
    assert main(["build", "--backend", "hip", "--preset", "4bit_nc", "--target", "sm90", "--out", str(tmp_path)]) == 1
    assert "sm90 compiles cuda C++" in capsys.readouterr().out


@pytest.mark.parametrize("preset", ["4bit_nc", "k8v4", "k3v4_nc"])
def test_line_loads_swizzle_is_conflict_free(preset):
    """SoA decode copies whole token-head records (line loads); the chosen chunk swizzle must make
    the fragment reads of one tile cost the minimum number of shared-memory wavefronts (one per
    128 bytes a warp reads: 4 per 16-byte access, 2 per 8-byte, 1 per 4-byte), while the identity
    layout (every row starting at bank 0) must not (the model can fail)."""
    spec = preset_spec_for_target(preset, Target.SM90, layout="soa")
    bl = derive_layout(spec)
    ncp, sa, sb = line_swizzle(bl.kd, bl.vd)
    assert ncp >= (bl.kd + bl.vd) // 16 and ncp & (ncp - 1) == 0 and 3 * sa < ncp and sb < ncp
    kq, vq = bl.kd // 4, bl.vd // 8  # bytes per thread: a K quarter of 2 tokens, a V eighth of 4
    wk, wv = _access_width(kq, [r * kq for r in range(4)]), _access_width(vq, [bl.kd + g * vq for g in range(8)])
    minimum = 2 * (kq // wk) * (wk // 4) + 4 * (vq // wv) * (wv // 4)  # a w-byte warp access: w / 4 wavefronts
    assert sum(w // 4 for w, _ in line_reads(bl.kd, bl.vd)) == minimum
    assert line_conflicts(bl.kd, bl.vd, ncp, sa, sb) == minimum
    assert line_conflicts(bl.kd, bl.vd, ncp, 0, 0) > minimum
    # a warp's own rows (k3v4_nc's sm90 default is head-group rows, the slot plan: test_aos_line_reads...)
    per_warp = dataclasses.replace(cuda_options(spec, Target.SM90), head_groups=False)
    src = render_cuda(make_variant(spec, "sm90", options=per_warp))
    assert "#define TQ_LINES 1" in src and f"return {sa} * ((t >> 1) & 3) ^ {sb} * (t & 1);" in src


def test_line_loads_only_where_records_are_whole_lines():
    """HIP targets keep the per-fragment loads; 3-bit values (6-byte eighths at D=128, 3-byte at D=64)
    take line loads with unaligned piece reads, and so do AoS slots (2-byte aligned, any size) and SoA
    records that are not whole 16-byte chunks (k3v4_nc at head_dim 64: 24 + 32 bytes, copied like
    slots, the fields as runs)."""
    for preset, layout, target, d in (("4bit_nc", "soa", "gfx942", 128), ("4bit_nc", "aos", "gfx942", 128)):
        spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=d)
        assert "#define TQ_LINES 0" in render_cuda(make_variant(spec, target)), (preset, layout, target, d)
    src = render_cuda(make_variant(LayoutSpec.from_preset("k3v4_nc", layout="soa", head_dim=64), "sm90"))
    assert "#define TQ_LINES_AOS 1" in src and "tq_cp_async_s<16, 16>(meta_dst + so" in src
    for d, pieces in ((128, ("tq_lds_bytes<VQ, 2, NCP>",)), (64, ("tq_lds_bytes<KQ, 2, NCP>", "tq_lds_bytes<VQ, 2, NCP>"))):
        src = render_cuda(make_variant(LayoutSpec.from_preset("3bit_nc", layout="soa", head_dim=d), "sm90"))
        assert "#define TQ_LINES 1" in src and all(x in src for x in pieces), d
    for preset in ("4bit_nc", "k8v4", "k3v4_nc", "3bit_nc"):
        for d in (64, 128):
            src = render_cuda(make_variant(LayoutSpec.from_preset(preset, layout="aos", head_dim=d), "sm90"))
            assert "#define TQ_LINES_AOS 1" in src, (preset, d)


def _lds_bytes(word, b: int, n: int, reads: int) -> tuple[bytes, list[int]]:
    """The kernel's tq_lds_bytes re-enacted: ``reads`` aligned words from b's on, each clamped to the
    piece's last word, funnel-shifted by b's offset in its word; (the piece's bytes, the word indices
    read). ``word(i)``: word i of the staged row."""
    idx = [min(b // 4 + x, (b + n - 1) // 4) for x in range(reads)]
    ws = [word(i) for i in idx] + [0]
    out = [((ws[x] | ws[x + 1] << 32) >> (8 * (b % 4))) & 0xFFFFFFFF for x in range((n + 3) // 4)]
    return b"".join(x.to_bytes(4, "little") for x in out)[:n], idx


@pytest.mark.parametrize("preset,layout,d,group", [("4bit_nc", "aos", 128, 1), ("k8v4", "aos", 128, 1),
                                                   ("k3v4_nc", "aos", 128, 1), ("3bit_nc", "aos", 128, 1),
                                                   ("k3v4_nc", "soa", 64, 1), ("k8v4", "aos", 128, 8),
                                                   ("4bit_nc", "aos", 128, 4), ("3bit_nc", "aos", 64, 8),
                                                   ("k3v4_nc", "aos", 128, 2), ("k3v4_nc", "soa", 128, 2),
                                                   ("k3v4_nc", "soa", 128, 4), ("3bit_nc", "soa", 64, 2),
                                                   ("k8v4", "soa", 128, 2)])
def test_aos_line_reads_assemble_each_slot(preset, layout, d, group):
    """AoS line loads, re-enacted: a block of slots (KV heads 1..16, the tile's 16 tokens), copied as
    the kernel's issue_tile does (the 16-byte chunks that reach into each slot, row t of NCP chunks,
    chunk c at c ^ swz(t)), then read as read_tile does (tq_lds_bytes_at at the slot's shift + piece,
    the fields as 2-byte halves of their words; pieces at aligned bytes in every row as whole accesses,
    tq_lds_access_at, each inside one 16-byte chunk): every piece and field comes back exactly, and no
    copy leaves the block. SoA records that are not whole chunks (k3v4_nc, head_dim 64) take the same
    copies and reads (their fields are runs, as with whole-chunk records). Head-group rows (``group``
    heads a block, CudaOptions.head_groups): the block copies the group's slots (or SoA records) as one
    row per token, every 16-byte chunk of the block once (with a row per head, the chunks two slots
    share are copied twice), and warp w reads head min(hg0 + w, hk - 1)'s slot at its offset in the row."""
    import random

    from tqgen.lower_cuda import _line_loads, platform_for
    spec = LayoutSpec.from_preset(preset, layout=layout, head_dim=d)
    bl = derive_layout(spec)
    ln = _line_loads(spec, platform_for(Target.SM90, "generic"), group)
    assert ln["aos"] and ln["slot"] == (bl.slot_bytes if layout == "aos" else bl.kd + bl.vd)
    assert ln["runs"] == (layout == "soa") and ln["group"] == group
    kq, vq = bl.kd // 4, bl.vd // 8
    swz = lambda t: (ln["sa"] * ((t >> 1) & 3)) ^ (ln["sb"] * (t & 1))
    assert all(c ^ swz(t) < ln["ncp"] for t in range(16) for c in range(ln["nc"]))
    rng = random.Random(7)
    for hk in (1, 3, 8, 16):
        page = bl.page(hk)
        k = page["k_data"]
        blk = bytes(rng.randrange(256) for _ in range(page.block_bytes))
        copied = []  # source chunks of every copy (all groups)
        for hg0 in range(0, hk, group):
            nh = min(group, hk - hg0)
            row = {}
            for t in range(16):
                start = k.offset + hg0 * k.head_stride + t * k.token_stride
                o = start % 16
                for c in range(ln["nc"]):
                    if 16 * c < o + nh * ln["slot"]:  # the kernel's predicate
                        src = start - o + 16 * c
                        assert src + 16 <= page.block_bytes
                        assert (t, c ^ swz(t)) not in row
                        row[(t, c ^ swz(t))] = blk[src:src + 16]
                        copied.append(src)
            word = lambda t, wi: int.from_bytes(row[(t, (wi >> 2) ^ swz(t))][4 * (wi & 3):4 * (wi & 3) + 4], "little")

            def lds_bytes(t, b, n, reads, width):
                if not width:  # tq_lds_bytes_at: words funnel-shifted
                    return _lds_bytes(lambda i: word(t, i), b, n, reads)[0]
                assert b % width == 0 and reads * width == n  # tq_lds_access_at: whole accesses
                return b"".join(row[(t, (bx >> 4) ^ swz(t))][bx & 15:(bx & 15) + width]
                                for bx in range(b, b + n, width))
            for w in range(group):
                h = min(hg0 + w, hk - 1)
                wo = (h - hg0) * ln["slot"]
                for t in range(16):
                    start = k.offset + h * k.head_stride + t * k.token_stride
                    o = (start - wo) % 16
                    slot = blk[start:start + ln["slot"]]
                    for r in range(4):
                        assert lds_bytes(t, o + wo + r * kq, kq, ln["rk"], ln["ak"]) == slot[r * kq:(r + 1) * kq]
                    for g in range(8):
                        b0 = ln["vo"] + g * vq
                        assert lds_bytes(t, o + wo + b0, vq, ln["rv"], ln["av"]) == slot[b0:b0 + vq]
                    for f in ("fk", "fvs", "fvz"):
                        if ln[f] >= 0:
                            b = o + wo + ln[f]
                            got = (word(t, b >> 2) >> (8 * (b & 2))) & 0xFFFF
                            assert got == int.from_bytes(slot[ln[f]:ln[f] + 2], "little"), (hk, h, t, f)
        if group > 1 and hk == group and k.token_stride % 16 == 0:
            # one group, token rows of whole chunks (8 heads of an even slot): each chunk of the tile once,
            # where a row per head copies the chunks two neighbour slots share once for each
            assert len(copied) == len(set(copied)) == k.token_stride
            per_head = sum(((k.offset + h * k.head_stride + t * k.token_stride) % 16 + ln["slot"] + 15) // 16
                           for h in range(hk) for t in range(16))
            assert per_head > len(copied)


@pytest.mark.parametrize("kd,vd", [(48, 48), (24, 24), (48, 64), (64, 64), (32, 32)])
def test_line_piece_reads_assemble_each_piece(kd, vd):
    """The kernel's tq_lds_bytes / tq_lds_words, re-enacted on a random staged record: every lane's
    words (funnel-shifted by its piece's offset in its first word) start with exactly its piece's
    bytes, no read leaves the record, and the words read are those the bank-conflict model
    (``line_reads``) counts."""
    import random
    from tqgen.lower_cuda import _piece_reads, _piece_words
    rng = random.Random(kd * 1000 + vd)
    rec = bytes(rng.randrange(256) for _ in range(kd + vd))
    word = lambda i: int.from_bytes(rec[4 * i:4 * i + 4], "little")
    modelled = {(w, t, b) for w, lanes in line_reads(kd, vd) for t, b in lanes}
    for n, starts in ((kd // 4, [r * (kd // 4) for r in range(4)]), (vd // 8, [kd + g * (vd // 8) for g in range(8)])):
        reads = _piece_reads(n, starts)
        for b in starts:
            if reads:  # tq_lds_bytes
                got, idx = _lds_bytes(word, b, n, reads)
                addrs = [4 * i for i in idx]
            else:  # tq_lds_words: whole aligned accesses
                got = b"".join(word(b // 4 + x).to_bytes(4, "little") for x in range(n // 4))
                addrs = _piece_words(n, b, 0, _access_width(n, starts))
            assert got == rec[b:b + n], (n, b)
            assert all(0 <= a and a + 4 <= kd + vd for a in addrs), (n, b, addrs)
            assert all(any(m[2] == a for m in modelled) for a in addrs), (n, b)


def test_merge_kind_takes_rows_for_many_rows_and_few_splits():
    """The merge's warp-per-row kernel where it measured faster (large batches, few splits), the
    block-per-row kernel elsewhere (B=1's 64 splits: its groups read 16 splits each in parallel)."""
    from tqgen.cuda_launch import merge_kind
    assert merge_kind(128 * 32, 4) == "rows" and merge_kind(32 * 32, 16) == "rows"
    assert merge_kind(1 * 32, 64) == "groups" and merge_kind(256, 2) == "groups" and merge_kind(512, 16) == "groups"
    assert merge_kind(1 << 20, 64) == "groups"  # a warp per row walks its splits in turn: 32 at most
    for rows in (1, 100, 512, 4096):
        for splits in (1, 2, 8, 32, 64):
            assert merge_kind(rows, splits) in ("rows", "groups")


def test_decode_splits_fill_whole_waves():
    """The split count is a multiple of the block's warps, respects the caps, and fills the waves
    of resident warps (132 SMs x 16 on the H200): the rule picks one full wave where one exists."""
    from tqgen.cuda_launch import decode_splits
    waves = 132 * 16
    assert decode_splits(32 * 8, 32768, waves, 2) == 8     # 2048 warps: 0.97 of a wave (10 was 1.21 waves)
    assert decode_splits(128 * 8, 8192, waves, 2) == 2     # 2048 again
    assert decode_splits(1 * 8, 4096, waves, 2) == 64      # latency-bound: as many splits as allowed
    assert decode_splits(1, 100, waves, 2) == 2            # 7 tiles: the minimum, a whole block
    # few units, long context: past 64 splits up to half the resident warps (8 x 132 = 1056 warps)
    assert decode_splits(1 * 8, 131072, waves, 2) == 132
    assert decode_splits(1 * 8, 32768, waves, 4) == 132
    assert decode_splits(1 * 3, 131072, waves, 2) == 352   # head_dim 64, Hk 3
    assert decode_splits(1, 1 << 20, waves, 2) == 512      # MAX_SPLITS
    assert decode_splits(1 * 8, 8192, waves, 2) == 128     # a quarter of the 512 tiles
    assert decode_splits(4 * 8, 131072, waves, 2) == 64    # 32 units: 2112 / 64 = 33 -> 64 as before
    for units in range(1, 600, 7):
        for L in (16, 1000, 4096, 131072):
            s = decode_splits(units, L, waves, 2)
            few = max(64, waves // (2 * units)) // 2 * 2
            assert s % 2 == 0 and 2 <= s <= max(2, min(512, few, -(-L // 16) // 4))
            fill = units * s / (-(-units * s // waves) * waves)
            assert fill >= 0.95 or all(units * t / (-(-units * t // waves) * waves) <= fill + 1e-9
                                       for t in range(2, s, 2)), (units, L, s)


def test_balanced_blocks_deal_the_grid_by_tiles():
    """A balanced decode deals the grid's B·X blocks a unit by tiles (cuda_launch.balanced_blocks re-enacts the
    template's tq_bal_block; tests/test_cuda_gpu.py checks the kernel's plan against it): at most B·X (the grid and
    the workspace are the classic ones), equal lengths keep X each, every non-empty sequence gets one and an empty
    one none, and the deal is a water level: no block has more tiles than the least level whose blocks fit in Kt
    (cap long blocks, or the classic grid's count for the tiles, plus the short sequences'); a window counts only
    the tiles it spans. The cap is one wave of resident blocks for 2-warp decodes, 3/4 of one for 4-warp ones
    (balanced_cap)."""
    from types import SimpleNamespace

    from tqgen.cuda_launch import balanced_blocks, balanced_cap, balanced_width, span_tiles
    two, four = SimpleNamespace(decode_warps=2, decode_min_blocks=8), SimpleNamespace(decode_warps=4, decode_min_blocks=3)
    assert balanced_cap(two, 132, 8) == 132 and balanced_cap(four, 132, 8) == 3 * 49 // 4 == 36
    assert balanced_cap(four, 1, 64) == 1 and balanced_cap(two, 132, 0) == 1056
    assert span_tiles(0) == 0 and span_tiles(1) == 1 and span_tiles(16) == 1 and span_tiles(17) == 2
    assert span_tiles(1000, 100) == 1000 // 16 + 1 - 900 // 16 and span_tiles(50, 100) == span_tiles(50)
    assert balanced_blocks([4096] * 5, 0, 3, 2) == [3] * 5 and balanced_blocks([0, 0], 0, 2, 9) == [2, 2]
    # a wider grid than the tuned count (balanced_width): equal lengths keep the tuned count, the rest is dealt
    assert balanced_blocks([4096] * 5, 0, 9, 2, uniform_blocks=3) == [3] * 5
    # B=128, one long: where the tuned count is one block a unit (k8v4 SoA: 2 splits of 2-warp blocks) the grid deals
    # nothing (each sequence one block, the long one 2048 tiles in one); a width holding a wave's cap and one block
    # for each short one (balanced_width: 3) gives the long one 32 blocks of 64 tiles, as many as a short one has
    assert balanced_width(two, 132, 8, 128, 1) == -(-(132 + 127) // 128) == 3
    assert balanced_width(two, 132, 8, 32, 8) == 8 and balanced_width(four, 132, 8, 128, 1) == 2
    assert balanced_width(two, 132, 8, 32, 2) == 2  # the tuned grid deals already: its width (wider lost on ramps)
    one_long = [32768] + [1024] * 127
    assert balanced_blocks(one_long, 0, 1, 132) == [1] * 128
    assert balanced_blocks(one_long, 0, 3, 132, uniform_blocks=1) == [32] + [1] * 127
    # 64 blocks, 4032 tiles: a level of 64 tiles, the long one 32 blocks, the others one each (63 blocks)
    assert balanced_blocks([32768] + [1024] * 31, 0, 2, 49) == [32] + [1] * 31
    # half long, half short: the long ones as the classic grid of the 32 full sequences (4 blocks each: floor(4 · N /
    # n_max) = 128 long blocks, not the 132 of a rounded-up count, which passed the wave of AoS 4bit_nc), the short
    # ones' blocks on top
    assert balanced_blocks([16384] * 32 + [100] * 32, 0, 4, 99) == [4] * 32 + [1] * 32
    # AoS 4bit_nc's half mix at B=32 (3 blocks a unit, 49 resident a unit): 48 long blocks, within the wave
    assert balanced_blocks([16384] * 16 + [100] * 16, 0, 3, balanced_cap(four, 132, 8)) == [3] * 16 + [1] * 16
    # a ramp of 8 (256 ... 2048 tiles, 64 blocks): a level of 154 tiles (2, 4, ... 14 blocks; 63 dealt), where
    # session 22's cut-and-share deal left the shortest one a single block of 256 tiles
    assert balanced_blocks([32768 * (i + 1) // 8 for i in range(8)], 0, 8, 132) == [2, 4, 5, 7, 9, 10, 12, 14]
    g = np.random.default_rng(3)
    for _ in range(300):
        b, x, cap = int(g.integers(1, 70)), int(g.integers(1, 40)), int(g.integers(1, 200))
        lens = [int(v) for v in g.integers(0, 3) * g.integers(0, 40000, b)]
        win = int(g.choice([0, 0, 64, 5000]))
        got = balanced_blocks(lens, win, x, cap)
        tiles = [span_tiles(n, win) for n in lens]
        assert sum(got) <= b * x and len(got) == b, (lens, win, x)
        if min(tiles) == max(tiles):
            assert got == [x] * b
            continue
        n, ne, k = sum(tiles), sum(t > 0 for t in tiles), b * x
        kc = min(k, max(x * n // max(tiles), cap))
        kt = min(k, kc + sum(0 < t <= n // kc for t in tiles))
        assert sum(got) <= max(ne, kt), (sum(got), ne, kt)
        assert all((c == 0) if t == 0 else c >= 1 for t, c in zip(tiles, got)), (tiles, got)
        level = max(-(-t // c) for t, c in zip(tiles, got) if c)
        assert all(-(-t // level) == c for t, c in zip(tiles, got) if t), (tiles, got)  # no more blocks than needed
        if level > 1:  # one tile less a block takes more than Kt blocks (or more than one a sequence at ne > Kt)
            assert sum(-(-t // (level - 1)) for t in tiles) > max(kt, 0), (tiles, got, kt)


def test_launch_config_structs_match_cuda_h():
    """cuLaunchKernelEx's structs as cuda.h (CUDA 12/13, 64-bit) lays them out: CUlaunchAttribute is the id,
    4 bytes of padding and a 64-byte value union (72 bytes); CUlaunchConfig has 7 unsigned ints, the
    stream at byte 32, the attribute pointer at 40 and their count at 48 (56 bytes). A wrong offset would
    hand the driver a garbage stream or attribute list."""
    import ctypes

    from tqgen.cuda_launch import _PROGRAMMATIC_STREAM_SERIALIZATION, _LaunchAttr, _LaunchConfig
    assert ctypes.sizeof(_LaunchAttr) == 72 and _LaunchAttr.value.offset == 8
    assert ctypes.sizeof(_LaunchConfig) == 56
    assert (_LaunchConfig.smem.offset, _LaunchConfig.stream.offset, _LaunchConfig.attrs.offset,
            _LaunchConfig.num_attrs.offset) == (24, 32, 40, 48)
    assert _PROGRAMMATIC_STREAM_SERIALIZATION == 6  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    a = _LaunchAttr(id=_PROGRAMMATIC_STREAM_SERIALIZATION)
    a.value[0] = 1
    raw = bytes(a)
    assert raw[:4] == (6).to_bytes(4, "little") and raw[8:12] == (1).to_bytes(4, "little")


def test_kernel_params_point_at_each_argument_in_c_layout():
    """cuLaunchKernel reads argument i through kernelParams[i]: KernelParams.pack lays the values out at their C
    offsets (natural alignment: an int32 before an int64 or a pointer is padded to 8) and kernelParams[i] is the
    address of argument i, whose bytes read back as the value (pointers and int64 as 8 little-endian bytes, int32 4,
    float32 4 rounded from the float, the layout struct as its 16 int64); a second pack overwrites the same buffer. The
    offsets match the compiled kernels' own tables: tests/test_generated_cpp.py."""
    import ctypes
    import struct

    from tqgen.cuda_launch import PARAMS, KernelParams
    from tqgen.ir import LayoutSpec
    lay = tuple(layout_params(LayoutSpec.from_preset("4bit_nc", layout="soa"), 8))
    kp = KernelParams("PqifiL")
    assert kp.offsets == (0, 8, 16, 20, 24, 32) and kp.struct.size == 160
    ptrs = kp.pack((0x1234, -5, 7, 0.1, 9, *lay))
    assert ctypes.c_void_p.from_address(ptrs[0]).value == 0x1234 and ctypes.c_longlong.from_address(ptrs[1]).value == -5
    assert ctypes.c_int.from_address(ptrs[2]).value == 7 and ctypes.c_int.from_address(ptrs[4]).value == 9
    assert ctypes.c_float.from_address(ptrs[3]).value == struct.unpack("f", struct.pack("f", 0.1))[0]
    assert struct.unpack("16q", ctypes.string_at(ptrs[5], 128)) == lay
    again = kp.pack((0, 1, 2, 0.5, 3, *range(16)))
    assert list(again) == list(ptrs) and ctypes.c_void_p.from_address(ptrs[0]).value is None  # null: 0
    # the decode's: an int32 window then the 8-aligned layout, an int32 cap then the 8-aligned plan pointer
    dec = PARAMS["decode_split"]
    assert dec.offsets == (0, 8, 16, 24, 32, 40, 48, 56, 60, 64, 68, 72, 80, 208, 216)
    with pytest.raises(ValueError, match=r"unknown parameter codes \['d'\]"):
        KernelParams("Pd")
    with pytest.raises(struct.error):  # an int32 of 2^31: refused, not wrapped (a ctypes c_int wrapped it)
        kp.pack((0, 1, 2**31, 0.5, 3, *range(16)))


@pytest.mark.parametrize("value_bits", [2, 3, 4])
def test_exact_fp16_value_codes(value_bits):
    """The decode's P·V operand on the shuffle fragments (HIP, and the portable CUDA instance): the
    rendered kernel's fp16 constants turn (x & mask) | 1024.0 into the code itself for every code, low
    (at bit 0) and high (left at bit VB), in both halves: one fp16 fma (product and sum exact in
    float64, one rounding to fp16, as fma.rn.f16x2 rounds)."""
    import re

    spec = LayoutSpec.from_preset("4bit_nc", layout="soa", value_bits=value_bits)
    src = render_cuda(make_variant(spec, "sm90", "portable"))
    assert "vcode_lo = [=]" in src and "vcode_lo = [=]" in render_cuda(make_variant(spec, "gfx942"))
    consts = {}
    for name in ("H_ONE", "H_NEG_M", "H_HI", "H_NEG_MHI"):
        m = re.search(rf"constexpr uint32_t [^;]*\b{name} = ([^,;]+)[,;]", src)
        assert m, name
        expr = re.sub(r"\(uint32_t\)", "", m.group(1).replace("TQ_VBITS", str(value_bits)))
        consts[name] = eval(re.sub(r"(0x[0-9a-fA-F]+|\d+)u\b", r"\1", expr))  # noqa: S307 (C integer literals)

    def halves(w):
        return [np.array([(w >> s) & 0xFFFF], dtype=np.uint16).view(np.float16)[0] for s in (0, 16)]

    for hi, (a, b) in ((False, ("H_ONE", "H_NEG_M")), (True, ("H_HI", "H_NEG_MHI"))):
        for c in range(1 << value_bits):
            x = (0x6400 | (c << (value_bits if hi else 0))) * 0x10001
            got = [np.float16(float(xv) * float(av) + float(bv))
                   for xv, av, bv in zip(halves(x), halves(consts[a]), halves(consts[b]))]
            assert got == [c, c], (hi, c, got)



@pytest.mark.parametrize("value_bits", [2, 3, 4])
def test_subnormal_value_plan_is_rendered(value_bits):
    """The PTX decode kernel reads value codes as lower_cuda.value_windows plans them (checked code by
    code in test_value_windows_read_every_code): each m-tile's masks and selectors are in the source,
    and the epilogue's row scales PV_ROW are 2^(24-p) of the same plan (2^24, 2^(24-VB) where the
    codes are funnel-shifted to bit 0)."""
    import re

    from tqgen.lower_cuda import value_windows

    spec = LayoutSpec.from_preset("4bit_nc", layout="soa", value_bits=value_bits)
    src = render_cuda(make_variant(spec, "sm90"))
    plan = value_windows(value_bits, derive_layout(spec).vd)  # an eighth of vd bytes: vd bits
    m = re.search(r"constexpr float PV_ROW\[MV\]\[2\] = \{\n(.*?)\n  \};", src, re.S)
    assert m
    rows = [[float(x.rstrip("f")) for x in re.findall(r"[0-9.e+]+f", ln)] for ln in m.group(1).splitlines()]
    want = [[2.0 ** (24 - (w["lo"]["p"] if w else 0)), 2.0 ** (24 - (w["hi"]["p"] if w else value_bits))] for w in plan]
    assert rows == want
    for w in plan:
        if w:
            assert f"a[0] = l01 & {w['lo']['mask']}u; a[1] = h01 & {w['hi']['mask']}u;" in src
            assert f"{w['lo']['sel']}u);" in src


# (value bits, bits an eighth: head_dim 128 / 64, and 36 for 3-bit values at head_dim 96)
@pytest.mark.parametrize("vb,vbits", [(4, 64), (4, 32), (3, 48), (3, 24), (3, 36), (2, 32), (2, 64)])
def test_value_windows_read_every_code(vb, vbits):
    """lower_cuda.value_windows re-enacted: for random value eighths of two tokens, the byte permute
    (each selector nibble picks a byte of the pair of words) and the mask leave code 2mt (2mt + 1) of
    token x in the low half and of token y in the high half as the fp16 subnormal c·2^(p-24); times
    the epilogue's 2^(24-p) that is the code exactly. An m-tile without a window has a code that
    really straddles two 32-bit words."""
    from tqgen.lower_cuda import value_windows

    rng = np.random.default_rng(vb * 100 + vbits)
    nw = (vbits + 31) // 32
    plan = value_windows(vb, vbits)
    assert len(plan) == vbits // (2 * vb) and sum(w is not None for w in plan) >= len(plan) - 1
    for _ in range(20):
        tok = [rng.integers(0, 1 << 32, nw, dtype=np.uint64).astype(np.uint32) for _ in range(2)]
        stream = [sum(int(w) << (32 * i) for i, w in enumerate(t)) for t in tok]
        for mt, w in enumerate(plan):
            for which, code_index in (("lo", 2 * mt), ("hi", 2 * mt + 1)):
                want = [(x >> (vb * code_index)) & ((1 << vb) - 1) for x in stream]
                if w is None:
                    q = vb * 2 * mt
                    assert q // 32 != (q + 2 * vb - 1) // 32, mt  # the pair straddles a word boundary
                    continue
                c = w[which]
                pair = int(tok[0][c["word"]]) | int(tok[1][c["word"]]) << 32
                sel = int(c["sel"], 16)
                r = sum(((pair >> (8 * ((sel >> (4 * i)) & 7))) & 0xFF) << (8 * i) for i in range(4))
                r &= int(c["mask"], 16)
                halves = np.array([r & 0xFFFF, r >> 16], dtype=np.uint16).view(np.float16).astype(np.float64)
                assert c["p"] + vb <= 10  # inside the fp16 mantissa: a subnormal, exact
                assert list(halves * 2.0 ** (24 - c["p"])) == want, (mt, which, c)

def test_portable_transpose_is_the_m8n8_transpose():
    """tq_trans8 of the shuffle (portable / HIP) path, its source lanes and byte selects read from
    lower_cuda.MMA_DEFS and re-enacted over a 32-lane warp: every lane ends with its fragment of the
    transposed 8x8 matrix (thread 4i + j/2 holds row i, columns j, j + 1), which is what movmatrix
    gives the CUDA path and what the P·V B fragment needs."""
    import re

    from tqgen.lower_cuda import MMA_DEFS

    src = MMA_DEFS["shfl"][MMA_DEFS["shfl"].index("tq_trans8"):]
    lo_e, hi_e = re.findall(r"TQ_SHFL\(x, (.+?)\)[,;]", src)[:2]
    odd_sel, even_sel = (int(s, 16) for s in re.findall(r"TQ_PRMT\(lo, hi, (0x[0-9a-f]+)u\)", src)[:2])

    def prmt(a, b, sel):  # __byte_perm: result byte i = byte (sel >> 4i) & 7 of (b:a)
        both = a | (b << 32)
        return sum(((both >> (8 * ((sel >> (4 * i)) & 7))) & 0xFF) << (8 * i) for i in range(4))

    m = np.arange(64, dtype=np.uint32).reshape(8, 8) * 37 + 11  # 16-bit entries
    frag = [int(m[ln // 4, 2 * (ln % 4)]) | (int(m[ln // 4, 2 * (ln % 4) + 1]) << 16) for ln in range(32)]
    for ln in range(32):
        g, r = ln >> 2, ln & 3
        lo, hi = frag[eval(lo_e)], frag[eval(hi_e)]  # noqa: S307 (C integer expressions of g, r)
        got = prmt(lo, hi, odd_sel if g & 1 else even_sel)
        assert got == int(m[2 * r, g]) | (int(m[2 * r + 1, g]) << 16), ln


def test_options_take_field_value_changes():
    """CudaOptions.with_changes: the debug sweeps' field=value spelling (booleans 1/0/true/false); an unknown
    field or a missing '=' names the fields there are."""
    from tqgen.lower_cuda import CudaOptions
    o = CudaOptions().with_changes(["lazy_max=0", "stages=4", "dyn_smem=true"])
    assert (o.lazy_max, o.stages, o.dyn_smem) == (False, 4, True)
    assert CudaOptions().with_changes([]) == CudaOptions()
    for bad in ("bogus=1", "stages"):
        with pytest.raises(ValueError, match="decode_warps"):
            CudaOptions().with_changes([bad])


def test_head_groups_size_one_stage_for_the_block_and_free_the_split_count():
    """Head groups (CudaOptions.head_groups): the block's warps share one set of rows a stage (the group's
    AoS slots or SoA records side by side), so the dynamic shared memory holds stages x one group's rows
    (a warp per head: stages x warps x a slot's rows), SoA records' field runs once per warp, and at least
    the group's query octets; a block is one split, so split counts need not be multiples of its warps."""
    from tqgen.lower_cuda import _aos_shifts, _line_loads, decode_dynamic_smem, line_group, platform_for
    pf = platform_for(Target.SM90, "generic")
    aos = LayoutSpec.from_preset("k8v4", layout="aos", head_dim=128)
    soa = LayoutSpec.from_preset("k8v4", layout="soa", head_dim=128)
    grouped = CudaOptions(decode_warps=8, decode_min_blocks=1, head_groups=True, dyn_smem=True)
    per_warp = dataclasses.replace(grouped, head_groups=False)
    assert (grouped.split_step(), per_warp.split_step()) == (1, 8)
    assert (line_group(aos, grouped), line_group(soa, grouped), line_group(aos, per_warp)) == (8, 8, 1)
    g8, g1 = _line_loads(aos, pf, 8), _line_loads(aos, pf, 1)
    assert g8["nc"] == (max(_aos_shifts(aos)) + 8 * g8["slot"] + 15) // 16 and g8["ncp"] >= g8["nc"]
    assert decode_dynamic_smem(aos, Target.SM90, "generic", grouped) == 4 * max(3 * 16 * g8["ncp"] * 4, 8 * 8 * 128)
    assert decode_dynamic_smem(aos, Target.SM90, "generic", per_warp) == 4 * max(3 * 8 * 16 * g1["ncp"] * 4, 8 * 128)
    s8 = _line_loads(soa, pf, 8)
    assert s8["aos"] and s8["runs"] and s8["nmeta"] == 2 and s8["nc"] == 8 * 192 // 16
    assert decode_dynamic_smem(soa, Target.SM90, "generic", grouped) == 4 * max(
        3 * (16 * s8["ncp"] * 4 + 8 * 2 * 8), 8 * 8 * 128)  # rows, then 8 warps' two 32-byte runs
    for spec in (aos, soa):
        assert "#define TQ_GROUP_ROWS 1" in render_cuda(make_variant(spec, "sm90", options=grouped))
    assert "#define TQ_GROUP_ROWS 0" in render_cuda(make_variant(aos, "sm90", options=per_warp))
    assert [x.field for x in grouped.reasons(Target.GFX942)] == ["dyn_smem", "head_groups"]
    assert not dataclasses.replace(grouped, dyn_smem=False).reasons(Target.SM90)



@pytest.mark.parametrize("head_groups,warps", [(False, 2), (False, 4), (True, 2), (True, 4), (True, 8)])
def test_decode_grid_covers_every_split_head_and_octet_once(head_groups, warps):
    """The launcher's grid (cuda_launch.decode_grid) with the kernel's mapping of (block, warp) to (split, KV
    head, query octet) re-enacted (tq_decode_impl: with head_groups blockIdx.x is the split and warp w of head
    group blockIdx.y / QH takes head hg0 + w, a warp past the last head idle; else blockIdx.x · warps + warp is the
    split, past the last one idle): every (sequence, split, head, octet) is some warp's exactly once."""
    from tqgen.cuda_launch import decode_grid
    o = CudaOptions(decode_warps=warps, head_groups=head_groups)
    for splits, hk, g, b in ((1, 1, 1, 1), (3, 3, 3, 2), (7, 8, 4, 1), (64, 8, 4, 1), (5, 5, 9, 2), (6, 16, 16, 1)):
        gx, gy, gz = decode_grid(o, splits, hk, g, b)
        qh = -(-g // 8)
        seen = []
        for z in range(gz):
            for y in range(gy):
                for x in range(gx):
                    for warp in range(warps):
                        if head_groups:
                            split, head, octet = x, (y // qh) * warps + warp, y % qh
                        else:
                            split, head, octet = x * warps + warp, y // qh, y % qh
                        if split < splits and head < hk:
                            seen.append((z, split, head, octet))
        want = [(z, s_, h, q) for z in range(b) for s_ in range(splits) for h in range(hk) for q in range(qh)]
        assert sorted(seen) == want, (splits, hk, g, b)


def test_balanced_decode_launch_passes_the_merge_its_equal_length_count(monkeypatch):
    """The C++ decode's host side, on the CPU with a driver that records launches instead of running them: a balanced
    decode launches the `_bal` kernel on its grid width and the merge with num_splits = the equal-length count (on
    equal lengths the warp-a-row merge takes the rows bh · num_splits without reading the plan: passing the grid's
    wider count, as before session 26, would read the wrong rows) and its kind chosen for the grid's widest rows;
    the classic decode passes its count for both. GPU: tests/test_cuda_gpu.py checks the results."""
    from types import SimpleNamespace

    import torch

    from tqgen import reference as ref
    from tqgen.cuda_launch import CudaKernels, decode_grid, merge_kind

    class Recorder:
        def __init__(self):
            self.launches = []

        def launch(self, fn, grid, block, params, values, stream, smem=0, after_trigger=False):
            self.launches.append(SimpleNamespace(fn=fn, grid=grid, block=block, params=params, values=values))

    spec = preset_spec_for_target("4bit_nc", Target.SM90, layout="soa")
    v = make_variant(spec, Target.SM90)
    names = [n for pair in KERNEL_NAMES.values() for n in pair]
    kern = CudaKernels(v, Recorder(), {n: n for n in names})
    monkeypatch.setattr(CudaKernels, "_stream", staticmethod(lambda device: 0))
    monkeypatch.setattr("tqgen.cuda_launch.sm_count", lambda device: 132)  # the H200's (the CPU counts 1)
    step = v.options.split_step()
    # one sequence: the classic decode and the block-a-row merge, its block sized by the splits (merge_groups: 8
    # groups of D threads from 64 splits, 4 below; the kernel takes its groups from the block's size)
    from tqgen.cuda_launch import merge_groups
    assert [merge_groups(n) for n in (1, 32, 63, 64, 192)] == [4, 4, 4, 8, 8]
    # a block holds 1024 threads: at head_dim 256 both merges are 4 groups of 256 (8 would be an invalid launch)
    assert [merge_groups(n, 256) for n in (1, 64, 192)] == [4, 4, 4]
    assert all(merge_groups(n, d) * d <= 1024 for d in HEAD_DIMS for n in (1, 64, 192))
    cache1 = ref.allocate(spec, 256, 8, torch.device("cpu"))
    bt1, sl1 = torch.arange(256, dtype=torch.int32)[None], torch.tensor([4096], dtype=torch.int32)
    q1 = torch.zeros(1, 32, spec.head_dim, dtype=torch.bfloat16)
    for splits, groups in ((32, 4), (64, 8)):
        kern.driver.launches.clear()
        kern.decode(q1, cache1, bt1, sl1, num_splits=splits)
        dec, merge = kern.driver.launches
        assert dec.fn == KERNEL_NAMES["decode_split"][0] and merge.fn == KERNEL_NAMES["decode_merge"][0]
        assert merge.block == groups * spec.head_dim and merge.grid == (32, 1, 1), (splits, merge.block)
    b, hk, g, L = 64, 2, 8, 1024
    hq = hk * g
    cache = ref.allocate(spec, b * L // spec.block_size, hk, torch.device("cpu"))
    bt = torch.arange(b * L // spec.block_size, dtype=torch.int32).view(b, -1)
    sl = torch.full((b,), L, dtype=torch.int32)
    q = torch.zeros(b, hq, spec.head_dim, dtype=torch.bfloat16)
    splits = step  # one block a unit: a wide workspace's balanced grid is wider (balanced_width)
    for balanced, wide in ((True, False), (True, True), (False, False)):
        kern.driver.launches.clear()
        ws = kern.workspace(b, hq, splits, torch.device("cpu"), **({"num_kv_heads": hk} if wide else {}))
        kern.decode(q, cache, bt, sl, num_splits=splits, workspace=ws, balanced=balanced)
        dec, merge = kern.driver.launches
        grid = decode_grid(v.options, splits, hk, g, b)
        width = ws["acc"].shape[2] // step if balanced else grid[0]
        assert dec.fn == KERNEL_NAMES["decode_split_bal" if balanced else "decode_split"][0]
        assert dec.grid == (width,) + grid[1:], (balanced, wide, dec.grid)
        kind = merge_kind(b * hq, width * step)
        assert merge.fn == KERNEL_NAMES["decode_merge_rows" if kind == "rows" else "decode_merge"][0]
        # acc, lse, sinks, out, hq, num_splits (the equal-length count), ..., plan, seq_lens, window
        assert merge.values[4:6] == (hq, splits), (balanced, wide, merge.values)
        plan_ptr = merge.values[-3]
        assert (plan_ptr == ws["plan"].data_ptr()) if balanced else plan_ptr == 0
        # the wide workspace's grid is wider than the count (the case where the two counts differ)
        assert width > splits // step if wide else width == splits // step, (balanced, wide, width)
