"""tqgen.sass on hand-written SASS (no toolchain): the tile loop is the backward branch over the most
HMMAs that holds no EXIT; per-tile counts divide by D/8 HMMAs a tile; bad input says what was wrong."""

import pytest

from tqgen import sass
from tqgen.compile_cpp import ToolchainMissing

SAMPLE = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/              @!P0 BRA 0x90 ;
        /*0030*/                   HMMA.16816.F32 R4, R8, R12, R4 ;
        /*0040*/                   LDS R2, [R3] ;
        /*0050*/                   NOP ;
        /*0060*/                   HMMA.16816.F32 R4, R8, R12, R4 ;
        /*0070*/                   ISETP.GE.AND P0, PT, R0, R5, PT ;
        /*0080*/              @!P0 BRA 0x30 ;
        /*0090*/                   EXIT ;
        /*00a0*/                   WARPSYNC.COLLECTIVE R54, 0xb0 ;
        /*00b0*/                   HMMA.16816.F32 R4, R8, R12, R4 ;
        /*00c0*/                   HMMA.16816.F32 R4, R8, R12, R4 ;
        /*00d0*/                   BRA 0x10 ;
"""


def parsed():
    return [(int(m.group(1), 16), m.group(2), m.group(3).strip()) for m in map(sass._LINE.search, SAMPLE.splitlines())
            if m]


def test_parse_keeps_predicated_opcodes():
    ins = parsed()
    assert len(ins) == 14 and ins[2] == (0x20, "BRA", "0x90") and ins[3][1] == "HMMA.16816.F32"


def test_tile_loop_skips_branches_over_an_exit():
    # the stub at 0xd0 branches back over 4 HMMAs but also over the EXIT: the loop is 0x30..0x80 (2 HMMAs)
    assert sass.tile_loop(parsed()) == (0x30, 0x80)


def test_tile_profile_counts_per_tile(monkeypatch):
    monkeypatch.setattr(sass, "disassemble", lambda cubin, kernel=sass.DECODE_KERNEL: parsed())
    p = sass.tile_profile("x.cubin", head_dim=16)  # D/8 = 2 HMMAs a tile: one tile a trip
    assert p.tiles == 1 and p.per_tile == 5 and p.mix == {"HMMA": 2, "LDS": 1, "ISETP": 1, "BRA": 1}  # NOP left out
    assert p.hot_per_tile == 5  # no warp vote: nothing rare
    assert sass.tile_profile("x.cubin", head_dim=32).per_tile == 10  # 4 HMMAs a tile: half a tile a trip


RARE = """
        /*0000*/                   HMMA.16816.F32 R4, R8, R12, R4 ;
        /*0010*/                   FSETP.GT.AND P0, PT, R1, R2, PT ;
        /*0020*/                   VOTE.ANY P0, P0 ;
        /*0030*/                   FMUL R3, R3, R3 ;
        /*0040*/              @!P0 BRA 0x80 ;
        /*0050*/                   SHFL.BFLY PT, R5, R1, 0x4, 0x1f ;
        /*0060*/                   FMNMX R1, R1, R5, !PT ;
        /*0070*/                   FMUL R4, R4, R1 ;
        /*0080*/                   HMMA.16816.F32 R4, R8, R12, R4 ;
        /*0090*/                   BRA.DIV UR4, 0x200 ;
        /*00a0*/              @!P1 BRA 0x0 ;
        /*00b0*/                   EXIT ;
"""


def test_hot_count_leaves_out_the_block_behind_a_warp_vote(monkeypatch):
    ins = [(int(m.group(1), 16), m.group(2), m.group(3).strip()) for m in map(sass._LINE.search, RARE.splitlines())
           if m]
    monkeypatch.setattr(sass, "disassemble", lambda cubin, kernel=sass.DECODE_KERNEL: ins)
    p = sass.tile_profile("x.cubin", head_dim=16)  # loop 0x0..0xa0: 11 instructions, one tile
    # the first branch after the vote (an FMUL scheduled between) skips 0x50..0x70: 3 rare instructions
    assert p.loop == (0x0, 0xa0) and p.per_tile == 11 and p.hot_per_tile == 8


def test_no_loop_is_an_error():
    with pytest.raises(ValueError, match="no backward branch over HMMA"):
        sass.tile_loop([(0, "LDS", "R1, [R2]"), (16, "BRA", "0x0")])


def test_cuobjdump_env_must_be_executable(monkeypatch, tmp_path):
    monkeypatch.setenv("CUOBJDUMP", str(tmp_path / "nope"))
    with pytest.raises(ToolchainMissing, match="CUOBJDUMP=.*not an executable file"):
        sass.find_cuobjdump()


def test_nvdisasm_env_may_name_its_folder(monkeypatch, tmp_path):
    exe = tmp_path / "nvdisasm"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("NVDISASM_PATH", str(tmp_path))
    assert sass.find_nvdisasm() == exe
    monkeypatch.setenv("NVDISASM_PATH", str(tmp_path / "missing"))
    with pytest.raises(ToolchainMissing, match="NVDISASM_PATH=.*nvdisasm"):
        sass.find_nvdisasm()


def test_pipes_group_the_hot_path_by_issue_pipe():
    """TileProfile.pipes: the hot path's opcodes per tile summed by the sm_90 pipe they issue to (integer
    multiply-adds with the float arithmetic on the FMA pipe, shifts / logic / compares / selects / float min-max on
    the ALU pipe), unknown opcodes as other."""
    assert [sass.pipe_of(op) for op in ("LOP3.LUT", "SHF.R.U32.HI", "IMAD.HI.U32", "FFMA", "LDS.64", "HMMA.16816.F32",
                                        "SHFL.BFLY", "MUFU.EX2", "FSEL")] == \
        ["alu", "alu", "fma", "fma", "lsu", "tensor", "other", "other", "alu"]
    p = sass.TileProfile(per_tile=10.0, hot_per_tile=9.0, mix={}, tiles=1.0, loop=(0, 1), total=10,
                         hot_mix={"LOP3": 3.0, "PRMT": 1.5, "IMAD": 2.0, "HMMA": 2.0, "BRA": 0.5})
    assert p.pipes() == {"alu": 4.5, "fma": 2.0, "tensor": 2.0, "other": 0.5}
    assert sass.TileProfile(per_tile=1.0, hot_per_tile=1.0, mix={}, tiles=1.0, loop=(0, 1), total=1).pipes() == {}
