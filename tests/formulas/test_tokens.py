"""Module-local token dependencies (extensions spec §16): relation algebra and the §16.6 objects."""

from __future__ import annotations

import json
import math

import pytest
import torch
from torch import nn

from torchscan.formulas.attention_layers import native_spec
from torchscan.formulas.registry import UnsupportedConfiguration
from torchscan.formulas.tokens import (
    ASSUMPTIONS_V1,
    TOKEN_METHOD,
    Relation,
    UnsupportedTokenDependencies,
    compose,
    local,
    none,
    token_dependencies,
    unavailable_token_dependencies,
    union,
)


def _causal(t: int, s: int) -> torch.Tensor:
    """Canonical boolean causal mask: entry (i, j) excluded exactly when j > i."""
    return torch.ones(t, s, dtype=torch.bool).triu(1)


def _tokens(module: nn.Module, *args, **kwargs) -> dict:
    module.eval()
    return token_dependencies(native_spec(module, args, kwargs))


def _sources(obj: dict) -> list[tuple[list[str], int, dict]]:
    return [(s["arguments"], s["length"], s["relation"]) for s in obj["sources"]]


MHA = nn.MultiheadAttention(4, 2, batch_first=True).eval()
X, K, V = torch.rand(1, 3, 4), torch.rand(1, 3, 4), torch.rand(1, 3, 4)


# --- relation algebra (§16.3) --------------------------------------------------------------------


def test_relation_caps_and_spans():
    assert Relation("all", 2, 4).span == 4
    assert Relation("prefix", 2, 4).span == 2
    assert Relation("prefix", 4, 4, limit=3).cap == 3
    assert none(2, 3).span == 0


def test_union_rules():
    assert union(none(3, 3), local(3)) == local(3)
    assert union(Relation("prefix", 3, 3, 1), Relation("prefix", 3, 3)) == Relation("prefix", 3, 3, 0, 3)
    assert union(Relation("all", 3, 3), local(3)) == Relation("all", 3, 3, 0, 3)
    assert union(local(3), Relation("prefix", 3, 3, 1)).kind == "prefix"
    with pytest.raises(UnsupportedTokenDependencies):
        union(Relation("all", 4, 4, limit=2), local(4))  # cap 2 < span 4
    with pytest.raises(UnsupportedTokenDependencies):
        union(local(2), Relation("prefix", 2, 3))  # same_position ∪ prefix needs n_in == n_out


def test_compose_rules():
    assert compose(local(3), Relation("all", 3, 4)) == Relation("all", 3, 4, 0, None)
    assert compose(Relation("all", 2, 2), Relation("prefix", 2, 4)) == Relation("all", 2, 4, 0, 2)
    assert compose(Relation("prefix", 3, 3), Relation("prefix", 3, 4)) == Relation("prefix", 3, 4, 0, 3)
    assert compose(Relation("prefix", 3, 4), Relation("all", 4, 4)).kind == "all"
    assert compose(none(3, 3), Relation("all", 3, 5)) == none(3, 5)
    assert compose(Relation("same_position", 3, 3, 1), Relation("all", 3, 3)).first == 1
    with pytest.raises(UnsupportedTokenDependencies):
        compose(local(3), local(2))


def test_serialization_omits_default_limit_and_first():
    assert Relation("all", 2, 4, 0, 4).to_json() == {"kind": "all"}
    assert Relation("all", 2, 4, 0, 2).to_json() == {"kind": "all", "limit": 2}
    assert Relation("prefix", 3, 3, 1).to_json() == {"kind": "prefix", "first_position": 1}


# --- §16.6 worked objects ----------------------------------------------------------------------


def test_object_shape_and_json():
    obj = _tokens(MHA, X, X, X)
    assert obj["status"] == "complete"
    assert obj["scope"] == "module_call"
    assert obj["method"] == TOKEN_METHOD
    assert obj["assumptions"] == list(ASSUMPTIONS_V1)
    assert len(ASSUMPTIONS_V1) == 3
    assert obj["output"] == {"sequence_axis": 1, "length": 3}
    assert obj["sources"] == [
        {"arguments": ["query", "key", "value"], "sequence_axis": 1, "length": 3, "relation": {"kind": "all"}}
    ]
    assert json.loads(json.dumps(obj)) == obj


