"""The decode split tuning tables (tqgen.tuning): lookup rules, staleness, errors, and the committed
H200 and H100 tables being live for today's launch options. CPU only (the tuner itself runs on the GPU:
``tqgen tune``; tests/test_cuda_gpu.py decodes at the split counts the table gives)."""

import json
import math

import pytest
import torch

from tqgen import tuning
from tqgen.build import preset_spec_for_target
from tqgen.cli import main
from tqgen.ir import Target
from tqgen.lower_cuda import cuda_options, make_variant
from tqgen.tuning import PACKAGE_DIR, RADIUS, Point, TableError, VariantTable

PRESETS = ("k8v4", "4bit_nc", "k3v4_nc", "3bit_nc")


def _table(points, warps_options=None):
    return VariantTable("k", warps_options or {}, {}, tuple(Point(u, t, s, 1.0, s, 1.0) for u, t, s in points))


def test_lookup_takes_the_nearest_point_within_the_radius():
    t = _table([(8, 64, 16), (256, 2048, 4), (1024, 512, 6), (256, 512, 8)])
    assert t.splits_for(256, 32768, 2) == 4           # exact point
    assert t.splits_for(256, 2048 * 16 * 1.9, 2) == 4  # < 1 octave off in tiles
    assert t.splits_for(200, 8192, 2) == 8            # nearest of (256, 512) and (1024, 512) in log2
    assert t.splits_for(8, 1024, 2) == 16             # (8, 64)
    # more than RADIUS octaves from every point on some axis: the heuristic decides
    assert RADIUS == 1.0
    assert t.splits_for(8, 16 * 64 * 2 ** 1.5, 2) is None
    assert t.splits_for(3000, 8192, 2) is None
    assert t.splits_for(0, 8192, 2) is None


