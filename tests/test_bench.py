"""`tqgen bench`: the smoke suite on the CPU (reference backend; Triton under TRITON_INTERPRET=1), its files and
columns, bytes-moved accounting against derive_layout, % of the copy ceiling = bytes / time / ceiling, the
targets evaluation, and clear errors for bad names. In-process through tqgen.cli.main.

Expected byte counts are worked out by hand in the comments (DESIGN §2: slot bytes per token-head).
"""

import json
import math
import os
import time
from pathlib import Path

import pytest

from tqgen import LayoutSpec, derive_layout
from tqgen.bench import (
    HOLD_MAX_US, HOLD_MIN_US, MAIN, SMOLLM2, GpuHold, Shape, Timer, decode_bytes, dequant_bytes, evaluate_targets,
    hold_us, pct_of_ceiling, prefill_bytes, prefill_lengths, rotation_for, store_bytes, suite_shapes,
)
from tqgen.cli import main
from tqgen.ir import SpecError

K = 1024
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"  # tests/conftest.py sets it where there is no GPU


def _bench(tmp_path, tag, *args):
    rc = main(["bench", "--suite", "smoke", "--device", "cpu", "--out", str(tmp_path), "--tag", tag, *args])
    res = json.loads((tmp_path / f"{tag}.json").read_text())
    md = (tmp_path / f"{tag}.md").read_text()
    return rc, res, md


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    return (tmp,) + _bench(tmp, "ref", "--backend", "reference", "--preset", "4bit_nc", "--preset", "k8v4")


def test_smoke_files_and_columns(smoke):
    tmp, rc, res, md = smoke
    assert rc == 0
    rows, meta = res["rows"], res["meta"]
    # 9 smoke shapes x 2 presets x 2 layouts, all measured by the oracle backend
    assert len(rows) == 36 and all(r["status"] == "ok" for r in rows), [r["status"] for r in rows]
    assert {r["op"] for r in rows} == {"decode", "store", "dequant", "prefill"}
    for key in ("op", "backend", "variant", "preset", "layout", "B", "L", "N", "Hq", "Hk", "D", "splits", "time_us",
                "min_us", "bytes", "GBps", "pct_ceiling", "sdpa_us", "vs_sdpa", "paged_us", "vs_paged", "mix",
                "classic_us", "vs_classic", "l2", "check", "status"):
        assert all(key in r for r in rows), key
    assert all(r["time_us"] > 0 and r["min_us"] <= r["time_us"] and r["check"] == "oracle" for r in rows
               if r["op"] != "prefill")
    assert {r["path"] for r in rows if r["op"] == "prefill"} == {"decode", "dequant+sdpa", "sdpa"}
    # mixed prefill batches: on the CPU the padding bound is 0 already (no classic timing to compare)
    mixed = [r for r in rows if r["op"] == "prefill" and r["mix"]]
    assert {r["mix"] for r in mixed} == {"prompts", "histories"} and len(mixed) == 8
    assert all(r["classic_us"] is None and r["vs_classic"] is None and r["time_us"] > 0 for r in mixed)
    assert all(r["sdpa_note"].startswith("one SDPA call over the batch padded") for r in mixed)
    for k in ("device", "torch", "triton", "copy_ceiling_GBps", "command", "date", "timing", "l2_policy", "sdpa"):
        assert k in meta, k
    assert meta["command"].startswith("tqgen bench --suite smoke")
    from tqgen.bench import source_digest
    assert meta["sources"] == source_digest() and f"sources {meta['sources']}" in md  # the code that ran, by content
    assert meta["paged_bf16_decode"].startswith("n/a")
    # markdown: header, one table per op, SDPA baselines
    for text in ("copy ceiling", "command: `tqgen bench --suite smoke", "## bf16 SDPA baselines", "## decode",
                 "## store", "## dequant", "## prefill", "| median us | min us | MB moved | GB/s | % ceiling |",
                 "| x SDPA | paged bf16 us | x paged bf16 |", "torch ", "triton "):
        assert text in md, text
    assert "## Issue 6 targets" not in md  # smoke covers no target shape
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert (tmp / "ref-decode-time.png").stat().st_size > 1000 and (tmp / "ref-decode-pct.png").exists()