def test_example_2_causal_self_attention():
    expected = [(["query", "key", "value"], 3, {"kind": "prefix"})]
    assert _sources(_tokens(MHA, X, X, X, attn_mask=_causal(3, 3), is_causal=True)) == expected
    assert _sources(_tokens(MHA, X, X, X, attn_mask=_causal(3, 3))) == expected
    float_causal = nn.Transformer.generate_square_subsequent_mask(3)  # -inf above the diagonal
    assert _sources(_tokens(MHA, X, X, X, attn_mask=float_causal)) == expected


def test_example_3_distinct_tensors():
    assert _sources(_tokens(MHA, X, K, V)) == [
        (["query"], 3, {"kind": "same_position"}),
        (["key"], 3, {"kind": "all"}),
        (["value"], 3, {"kind": "all"}),
    ]
    assert _sources(_tokens(MHA, X, K, V, attn_mask=_causal(3, 3))) == [
        (["query"], 3, {"kind": "same_position", "first_position": 1}),
        (["key"], 3, {"kind": "prefix", "first_position": 1}),
        (["value"], 3, {"kind": "prefix"}),
    ]


def test_example_4_query_aliases_key():
    assert _sources(_tokens(MHA, X, X, V, attn_mask=_causal(3, 3))) == [
        (["query", "key"], 3, {"kind": "prefix", "first_position": 1}),
        (["value"], 3, {"kind": "prefix"}),
    ]


def test_distinct_views_stay_separate_sources():
    view = X.view(1, 3, 4)
    assert [s[0] for s in _sources(_tokens(MHA, X, view, X))] == [["query", "value"], ["key"]]


def test_example_5_cross_attention():
    q = torch.rand(1, 2, 4)
    mem = torch.rand(1, 3, 4)
    obj = _tokens(MHA, q, mem, mem, need_weights=False)
    assert obj["output"] == {"sequence_axis": 1, "length": 2}
    assert _sources(obj) == [
        (["query"], 2, {"kind": "same_position"}),
        (["key", "value"], 3, {"kind": "all"}),
    ]
    mask = torch.tensor([[False, True, True], [False, False, True]])
    assert _sources(_tokens(MHA, q, mem, mem, attn_mask=mask)) == [
        (["query"], 2, {"kind": "same_position", "first_position": 1}),
        (["key", "value"], 3, {"kind": "prefix"}),
    ]
    wide = nn.MultiheadAttention(4, 2, batch_first=True, kdim=6, vdim=5).eval()
    obj = _tokens(wide, q, torch.rand(1, 3, 6), torch.rand(1, 3, 5))
    assert [s[2]["kind"] for s in _sources(obj)] == ["same_position", "all", "all"]


def test_example_6_single_source_token():
    q, k1, v1 = torch.rand(1, 2, 4), torch.rand(1, 1, 4), torch.rand(1, 1, 4)
    assert _sources(_tokens(MHA, q, k1, v1)) == [
        (["query"], 2, {"kind": "none"}),
        (["key"], 1, {"kind": "none"}),
        (["value"], 1, {"kind": "all"}),
    ]
    assert _sources(_tokens(MHA, q, k1, k1))[1] == (["key", "value"], 1, {"kind": "all"})


def _encoder_layer(**kwargs) -> nn.TransformerEncoderLayer:
    return nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True, **kwargs).eval()


@pytest.mark.parametrize("norm_first", [False, True])
def test_example_7_encoder_layer_and_stack(norm_first):
    layer = _encoder_layer(norm_first=norm_first)
    stack = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    assert _sources(_tokens(layer, X)) == [(["src"], 3, {"kind": "all"})]
    assert _sources(_tokens(layer, X, src_mask=_causal(3, 3)))[0][2] == {"kind": "prefix"}
    assert _sources(_tokens(stack, X, mask=_causal(3, 3)))[0][2] == {"kind": "prefix"}
    additive = torch.randn(3, 3)
    assert _sources(_tokens(layer, X, src_mask=additive))[0][2] == {"kind": "all"}
    padding = torch.zeros(1, 3, dtype=torch.bool)
    assert _sources(_tokens(stack, X, src_key_padding_mask=padding))[0][2] == {"kind": "all"}
    assert _sources(_tokens(_encoder_layer(activation="gelu"), X))[0][2] == {"kind": "all"}


def _decoder(layers: int) -> nn.Module:
    layer = nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0, batch_first=True)
    return (layer if layers == 1 else nn.TransformerDecoder(layer, layers)).eval()