def test_lookup_respects_the_cap_and_the_block_warps():
    """A point timed at 4096 tokens may be used at 2300 or 1100 (inside the radius): the count is clamped to the
    request's cap for measured counts (half its tiles: TUNED_MIN_TILES; the heuristic keeps a quarter) and rounded
    down to whole blocks."""
    t = _table([(8, 256, 64), (32, 256, 6)])
    assert tuning.TUNED_MIN_TILES == 2
    assert tuning.split_cap(2300, 2) == 36  # 144 tiles: a quarter (the heuristic's cap)
    assert tuning.split_cap(2300, 2, tuning.TUNED_MIN_TILES) == 72  # half: a measured count's
    assert t.splits_for(8, 2300, 2) == 64  # the point's own count fits under 72
    assert t.splits_for(8, 2300 // 2, 2) is None  # 72 tiles: more than RADIUS octaves from 256
    assert t.splits_for(8, 2100, 2) == 64  # 132 tiles: cap 66, the point's 64 under it
    assert _table([(8, 256, 96)]).splits_for(8, 2100, 4) == 64  # clamped to 66, then whole 4-warp blocks
    assert t.splits_for(32, 4096, 4) == 4  # 6 is not a whole number of 4-warp blocks
    for units in (4, 8, 16, 32, 64):
        for L in (1500, 2300, 4096, 8000):
            for w in (1, 2, 4, 8):
                s = t.splits_for(units, L, w)
                assert s is None or (s % w == 0 and w <= s <= tuning.split_cap(L, w, tuning.TUNED_MIN_TILES)), \
                    (units, L, w, s)


def test_ties_break_towards_the_smaller_point():
    t = _table([(16, 256, 2), (64, 256, 8)])  # units 32 is one octave from both
    assert t.splits_for(32, 4096, 2) == 2


def _variant(preset="k8v4", layout="aos", head_dim=128):
    return make_variant(preset_spec_for_target(preset, Target.SM90, layout=layout, head_dim=head_dim), Target.SM90)


def _write(dirpath, device, variant, points, options=None):
    t = VariantTable(tuning.variant_key(variant), options or variant.options.to_dict(),
                     {"preset": variant.spec.preset_name, "layout": str(variant.spec.layout),
                      "head_dim": variant.spec.head_dim, "num_q_heads": 32, "num_kv_heads": 8},
                     tuple(Point(u, t, s, 1.0, s, 1.0) for u, t, s in points))
    tuning.write_table(dirpath / f"{tuning.device_slug(device)}.json", device, {t.key: t}, "test")


def test_tuned_splits_reads_the_first_table_and_ignores_stale_options(tmp_path, monkeypatch):
    v = _variant()
    monkeypatch.setenv("TQGEN_TUNING_DIR", str(tmp_path / "env"))
    monkeypatch.setenv("TQGEN_CACHE_DIR", str(tmp_path / "cache"))
    _write(tmp_path / "cache" / "tuned", "Test GPU", v, [(256, 2048, 10)])
    assert tuning.tuned_splits(v, "Test GPU", 256, 32768) == 10
    _write(tmp_path / "env", "Test GPU", v, [(256, 2048, 12)])  # $TQGEN_TUNING_DIR comes first
    assert tuning.tuned_splits(v, "Test GPU", 256, 32768) == 12
    assert tuning.tuned_splits(v, "Other GPU", 256, 32768) is None  # no table for that device
    assert tuning.tuned_splits(_variant(layout="soa"), "Test GPU", 256, 32768) is None  # nor that variant
    stale = dict(v.options.to_dict(), decode_min_blocks=v.options.decode_min_blocks + 1)
    _write(tmp_path / "env", "Test GPU", v, [(256, 2048, 12)], options=stale)
    assert tuning.tuned_splits(v, "Test GPU", 256, 32768) is None  # timed with other launch options


def test_a_partial_tune_merges_its_points_into_the_entry(tmp_path):
    """tqgen tune --batch 1 --seq-len 2048 adds (or refreshes) those points and keeps the variant's others; an entry
    timed with other launch options is replaced whole (its other points are stale)."""
    v = _variant()
    path = tmp_path / "test-gpu.json"
    _write(tmp_path, "Test GPU", v, [(8, 64, 16), (8, 256, 64), (256, 2048, 8)])
    _write(tmp_path, "Test GPU", v, [(8, 128, 64), (8, 64, 32)])  # a new point and a refreshed one
    t = tuning._parse(path, path.read_text())[1][tuning.variant_key(v)]
    assert [(p.units, p.tiles, p.splits) for p in t.points] == [(8, 64, 32), (8, 128, 64), (8, 256, 64),
                                                                  (256, 2048, 8)]
    assert t.splits_for(8, 2048, 2) == 64  # the new 2K point, not the 1K one's count
    assert json.loads(path.read_text())["command"] == "test"  # the same command once
    stale = dict(v.options.to_dict(), decode_min_blocks=v.options.decode_min_blocks + 1)
    _write(tmp_path, "Test GPU", v, [(8, 128, 32)], options=stale)
    t = tuning._parse(path, path.read_text())[1][tuning.variant_key(v)]
    assert [(p.units, p.tiles, p.splits) for p in t.points] == [(8, 128, 32)]
    tuning.write_table(path, "Test GPU", {}, "tqgen tune --batch 1")  # a later command is recorded after the first
    assert json.loads(path.read_text())["command"] == "test; then tqgen tune --batch 1"
    tuning.write_table(path, "Test GPU", {}, "tqgen tune --batch 1")  # the same tune's next variant: kept once
    assert json.loads(path.read_text())["command"] == "test; then tqgen tune --batch 1"


def test_the_heuristic_keeps_four_tiles_a_split():
    """decode_splits (no table) stays at a quarter of the tiles: at B=1 and 4K tokens, 128 splits (two tiles each)
    measured 7-13 % slower than 64 on the H200 (run 8 of bench/results/h200-2026-12-04-fixed-cost-parts.md)."""
    from tqgen.cuda_launch import decode_splits
    for L in (1024, 2048, 4096, 8192):
        for w in (2, 4):
            assert decode_splits(8, L, 132 * 16, w) <= tuning.split_cap(L, w)


def test_num_splits_for_prefers_the_table_then_the_heuristic(tmp_path, monkeypatch):
    from tqgen.cuda_launch import CudaKernels
    v = _variant()
    monkeypatch.setenv("TQGEN_TUNING_DIR", str(tmp_path))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Test GPU")
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device=None: type("P", (), {"multi_processor_count": 132})())
    kern = CudaKernels(variant=v, driver=None, functions={})
    dev = torch.device("cuda", 0)
    heur = kern.heuristic_splits(32, 8, 32768, dev)
    assert kern.num_splits_for(32, 8, 32768, dev) == heur  # no table yet
    _write(tmp_path, "Test GPU", v, [(256, 2048, heur + 2)])
    assert kern.num_splits_for(32, 8, 32768, dev) == heur + 2
    assert kern.num_splits_for(32, 8, 32768, torch.device("cpu")) == kern.heuristic_splits(32, 8, 32768,
                                                                                          torch.device("cpu"))