def test_bytes_moved_match_derive_layout(smoke):
    _, _, res, _ = smoke
    rows = res["rows"]
    spec = LayoutSpec.from_preset("4bit_nc", layout="soa", head_dim=64)
    slot = derive_layout(spec).slot_bytes
    assert slot == 70  # D=64, 4-bit keys and values: 32 + 2 (norm) + 32 + 2 + 2
    # decode B=2 L=64 Hq=4 Hk=2 D=64: 2·64·2·70 packed + 2·4·64·2 query + the same output
    assert decode_bytes(spec, 2, 64, 4, 2) == (17920 + 1024, 1024)
    # store N=64 Hk=2: K+V 2·64·2·64·2 + slot mapping 64·4; written 64·2·70
    assert store_bytes(spec, 64, 2) == (32768 + 256, 8960)
    # dequant B=2 L=64: packed read; K and V 2·2·64·64 bf16 written
    assert dequant_bytes(spec, 2, 64, 2) == (17920, 65536)
    # prefill, 4 new tokens after 32 (decode path, one query per token over 33..36 tokens):
    # store 2·4·2·64·2 + 16 read, 4·2·70 written; history 2·70·(33+34+35+36); query/output 4·4·64·2 each
    assert prefill_bytes(spec, 1, 32, 4, 4, 2, decode_max_tokens=4) == (2064 + 140 * 138 + 2048, 560 + 2048, "decode")
    # 12 new tokens: dequant 44 tokens (packed read, bf16 written), SDPA reads the bf16 K/V
    kv16 = 2 * 44 * 2 * 64 * 2
    assert prefill_bytes(spec, 1, 32, 12, 4, 2, 4) == (6192 + 44 * 2 * 70 + kv16 + 6144, 1680 + kv16 + 6144,
                                                       "dequant+sdpa")
    # mixed batches: each sequence by its own path. 3 new prompts of 10 / 15 / 20 tokens (prefill_lengths: 20/2 .. 20):
    # the store of 45 tokens (2·2·64·2 + 4 read, 2·70 written a token), SDPA over each prompt's own bf16 K/V
    # (2·2·64·2 = 512 a token) + the query read (4·64·2 = 512 a token) and the output written (512 a token)
    assert prefill_lengths("prompts", 3, 0, 20) == ([0, 0, 0], [10, 15, 20])
    assert prefill_bytes(spec, 3, 0, 20, 4, 2, 4, ctxs=[0, 0, 0], news=[10, 15, 20]) == (
        45 * 516 + 45 * 1024, 45 * 140 + 45 * 512, "sdpa")
    # histories 16 / 24 / 32 then 12 new tokens each: three dequant+sdpa sequences; with 3 new tokens, decode; and
    # the equal batch is the per-sequence sum
    assert prefill_lengths("histories", 3, 32, 12) == ([16, 24, 32], [12, 12, 12])
    mix = prefill_bytes(spec, 3, 32, 12, 4, 2, 4, ctxs=[16, 24, 32], news=[12, 12, 12])
    one = [prefill_bytes(spec, 1, c, 12, 4, 2, 4) for c in (16, 24, 32)]
    assert mix == (sum(o[0] for o in one), sum(o[1] for o in one), "dequant+sdpa")
    assert prefill_bytes(spec, 2, 32, 4, 4, 2, 4)[:2] == tuple(2 * x for x in prefill_bytes(spec, 1, 32, 4, 4, 2, 4)[:2])
    # a batch of a new prompt and a continuation takes both paths, named in order
    assert prefill_bytes(spec, 2, 8, 3, 4, 2, 4, ctxs=[0, 8], news=[3, 3])[2] == "sdpa / decode"
    with pytest.raises(SpecError, match="prefill length mix"):
        prefill_lengths("ramp", 3, 32, 12)
    got = {(r["op"], r["B"], r["L"], r["N"]): r for r in rows
           if (r["preset"], r["layout"]) == ("4bit_nc", "soa") and not (r["op"] == "prefill" and r["mix"])}
    assert got[("decode", 2, 64, None)]["bytes"] == 17920 + 2048
    assert got[("store", None, None, 64)]["bytes"] == 33024 + 8960
    assert got[("dequant", 2, 64, None)]["bytes"] == 17920 + 65536
    assert got[("prefill", 1, 32, 4)]["bytes"] == sum(prefill_bytes(spec, 1, 32, 4, 4, 2, 4)[:2])
    # k8v4 at D=64: 64 fp8 key bytes + 32 + 4 = 100
    k8 = [r for r in rows if r["op"] == "decode" and r["preset"] == "k8v4" and r["L"] == 32]
    assert k8 and all(r["slot_bytes"] == 100 and r["bytes"] == 2 * 32 * 2 * 100 + 2048 for r in k8)
    # a mixed batch counts the tokens it has: B=3 one-long L=64 -> 64 + 2 + 2 tokens (L/32 = 2); query/output
    # 3·4·64·2 bytes each
    mixed = [r for r in rows if r.get("mix") == "one-long"]
    assert len(mixed) == 4 and all(r["B"] == 3 and r["L"] == 64 for r in mixed)
    assert decode_bytes(spec, 3, 64, 4, 2, lengths=[64, 2, 2]) == (68 * 2 * 70 + 1536, 1536)
    assert got[("decode", 3, 64, None)]["bytes"] == 68 * 2 * 70 + 3072
    # no SDPA equivalent; the reference backend has no balanced decode: no classic column
    assert all(r["sdpa_us"] is None and "mixed lengths" in r["sdpa_note"] and r["classic_us"] is None for r in mixed)


