"""Engine helpers: boundary layers kept in bf16 (vLLM's rules) and one page pool per cache format."""

import pathlib
import subprocess
import sys
from types import SimpleNamespace

import pytest

import tqgen
from tqgen_runtime.engine import (
    KNOWN_LAYER_TYPES, LayerGroup, attention_layers, boundary_skip_layers, from_hf_config, is_hybrid,
    plan_layer_groups,
)

ENGINE_PY = pathlib.Path(__file__).resolve().parents[1] / "runtime" / "engine.py"


# ------------------------------------------------------------------ dense models
def test_dense_30_layers_default_n2():
    assert boundary_skip_layers(30) == [0, 1, 28, 29]
    assert boundary_skip_layers(30, n=2) == [0, 1, 28, 29]


def test_dense_4_layers_capped_to_one_each_side():
    assert boundary_skip_layers(4, n=2) == [0, 3]


@pytest.mark.parametrize("num_layers", [0, 1, 2, 3])
def test_tiny_models_skip_nothing(num_layers):
    assert boundary_skip_layers(num_layers) == []


def test_n0_skips_nothing():
    assert boundary_skip_layers(30, n=0) == []


@pytest.mark.parametrize("num_layers,n,expected", [
    (8, 5, [0, 1, 6, 7]),            # cap 8 // 4 = 2
    (12, 100, [0, 1, 2, 9, 10, 11]),  # cap 3
    (5, 3, [0, 4]),                   # cap 1
    (32, 3, [0, 1, 2, 29, 30, 31]),   # under the cap: n as given
])
def test_n_larger_than_allowed_is_capped(num_layers, n, expected):
    assert boundary_skip_layers(num_layers, n=n) == expected