@pytest.mark.parametrize("text,what", [
    ("{not json", "not JSON"),
    ('{"schema": 99, "variants": {}}', "schema 99"),
    ('{"schema": 1, "variants": {"x": {"options": {}, "points": [[1, 2, 3]]}}}', "variant 'x'"),
    ('{"schema": 1, "variants": {"x": {"options": {}, "points": [[0, 2, 3, 1.0, 3, 1.0]]}}}', ">= 1"),
])
def test_a_broken_table_says_which_file_what_and_what_to_do(tmp_path, monkeypatch, text, what):
    (tmp_path / "test-gpu.json").write_text(text)
    monkeypatch.setenv("TQGEN_TUNING_DIR", str(tmp_path))
    with pytest.raises(TableError) as e:
        tuning.tuned_splits(_variant(), "Test GPU", 256, 32768)
    msg = str(e.value)
    assert str(tmp_path / "test-gpu.json") in msg and what in msg and "tqgen tune" in msg


def test_device_slug():
    assert tuning.device_slug("NVIDIA H200") == "nvidia-h200"
    assert tuning.device_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    with pytest.raises(TableError):
        tuning.device_slug("  ")


@pytest.mark.parametrize("table", ["nvidia-h200.json", "nvidia-h100-80gb-hbm3.json"])
def test_the_committed_tables_are_live_and_complete(table):
    """Every default sm90 decode at head_dim 128 and 64 has an entry timed with today's launch options
    (an option change without a re-tune fails here: re-run `tqgen tune` on that GPU, or drop the entry
    with `tqgen tune --prune --out tqgen/tuned`), and every point is a valid split count."""
    path = PACKAGE_DIR / table
    assert sorted(f.name for f in PACKAGE_DIR.glob("*.json")) == ["nvidia-h100-80gb-hbm3.json", "nvidia-h200.json"]
    assert tuning.stale_entries(path) == []
    tables = tuning._parse(path, path.read_text())[1]
    for d in (128, 64):
        hq, hk = tuning.DEFAULT_HEADS[d]
        for preset in PRESETS:
            for layout in ("aos", "soa"):
                v = _variant(preset, layout, d)
                t = tables[tuning.variant_key(v)]
                assert tuning.options_match(t.options, cuda_options(v.spec, Target.SM90).to_dict())
                assert (t.shape["num_q_heads"], t.shape["num_kv_heads"]) == (hq, hk)
                w = v.options.split_step()  # a multiple of the block's warps (1 with head groups)
                # every grid point whose caches fit the tuner's memory limit
                fits = [(b * hk, tuning.tiles_of(L)) for b in tuning.DEFAULT_BATCHES for L in tuning.DEFAULT_SEQ_LENS
                        if math.prod(tuning.grid_cache(v.spec, hk, b, L)) <= tuning.MAX_TUNE_BYTES]
                assert set(fits) <= {(p.units, p.tiles) for p in t.points}  # (partial tunes may add points)
                for p in t.points:
                    assert p.units % hk == 0 and p.splits % w == 0
                    assert p.splits <= tuning.split_cap(p.tiles * 16, w, tuning.TUNED_MIN_TILES)
                    # the tuner keeps the heuristic's count unless another one was measurably faster
                    assert p.splits == p.heuristic or p.us < (1 - tuning.KEEP_HEURISTIC_WITHIN) * p.heuristic_us
                    assert p.us <= p.heuristic_us and math.isfinite(p.us)