@pytest.mark.parametrize("layers", [1, 2])
def test_example_8_decoder_causal_target(layers):
    tgt, memory = torch.rand(1, 3, 4), torch.rand(1, 4, 4)
    assert _sources(_tokens(_decoder(layers), tgt, memory, tgt_mask=_causal(3, 3))) == [
        (["tgt"], 3, {"kind": "prefix"}),
        (["memory"], 4, {"kind": "all"}),
    ]


def test_example_9_memory_prefix_through_stacks():
    tgt, memory = torch.rand(1, 2, 4), torch.rand(1, 4, 4)
    mask = _causal(2, 4)
    assert _sources(_tokens(_decoder(1), tgt, memory, memory_mask=mask))[1][2] == {"kind": "prefix"}
    assert _sources(_tokens(_decoder(2), tgt, memory, memory_mask=mask)) == [
        (["tgt"], 2, {"kind": "all"}),
        (["memory"], 4, {"kind": "all", "limit": 2}),
    ]
    tgt, memory = torch.rand(1, 4, 4), torch.rand(1, 2, 4)
    assert _sources(_tokens(_decoder(2), tgt, memory, memory_mask=_causal(4, 2)))[1][2] == {"kind": "all"}


def test_example_10_transformer():
    model = nn.Transformer(4, 2, 2, 2, 8, dropout=0.0, batch_first=True).eval()
    src, tgt = torch.rand(1, 4, 4), torch.rand(1, 3, 4)
    masks = {"tgt_mask": _causal(3, 3), "memory_mask": _causal(3, 4)}
    assert _sources(_tokens(model, src, tgt, **masks)) == [
        (["tgt"], 3, {"kind": "prefix"}),
        (["src"], 4, {"kind": "all"}),
    ]
    assert _sources(_tokens(model, src, tgt, src_mask=_causal(4, 4), **masks))[1][2] == {"kind": "prefix"}


def test_sequence_first_axis_is_zero():
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0).eval()
    obj = _tokens(layer, torch.rand(3, 1, 4))
    assert obj["output"] == {"sequence_axis": 0, "length": 3}
    assert obj["sources"][0]["sequence_axis"] == 0


# --- unavailable cases (§16.6 end) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"attn_mask": torch.tensor([[False, True], [True, False]])}, "canonical causal"),
        ({"key_padding_mask": torch.tensor([[False, True]])}, "key padding"),
        ({"key_padding_mask": torch.tensor([[0.0, -math.inf]])}, "key padding"),
        ({"attn_mask": torch.tensor([[0.0, math.nan], [0.0, 0.0]])}, "NaN"),
        ({"attn_mask": torch.tensor([[0.0, math.inf], [0.0, 0.0]])}, "positive-infinity"),
        ({"attn_mask": torch.zeros(2, 2), "is_causal": True}, "canonical causal"),
        ({"attn_mask": torch.zeros(2, 2, device="meta")}, "observable mask"),
    ],
)
def test_unavailable_masks(kwargs, reason):
    x = torch.rand(1, 2, 4)
    spec = native_spec(MHA, (x, x, x), kwargs)  # the cost boundary holds
    with pytest.raises(UnsupportedTokenDependencies, match=reason):
        token_dependencies(spec)


def test_causal_hint_without_mask_is_unsupported_everywhere():
    with pytest.raises(UnsupportedConfiguration, match="causal hint"):
        native_spec(MHA, (X, X, X), {"is_causal": True})


def test_width_one_layer_norm_is_not_token_local():
    layer = nn.TransformerEncoderLayer(1, 1, 2, dropout=0.0, batch_first=True).eval()
    spec = native_spec(layer, (torch.rand(1, 3, 1),), {})
    with pytest.raises(UnsupportedTokenDependencies, match="width-one LayerNorm"):
        token_dependencies(spec)


def test_meta_model_with_unobservable_mask():
    with torch.device("meta"):
        layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True)
        x = torch.empty(1, 3, 4)
    layer.eval()
    assert _tokens(layer, x)["sources"][0]["relation"] == {"kind": "all"}  # no mask: no value read
    spec = native_spec(layer, (x,), {"src_mask": torch.zeros(3, 3, device="meta")})
    with pytest.raises(UnsupportedTokenDependencies, match="observable mask"):
        token_dependencies(spec)


def test_unavailable_object_has_exactly_four_keys():
    assert unavailable_token_dependencies() == {
        "status": "unavailable",
        "scope": "module_call",
        "method": TOKEN_METHOD,
        "assumptions": [],
    }