def test_hold_is_twice_the_longest_issue_time_within_bounds():
    assert hold_us([100e-6, 30e-6]) == pytest.approx(200.0)  # twice the longest, us
    assert hold_us([]) == HOLD_MIN_US == 20.0 and hold_us([1e-6]) == HOLD_MIN_US
    assert hold_us([5e-3]) == HOLD_MAX_US == 2000.0  # a call that waits on the GPU (a host read) is capped


def _busy(seconds: float) -> None:
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        pass


@pytest.mark.gpu
def test_timer_times_a_host_bound_call_as_its_gpu_work():
    """A call whose host work (300 us of busy wait before its one small kernel) outlasts its GPU work: without the
    hold the GPU waits on the host inside every rep's interval (>= the 300 us: the test's premise); behind the hold
    the interval is the kernel (a 4 KB add: a few us; 50 allows the launch's own latency). A GPU-bound call (a ~1 ms
    spin) times the same either way (within 10 %: the hold is not in its interval)."""
    import torch
    dev = torch.device("cuda", torch.cuda.current_device())
    x = torch.zeros(1024, device=dev)

    def host_bound():
        _busy(300e-6)
        x.add_(1)

    bare, _, _ = Timer(dev, 20, 3, hold=False)([host_bound], flush=False)
    held, _, _ = Timer(dev, 20, 3)([host_bound], flush=False)
    assert bare >= 300e-6, f"without the hold: {bare * 1e6:.1f} us (the premise: the GPU waits on the host)"
    assert held < 50e-6, f"behind the hold: {held * 1e6:.1f} us, the GPU work is a few us"
    cycles = int(1000 * GpuHold(dev).cycles_per_us())
    spin = lambda: torch.cuda._sleep(cycles)  # noqa: E731
    a, _, _ = Timer(dev, 10, 2, hold=False)([spin], flush=False)
    b, _, _ = Timer(dev, 10, 2)([spin], flush=False)
    assert 0.8e-3 < a < 1.25e-3 and abs(b / a - 1) < 0.1, (a, b)