def test_prune_drops_only_stale_entries(tmp_path, capsys):
    live, old = _variant("4bit_nc", "soa"), _variant("k8v4", "soa")
    _write(tmp_path, "Test GPU", live, [(256, 2048, 8)])
    _write(tmp_path, "Test GPU", old, [(256, 2048, 8)], options=dict(old.options.to_dict(), decode_warps=8))
    assert main(["tune", "--prune", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "dropped " + tuning.variant_key(old) in out and "decode_warps 8 -> 2" in out
    left = json.loads((tmp_path / "test-gpu.json").read_text())["variants"]
    assert list(left) == [tuning.variant_key(live)]


def test_tune_without_a_gpu_says_what_to_do(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["tune"]) == 2
    err = capsys.readouterr().err
    assert "needs an NVIDIA GPU" in err and "--prune" in err


def test_tune_rejects_an_untuned_head_dim(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Test GPU")
    monkeypatch.setattr("tqgen.cuda_launch.device_arch", lambda dev: "sm90")
    assert main(["tune", "--head-dim", "72"]) == 2
    err = capsys.readouterr().err
    assert "--head-dim [72]" in err and "[128, 64, 256, 96, 80]" in err


def test_the_h100_table_has_head_dim_256():
    """Session 47 tuned the eight sm90 head_dim-256 decodes on the H100 (`tqgen tune --head-dim 256`, Hq 16 Hk 8:
    bench/results/h100-2026-12-06-head256-tuned-graph.md); each entry is live (test above: no stale entries) and names
    its shape."""
    path = PACKAGE_DIR / "nvidia-h100-80gb-hbm3.json"
    tables = tuning._parse(path, path.read_text())[1]
    for preset in PRESETS:
        for layout in ("aos", "soa"):
            v = _variant(preset, layout, 256)
            t = tables[tuning.variant_key(v)]
            assert (t.shape["head_dim"], t.shape["num_q_heads"], t.shape["num_kv_heads"]) == (256, 16, 8)
            assert t.points and all(p.splits % v.options.split_step() == 0 for p in t.points)


def test_an_option_added_later_at_its_default_keeps_an_entry_live():
    """options_match: an entry timed before a CudaOptions field existed matches while the field keeps its
    default, and not once it is changed; an entry naming a field the options no longer have never matches."""
    import dataclasses

    from tqgen.lower_cuda import CudaOptions
    from tqgen.tuning import options_match
    now = CudaOptions().to_dict()
    old = {k: v for k, v in now.items() if k != "lazy_max"}  # as a table timed before lazy_max existed
    assert options_match(old, now) and options_match(now, now)
    assert not options_match(old, dataclasses.replace(CudaOptions(), lazy_max=False).to_dict())
    assert not options_match(dict(now, gone=1), now)
    assert not options_match(dict(old, stages=2), now)


def test_store_and_dequant_options_leave_an_entry_live():
    """The decode's split counts stay measured when only options the decode does not read change (the store's and
    the dequant's launch shapes: tuning.DECODE_BLIND); a decode option still makes an entry stale. (An sm90
    override moving dequant_rows had dropped every 4-bit-value variant's table entry: heuristic splits silently.)"""
    import dataclasses

    from tqgen.lower_cuda import CudaOptions
    from tqgen.tuning import DECODE_BLIND, options_match
    now = CudaOptions().to_dict()
    old = {k: v for k, v in now.items() if k != "dequant_rows"}  # timed before the field existed
    for change in (dict(dequant_rows=2), dict(dequant_rows=0, dequant_tokens=8), dict(row_warps=8)):
        assert options_match(old, dataclasses.replace(CudaOptions(), **change).to_dict()), change
    assert not options_match(old, dataclasses.replace(CudaOptions(), decode_warps=4).to_dict())
    assert DECODE_BLIND <= set(now)  # every name is a field


def test_the_tuner_times_the_runtime_workspace(monkeypatch):
    """The tuner's workspace is the runtime's (Engine.workspace passes num_kv_heads for the C++ decode): at a count
    of one block a unit (SoA 3bit_nc: 4 splits = one 4-warp block) and B >= 2, it has room for the balanced decode's
    wider grid, so CudaKernels.decode takes that grid in the tuner as it does for a request; the workspace without
    num_kv_heads (the tuner's until session 41) had none and timed the classic grid, up to 1.25x faster on an H100
    (bench/results/h100-2026-12-05-tune-gap.md), so the table picked counts whose real launch was slower."""
    import torch

    from tqgen import cuda_launch
    from tqgen.build import preset_spec_for_target
    from tqgen.cuda_launch import CudaKernels
    from tqgen.ir import Target
    from tqgen.lower_cuda import make_variant
    from tqgen.tuning import tune_workspace

    monkeypatch.setattr(cuda_launch, "sm_count", lambda device: 132)  # an H100 / H200
    v = make_variant(preset_spec_for_target("3bit_nc", Target.SM90, layout="soa"), Target.SM90)
    kern = CudaKernels(v, driver=None, functions={})
    b, hq, hk, splits = 32, 32, 8, v.options.split_step()  # one block a unit
    q = torch.zeros(b, hq, 128)
    cache = torch.zeros(1, 1, hk, 1, dtype=torch.uint8)  # only its KV-head count is read
    ws = tune_workspace(kern, q, cache, splits, "cpu")
    engine_ws = kern.workspace(b, hq, splits, "cpu", num_kv_heads=hk)  # tqgen_runtime Engine.workspace's call
    assert ws["acc"].shape == engine_ws["acc"].shape and ws["num_splits"] == splits
    wide = kern.balanced_grid_width(b, hk, hq // hk, splits, "cpu")
    assert wide > 1 and ws["acc"].shape[2] == wide * splits  # room for the balanced grid: the launch a request runs
    assert kern.workspace(b, hq, splits, "cpu")["acc"].shape[2] == splits  # the old workspace: the classic grid only