@pytest.mark.parametrize("num_layers", range(0, 41))
@pytest.mark.parametrize("n", [0, 1, 2, 3, 8, 50])
def test_cap_rule_never_skips_more_than_half(num_layers, n):
    skip = boundary_skip_layers(num_layers, n=n)
    k = min(n, num_layers // 4)
    assert skip == list(range(k)) + list(range(num_layers - k, num_layers))
    assert len(skip) <= num_layers // 2
    assert len(set(skip)) == len(skip)  # first and last never overlap


def test_full_plus_sliding_mix_is_dense():
    types = ["sliding_attention", "full_attention"] * 5
    assert not is_hybrid(10, layer_types=types)
    assert attention_layers(10, layer_types=types) == list(range(10))
    assert boundary_skip_layers(10, layer_types=types) == [0, 1, 8, 9]


def test_all_full_attention_layer_types_is_dense():
    assert boundary_skip_layers(30, layer_types=["full_attention"] * 30) == [0, 1, 28, 29]


def test_type_strings_case_insensitive():
    assert boundary_skip_layers(4, layer_types=["Full_Attention", "SLIDING_ATTENTION"] * 2) == [0, 3]


# ------------------------------------------------------------------ hybrid models
def test_hybrid_layer_types_with_mamba():
    types = ["mamba", "mamba", "mamba", "full_attention"] * 8
    assert is_hybrid(32, layer_types=types)
    assert attention_layers(32, layer_types=types) == [3, 7, 11, 15, 19, 23, 27, 31]
    assert boundary_skip_layers(32, layer_types=types) == []


def test_hybrid_layer_types_linear_attention_qwen3_next():
    types = ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 12
    assert boundary_skip_layers(48, layer_types=types) == []


def test_hybrid_single_non_attention_layer_is_enough():
    types = ["full_attention"] * 29 + ["conv"]
    assert is_hybrid(30, layer_types=types)
    assert boundary_skip_layers(30, layer_types=types) == []


def test_hybrid_layers_block_type_jamba():
    blocks = (["mamba"] * 4 + ["attention"] + ["mamba"] * 3) * 4
    assert is_hybrid(32, layers_block_type=blocks)
    assert attention_layers(32, layers_block_type=blocks) == [4, 12, 20, 28]
    assert boundary_skip_layers(32, layers_block_type=blocks) == []


def test_all_attention_layers_block_type_is_dense():
    assert boundary_skip_layers(8, layers_block_type=["attention"] * 8) == [0, 1, 6, 7]


def test_minimax_attn_type_list_with_zeros_is_hybrid():
    attn = [0] * 7 + [1]
    attn = attn * 10
    assert is_hybrid(80, attn_type_list=attn)
    assert attention_layers(80, attn_type_list=attn) == list(range(7, 80, 8))
    assert boundary_skip_layers(80, attn_type_list=attn) == []


def test_minimax_all_ones_is_dense():
    assert not is_hybrid(30, attn_type_list=[1] * 30)
    assert boundary_skip_layers(30, attn_type_list=[1] * 30) == [0, 1, 28, 29]


def test_no_lists_means_all_attention():
    assert attention_layers(5) == [0, 1, 2, 3, 4]
    assert not is_hybrid(5)


def test_agreeing_lists_accepted():
    types = ["linear_attention", "full_attention"] * 2
    assert attention_layers(4, layer_types=types, attn_type_list=[0, 1, 0, 1]) == [1, 3]


# ------------------------------------------------------------------ errors
def test_mismatched_length_raises_with_message():
    with pytest.raises(ValueError) as e:
        boundary_skip_layers(30, layer_types=["full_attention"] * 29)
    msg = str(e.value)
    assert "layer_types" in msg and "29" in msg and "30" in msg and "num_hidden_layers" in msg


@pytest.mark.parametrize("kw", [dict(layers_block_type=["attention"] * 3),
                                dict(attn_type_list=[1] * 5)])
def test_mismatched_length_other_lists(kw):
    name = next(iter(kw))
    with pytest.raises(ValueError, match=f"{name} has .* entries but num_layers is 4"):
        boundary_skip_layers(4, **kw)


def test_unknown_type_raises_listing_known_types():
    with pytest.raises(ValueError) as e:
        boundary_skip_layers(3, layer_types=["full_attention", "retention", "full_attention"])
    msg = str(e.value)
    assert "'retention'" in msg and "layer_types[1]" in msg
    for known in ("full_attention", "sliding_attention", "linear_attention", "mamba"):
        assert known in msg
    assert all(t in msg for t in KNOWN_LAYER_TYPES)


def test_unknown_block_type_raises():
    with pytest.raises(ValueError, match=r"layers_block_type\[0\] is 'transformer'"):
        is_hybrid(2, layers_block_type=["transformer", "mamba"])


@pytest.mark.parametrize("bad", [2, -1, "1", 0.5])
def test_bad_attn_type_value_raises(bad):
    with pytest.raises(ValueError, match=r"attn_type_list\[1\].*allowed: 1 .* or 0"):
        boundary_skip_layers(3, attn_type_list=[1, bad, 1])


def test_negative_n_raises():
    with pytest.raises(ValueError, match=r"n must be a non-negative integer; given -1.*n=0"):
        boundary_skip_layers(30, n=-1)


@pytest.mark.parametrize("bad", [-1, 2.0, True, "30"])
def test_bad_num_layers_raises(bad):
    with pytest.raises(ValueError, match="num_layers must be a non-negative integer"):
        boundary_skip_layers(bad)


def test_layer_types_must_be_a_list():
    with pytest.raises(ValueError, match="layer_types must be a list"):
        attention_layers(1, layer_types="full_attention")


def test_disagreeing_lists_raise():
    with pytest.raises(ValueError, match="layer_types and attn_type_list disagree at layer 2"):
        attention_layers(4, layer_types=["full_attention"] * 4, attn_type_list=[1, 1, 0, 1])


# ------------------------------------------------------------------ from_hf_config
def test_from_hf_config_namespace():
    types = ["sliding_attention"] * 5 + ["full_attention"]
    cfg = SimpleNamespace(num_hidden_layers=6, layer_types=tuple(types), hidden_size=1024)
    kw = from_hf_config(cfg)
    assert kw == {"num_layers": 6, "layer_types": types}
    assert boundary_skip_layers(**kw) == [0, 5]


def test_from_hf_config_namespace_block_type_hybrid():
    cfg = SimpleNamespace(num_hidden_layers=4, layers_block_type=["mamba", "attention"] * 2, layer_types=None)
    kw = from_hf_config(cfg)
    assert kw == {"num_layers": 4, "layers_block_type": ["mamba", "attention"] * 2}
    assert boundary_skip_layers(**kw) == []


def test_from_hf_config_dict():
    cfg = {"num_hidden_layers": 8, "attn_type_list": [0, 1] * 4, "model_type": "minimax"}
    kw = from_hf_config(cfg)
    assert kw == {"num_layers": 8, "attn_type_list": [0, 1] * 4}
    assert boundary_skip_layers(**kw) == []
    assert attention_layers(**kw) == [1, 3, 5, 7]


def test_from_hf_config_dict_dense_without_lists():
    kw = from_hf_config({"num_hidden_layers": 30})
    assert kw == {"num_layers": 30}
    assert boundary_skip_layers(**kw) == [0, 1, 28, 29]


def test_from_hf_config_text_config():
    cfg = SimpleNamespace(text_config=SimpleNamespace(num_hidden_layers=4, layer_types=["full_attention"] * 4))
    assert from_hf_config(cfg) == {"num_layers": 4, "layer_types": ["full_attention"] * 4}
    assert from_hf_config({"text_config": {"num_hidden_layers": 12}}) == {"num_layers": 12}


def test_from_hf_config_missing_layers_raises():
    with pytest.raises(ValueError, match="no num_hidden_layers"):
        from_hf_config({"hidden_size": 1024})


# ------------------------------------------------------------------ layer groups
def test_plan_layer_groups_bf16_boundary_and_turboquant():
    tq = tqgen.LayoutSpec.from_preset("4bit_nc")
    skip = set(boundary_skip_layers(30))
    groups = plan_layer_groups(30, lambda i: "bf16" if i in skip else tq)
    assert len(groups) == 2
    (s0, l0), (s1, l1) = groups  # unpacks as (spec, layers)
    assert s0 == "bf16" and l0 == [0, 1, 28, 29]
    assert s1 is tq and l1 == list(range(2, 28))
    assert isinstance(groups[0], LayerGroup) and groups[1].spec == tq and groups[1].layers == l1
    assert sorted(l0 + l1) == list(range(30))  # every layer exactly once


def test_plan_layer_groups_order_is_first_appearance():
    a = tqgen.LayoutSpec.from_preset("4bit_nc")
    b = tqgen.LayoutSpec.from_preset("k8v4")
    specs = [b, a, a, "bf16", b, a]
    groups = plan_layer_groups(6, specs.__getitem__)
    assert [(g.spec, g.layers) for g in groups] == [(b, [0, 4]), (a, [1, 2, 5]), ("bf16", [3])]


def test_plan_layer_groups_equal_specs_merge():
    # equal (not identical) frozen specs share one pool
    groups = plan_layer_groups(4, lambda i: tqgen.LayoutSpec.from_preset("4bit_nc"))
    assert len(groups) == 1 and groups[0].layers == [0, 1, 2, 3]


def test_plan_layer_groups_custom_key():
    specs = [{"bits": 4}, {"bits": 4}, {"bits": 3}]  # dicts are unhashable: group by a key
    groups = plan_layer_groups(3, specs.__getitem__, key=lambda s: s["bits"])
    assert [(g.spec, g.layers) for g in groups] == [({"bits": 4}, [0, 1]), ({"bits": 3}, [2])]
    assert groups[0].spec is specs[0]


def test_plan_layer_groups_unhashable_raises():
    with pytest.raises(ValueError, match="layer 0: the group key .* is not hashable.*key="):
        plan_layer_groups(2, lambda i: {"bits": 4})


def test_plan_layer_groups_zero_layers_and_bad_count():
    assert plan_layer_groups(0, lambda i: "bf16") == []
    with pytest.raises(ValueError, match="num_layers must be a non-negative integer"):
        plan_layer_groups(-2, lambda i: "bf16")


def test_plan_layer_groups_page_bytes_per_group():
    # each group's pool is sized by its own slot: no padding to the largest one
    k4 = tqgen.LayoutSpec.from_preset("4bit_nc")
    k8 = tqgen.LayoutSpec.from_preset("k8v4")
    groups = plan_layer_groups(4, [k4, k8, k4, k8].__getitem__)
    slots = {g.spec: tqgen.derive_layout(g.spec).slot_bytes for g in groups}
    assert slots == {k4: 134, k8: 196}


# ------------------------------------------------------------------ no torch
def test_engine_module_does_not_import_torch():
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('engine_probe', {str(ENGINE_PY)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "assert m.boundary_skip_layers(30) == [0, 1, 28, 29]\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