def test_pct_ceiling_is_bytes_over_time_over_ceiling(smoke):
    _, _, res, _ = smoke
    ceiling = res["meta"]["copy_ceiling_GBps"] * 1e9
    copy = res["meta"]["copy"]
    assert math.isclose(ceiling, 2 * copy["bytes"] / (copy["median_us"] * 1e-6), rel_tol=1e-9)
    for r in res["rows"]:
        t = r["time_us"] * 1e-6
        assert math.isclose(r["GBps"], r["bytes"] / t / 1e9, rel_tol=1e-9)
        assert math.isclose(r["pct_ceiling"], 100 * r["bytes"] / t / ceiling, rel_tol=1e-9)
        assert math.isclose(r["pct_ceiling"], pct_of_ceiling(r["bytes"], t, ceiling), rel_tol=1e-12)
        # time x achieved bandwidth gives the bytes back
        assert math.isclose(t * r["pct_ceiling"] / 100 * ceiling, r["bytes"], rel_tol=1e-9)
        if r["op"] in ("decode", "dequant", "prefill") and r["sdpa_us"]:
            assert math.isclose(r["vs_sdpa"], r["sdpa_us"] / r["time_us"], rel_tol=1e-9)
        assert r["vs_paged"] is None  # no bf16 paged decode on a CPU


def test_mixed_prefill_timed_with_and_without_padding(tmp_path, monkeypatch):
    """A mixed prefill row is timed as the runtime runs it and with the padding bound at 0 (classic): here on the CPU
    with the GPU's bound forced on (the CPU's is 0, where there would be nothing to compare), the grouping sees both
    bounds, the rows carry classic us / x classic, and the runtime's bounds are restored after the run."""
    import tqgen_runtime.api as api
    monkeypatch.setattr(api, "PREFILL_PAD_SCORES_CPU", 2**25)
    gpu_bound = api.PREFILL_PAD_SCORES
    seen = []
    groups = api._pad_groups
    monkeypatch.setattr(api, "_pad_groups", lambda spans, hq, tb, pad: seen.append(pad) or groups(spans, hq, tb, pad))
    rc, res, _ = _bench(tmp_path, "pad", "--backend", "reference", "--preset", "4bit_nc", "--layout", "soa",
                        "--op", "prefill")
    assert rc == 0
    mixed = [r for r in res["rows"] if r["mix"]]
    assert len(mixed) == 2 and all(r["status"] == "ok" for r in mixed)
    assert all(r["classic_us"] > 0 and r["vs_classic"] == pytest.approx(r["classic_us"] / r["time_us"]) for r in mixed)
    assert {2**25, 0} <= set(seen)
    assert (api.PREFILL_PAD_SCORES_CPU, api.PREFILL_PAD_SCORES) == (2**25, gpu_bound)  # restored after the classic timing


def test_triton_interpreter_checked_and_cuda_unavailable(tmp_path):
    rc, res, md = _bench(tmp_path, "tri", "--backend", "triton", "--backend", "cuda", "--preset", "3bit_nc",
                         "--layout", "soa", "--op", "decode", "--op", "store", "--no-plot", "--l2-floor")
    assert rc == 0
    rows = res["rows"]
    cuda = [r for r in rows if r["backend"] == "cuda"]
    assert len(cuda) == 4 and all(r["status"].startswith("unavailable:") and "cuda" in r["status"] for r in cuda)
    assert "## Not measured" in md and "unavailable" in md
    tri = [r for r in rows if r["backend"] == "triton"]
    assert len(tri) == 4  # decode x 3 (one of mixed lengths: checked on its real lengths), store
    if not INTERPRET:
        assert all(r["status"].startswith("unavailable:") for r in tri)
        return
    assert all(r["status"] == "ok" and r["check"].startswith("ok") for r in tri), [(r["status"], r["check"])
                                                                                   for r in tri]
    assert all(r["variant"].startswith("triton-cpu-generic-soa-k3nc-v3") for r in tri)
    assert [r["splits"] for r in tri if r["op"] == "decode"] and all(
        r["splits"] >= 1 for r in tri if r["op"] == "decode")
    # --l2-floor: equal-length decodes also timed on a block table folded into half its blocks or fewer (sequences
    # sharing blocks), that call checked against the reference too; floor % = bytes / floor time / ceiling
    assert "--l2-floor" in res["meta"]["command"] and "| L2 floor us | floor % ceiling |" in md
    eq = [r for r in tri if r["op"] == "decode" and not r["mix"]]
    assert len(eq) == 2
    for r in eq:
        assert r["floor_check"].startswith("ok") and "L2 floor" not in r["check"], r["floor_check"]
        assert 1 <= r["floor_blocks"] <= r["B"] * -(-r["L"] // r["block_size"]) // 2
        ceiling = res["meta"]["copy_ceiling_GBps"] * 1e9
        assert math.isclose(r["floor_pct"], r["bytes"] / (r["floor_us"] * 1e-6) / ceiling * 100, rel_tol=1e-9)
    assert all(r["floor_us"] is None for r in tri if r["mix"] or r["op"] == "store")


@pytest.mark.parametrize("args,needle", [
    (["--preset", "5bit"], "unknown preset"),
    (["--layout", "csr"], "layout='csr' not supported"),
    (["--backend", "opencl"], "unknown backend"),
])
def test_bad_names_are_clear(args, needle, tmp_path, capsys):
    assert main(["bench", "--suite", "smoke", "--out", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert needle in err
    if "preset" in needle:
        assert "k8v4, 4bit_nc, k3v4_nc, 3bit_nc" in err
    assert not list(tmp_path.iterdir())  # nothing ran


def test_an_op_the_suite_lacks_is_clear(tmp_path, capsys):
    assert main(["bench", "--suite", "prefill", "--op", "store", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "op=['store'] not supported: one of prefill, dequant" in err and "leave --op out" in err
    assert not list(tmp_path.iterdir())  # nothing ran


def test_bad_suite_is_clear(capsys):
    with pytest.raises(SystemExit) as e:
        main(["bench", "--suite", "huge"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'huge'" in err and "targets" in err and "smoke" in err


def test_suites():
    t = suite_shapes("targets", 4)
    assert Shape("decode", 32, 32 * K, *MAIN) in t and Shape("decode", 128, 8 * K, *MAIN) in t
    assert Shape("decode", 1, 4 * K, *MAIN) in t and Shape("decode", 32, 32 * K, *SMOLLM2) in t
    assert sorted(s.n for s in t if s.op == "store") == [64 * K, 256 * K]
    assert len(t) == 6
    sw = suite_shapes("sweep", 4)
    assert {(s.b, s.l) for s in sw} == {(b, l) for b in (1, 32) for l in (K, 4 * K, 16 * K, 32 * K, 128 * K)}
    full = suite_shapes("full", 4)
    dec = [s for s in full if s.op == "decode" and not s.mix]
    assert len([s for s in full if s.mix]) == 7 * 3 * 2  # 7 head shapes x B 8/32/128 x 2 mixes at L=32K
    assert len(dec) == 7 * 5 * 4 and {s.hq // s.hk for s in dec} == {1, 3, 4, 8} and {s.d for s in dec} == {64, 128}
    # issue 6's list: head_dim 64 and 128, each at GQA 1, 4, 8 (8 KV heads), + the SmolLM2 shape
    assert {(s.d, s.hq // s.hk) for s in dec if s.hk == 8} == {(d, g) for d in (64, 128) for g in (1, 4, 8)}
    # head_dim 256 (Gemma's heads): decode at B=1 L=4K and B=32 L=8K / 32K, a 64K-token store; no issue 6 target
    h = suite_shapes("head256", 4)
    assert {(s.op, s.b, s.l, s.n) for s in h} == {("decode", 1, 4 * K, 0), ("decode", 32, 8 * K, 0),
                                                  ("decode", 32, 32 * K, 0), ("store", 0, 0, 64 * K)}
    assert all((s.hq, s.hk, s.d) == (16, 8, 256) for s in h)
    assert evaluate_targets([_row("decode", "4bit_nc", 10.0, 2.0, 32, 32 * K, heads=(16, 8, 256))]) == []
    # head_dim 96 (Phi-3-mini's heads, no power of two: the orthogonal rotation, the slot bytes the same)
    h = suite_shapes("head96", 4)
    assert {(s.op, s.b, s.l, s.n) for s in h} == {("decode", 1, 4 * K, 0), ("decode", 8, 8 * K, 0),
                                                  ("decode", 32, 4 * K, 0), ("store", 0, 0, 64 * K),
                                                  ("dequant", 8, 8 * K, 0)}
    assert all((s.hq, s.hk, s.d) == (32, 32, 96) for s in h)
    assert rotation_for(96, "4bit_nc") == {"rotation": "orthogonal"} and rotation_for(96, "k8v4") == {}
    # head_dim 80 (Phi-2's heads; C++ store and dequant since session 55): head96's shapes
    h = suite_shapes("head80", 4)
    assert {(s.op, s.b, s.l, s.n) for s in h} == {("decode", 1, 4 * K, 0), ("decode", 8, 8 * K, 0),
                                                  ("decode", 32, 4 * K, 0), ("store", 0, 0, 64 * K),
                                                  ("dequant", 8, 8 * K, 0)}
    assert all((s.hq, s.hk, s.d) == (32, 32, 80) for s in h)
    assert rotation_for(80, "4bit_nc") == {"rotation": "orthogonal"}
    assert rotation_for(128, "4bit_nc") == rotation_for(256, "3bit_nc") == {}
    spec = LayoutSpec.from_preset("4bit_nc", head_dim=96, **rotation_for(96, "4bit_nc"))
    assert store_bytes(spec, 1024, 32)[1] == 1024 * 32 * (48 + 2 + 48 + 4)  # codes + norm + values + scale / zero


def test_mixed_lengths():
    from tqgen.bench import mixed_lengths
    assert mixed_lengths("one-long", 4, 32 * K) == [32 * K, K, K, K]
    assert mixed_lengths("ramp", 4, 32 * K) == [8 * K, 16 * K, 24 * K, 32 * K]
    assert mixed_lengths("", 2, 7) == [7, 7]
    assert mixed_lengths("one-long", 3, 16) == [16, 1, 1]  # L/32 rounds down, at least one token
    with pytest.raises(SpecError, match="mix"):
        mixed_lengths("zipf", 4, 64)
    m = suite_shapes("mixed", 4)
    assert m and all(s.op == "decode" and s.mix and s.l == 32 * K for s in m)
    assert Shape("decode", 32, 32 * K, *MAIN, mix="one-long") in m
    assert Shape("decode", 32, 32 * K, *MAIN, mix="one-long").label() == "decode B=32 L=32768 mix=one-long Hq32 Hk8 D128"
    # the prefill suite: both prefill paths (4 and 512 new tokens), the dequant behind the longer chunks, and batches
    # of mixed lengths at B = 8 and 32: new prompts of up to 512 / 2048 tokens, 512-token chunks after up to 4K / 32K
    pf = suite_shapes("prefill", 4)
    assert {(s.op, s.n, s.mix) for s in pf} == {("prefill", 4, ""), ("prefill", 512, ""), ("dequant", 0, ""),
                                                ("prefill", 512, "prompts"), ("prefill", 2048, "prompts"),
                                                ("prefill", 512, "histories")}
    assert len(pf) == 3 * 2 * 2 + 3 * 2 + 2 * 2 + 2 * 2 and all((s.hq, s.hk, s.d) == MAIN for s in pf)
    assert {(s.b, s.l) for s in pf if s.mix == "histories"} == {(8, 4 * K), (8, 32 * K), (32, 4 * K), (32, 32 * K)}
    assert Shape("prefill", 8, 0, *MAIN, n=512, mix="prompts").label() == "prefill B=8 ctx=0 new=512 mix=prompts Hq32 Hk8 D128"
    # the targets are on equal lengths: a mixed row at a target shape is not evaluated
    r = _row("decode", "4bit_nc", 10.0, b=32, l=32 * K)
    assert evaluate_targets([dict(r, mix="one-long")]) == [] and evaluate_targets([r])


def test_plots_are_a_grid_of_head_shapes_by_batch(tmp_path):
    """The full suite's decode rows span 4 head shapes x 4 batch sizes: the plots put one row of panels per
    head shape and one column per batch (a single row of 16 panels would be ~100 inches wide)."""
    pytest.importorskip("matplotlib")
    import struct

    from tqgen.bench import write_plots

    heads = (MAIN, SMOLLM2)
    rows = [_row("decode", "4bit_nc", 50.0 + l // K, b=b, l=l, heads=h, t=10.0 * l / K)
            for h in heads for b in (1, 8, 32) for l in (K, 4 * K)]
    meta = dict(device="test GPU", copy_ceiling_GBps=4000.0, sdpa=[])
    files, note = write_plots(rows, meta, tmp_path, "grid")
    assert files == ["grid-decode-time.png", "grid-decode-pct.png"] and note == ""
    for f in files:
        head = (tmp_path / f).read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n"
        w, h = struct.unpack(">II", head[16:24])
        # 3 columns x 2 rows of 6.2 x 4.6 inch panels at 110 dpi
        assert (w, h) == (round(3 * 6.2 * 110), round(2 * 4.6 * 110)), (w, h)


def test_list_runs_nothing(tmp_path, capsys):
    assert main(["bench", "--suite", "targets", "--list", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "= 96 case(s)" in out and "decode B=32 L=32768 Hq32 Hk8 D128" in out and "rough H200 estimate" in out
    assert not list(tmp_path.iterdir())


def test_head_dim_selects_shapes(tmp_path, capsys):
    """--head-dim keeps the suite's shapes of that head_dim only (and is in the recorded command); a head_dim the suite
    does not have is refused with the ones it has."""
    assert main(["bench", "--suite", "full", "--op", "dequant", "--preset", "4bit_nc", "--layout", "soa",
                 "--backend", "cuda", "--head-dim", "64", "--list", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "D64" in out and "D128" not in out and "= 80 case(s)" in out  # 4 head shapes at D64 x 4 B x 5 L
    assert main(["bench", "--suite", "full", "--head-dim", "96", "--list", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "head_dim=96" in err and "one of 64, 128" in err and "leave --head-dim out" in err


def test_gqa_selects_shapes(tmp_path, capsys):
    """--gqa keeps the decode / prefill shapes with that many query heads a KV head (the full suite's head_dim-64
    GQA 3 rows alone: what a short device call can finish); shapes without queries (store, dequant) are left out, and
    a group the suite does not have, or --gqa on store / dequant shapes only, is refused with what there is."""
    assert main(["bench", "--suite", "full", "--op", "decode", "--head-dim", "64", "--gqa", "3", "--preset", "4bit_nc",
                 "--layout", "soa", "--backend", "cuda", "--list", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    cases = [line for line in out.splitlines() if line.strip().startswith("decode B=")]
    assert cases and all("Hq9 Hk3 D64" in line for line in cases), out
    assert main(["bench", "--suite", "full", "--gqa", "3", "--list", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "store N=" not in out and "dequant B=" not in out and "Hq9 Hk3" in out and "Hq32 Hk8" not in out
    assert main(["bench", "--suite", "full", "--op", "decode", "--gqa", "5", "--list", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "gqa=5" in err and "one of 1, 3, 4, 8" in err and "leave --gqa out" in err
    assert main(["bench", "--suite", "full", "--op", "store", "--gqa", "4", "--list", "--out", str(tmp_path)]) == 2
    assert "no query heads" in capsys.readouterr().err


def _row(op, preset, pct, vs=None, b=None, l=None, heads=MAIN, n=None, t=100.0, sdpa=None, status="ok", layout="soa"):
    hq, hk, d = heads
    return dict(op=op, backend="triton", preset=preset, layout=layout, B=b, L=l, N=n, Hq=hq, Hk=hk, D=d,
                pct_ceiling=pct, vs_sdpa=vs, time_us=t, sdpa_us=sdpa, status=status)


def test_targets_evaluation():
    rows = [
        _row("decode", "4bit_nc", 75.0, 2.6, 32, 32 * K),  # both PASS
        _row("decode", "3bit_nc", 71.0, 2.9, 128, 8 * K),  # bandwidth PASS, speed-up FAIL (needs 3x)
        _row("decode", "k8v4", 50.0, 2.1, 32, 32 * K, status="MISMATCH"),  # a wrong result always FAILs
        _row("decode", "4bit_nc", 5.0, None, 1, 4 * K, t=25.0, sdpa=17.0),  # 1.47x the SDPA time: PASS
        _row("decode", "4bit_nc", 60.0, None, 32, 32 * K, heads=SMOLLM2),  # 60 vs 75: 0.8x: PASS
        _row("store", "4bit_nc", 59.0, n=64 * K),  # FAIL
        _row("store", "4bit_nc", 61.0, n=256 * K),  # PASS
        _row("store", "4bit_nc", 10.0, n=16 * K),  # below 64K tokens: no target
    ]
    def kind(text):
        return next(k for k, w in (("lat", "no slower"), ("d64", "head_dim 64"), ("pct", "% of copy"), ("x", "x bf16"))
                    if w in text)

    res = {(kind(t["target"]), t["preset"], t["shape"]): t["result"] for t in evaluate_targets(rows)}
    assert res[("pct", "4bit_nc", "decode B=32 L=32768")] == "PASS"
    assert res[("x", "4bit_nc", "decode B=32 L=32768")] == "PASS"
    assert res[("pct", "3bit_nc", "decode B=128 L=8192")] == "PASS"
    assert res[("x", "3bit_nc", "decode B=128 L=8192")] == "FAIL"
    assert res[("pct", "k8v4", "decode B=32 L=32768")] == "FAIL"
    assert res[("x", "k8v4", "decode B=32 L=32768")] == "FAIL"
    assert res[("lat", "4bit_nc", "decode B=1 L=4096")] == "PASS"
    assert res[("d64", "4bit_nc", "decode B=32 L=32768 Hq9 Hk3 D64")] == "PASS"
    assert res[("pct", "4bit_nc", "store N=65536")] == "FAIL"
    assert res[("pct", "4bit_nc", "store N=262144")] == "PASS"
    assert len(res) == 10
    # --l2-floor rows: the floor rides along in the measured text (the result is the measured value's alone)
    fl = _row("decode", "3bit_nc", 66.0, 3.1, 32, 32 * K, t=300.0, sdpa=930.0)
    fl.update(floor_us=279.0, floor_pct=71.0)
    got = {kind(t["target"]): t for t in evaluate_targets([fl])}
    assert got["pct"]["measured"] == "66.0 % (L2 floor 71.0 %)" and got["pct"]["result"] == "FAIL"
    assert got["x"]["measured"] == "3.10x (L2 floor 3.33x)" and got["x"]["result"] == "PASS"


def test_source_digest_follows_the_sources(tmp_path):
    """tqgen.bench.source_digest hashes the package's .py / .j2 / .json files by relative path and content: the same
    tree gives the same digest, one changed byte or a renamed file another, other files none."""
    import shutil

    from tqgen.bench import source_digest
    pkg = Path(__file__).resolve().parents[1] / "tqgen"
    root = tmp_path / "tqgen"
    shutil.copytree(pkg, root, ignore=shutil.ignore_patterns("__pycache__"))
    base = source_digest(root)
    assert base == source_digest(pkg) and len(base) == 12
    (root / "notes.txt").write_text("not a source")
    assert source_digest(root) == base
    f = root / "templates" / "triton" / "kernels.py.j2"
    f.write_bytes(f.read_bytes() + b" ")
    assert source_digest(root) != base
    f.write_bytes(f.read_bytes()[:-1])
    assert source_digest(root) == base
    (root / "rotation.py").rename(root / "rotation2.py")
    assert source_digest(root) != base
