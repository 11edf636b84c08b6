"""Native attention/Transformer MACs, logical DMAs and module FLOPs (extensions spec §12–§15).

Reference values are the exact tables of §15.4 and §15.5 (tiny setting: B = 1, E = 4, H = 2, all
biases, affine LayerNorm, ReLU, F = 8, no masks, need_weights=False unless stated).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan.formulas.attention_costs import native_dmas, native_flops, native_macs
from torchscan.formulas.attention_layers import native_spec
from torchscan.formulas.registry import UnsupportedConfiguration


def _costs(module: nn.Module, *args, **kwargs) -> tuple[int, int, int]:
    module.eval()
    spec = native_spec(module, args, kwargs)
    return native_macs(spec), native_dmas(spec), native_flops(spec)


def _mha(**kwargs) -> nn.MultiheadAttention:
    return nn.MultiheadAttention(4, 2, batch_first=True, **kwargs).eval()


def _encoder_layer(**kwargs) -> nn.TransformerEncoderLayer:
    return nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True, **kwargs).eval()


def _decoder_layer(**kwargs) -> nn.TransformerDecoderLayer:
    return nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0, batch_first=True, **kwargs).eval()


X3 = torch.ones(1, 3, 4)
X2 = torch.ones(1, 2, 4)


# --- §15.4 / §15.5 reference values ------------------------------------------------------------


def test_self_attention_reference():
    # I=36, P=80, Q=J=12, A=18, R=6: 36+80+84+48+180+24 = 452 DMAs; 4·3·16 + 2·9·4 = 264 MACs.
    assert _costs(_mha(), X3, X3, X3, need_weights=False) == (264, 452, 588)


def test_self_attention_averaged_weights():
    # need_weights=True, average: +A + B·T·S = +18 + 9 DMAs; +A = 18 module FLOPs.
    assert _costs(_mha(), X3, X3, X3) == (264, 479, 606)


def test_self_attention_unaveraged_weights_add_nothing():
    # Per-head weights are returned by alias: 0 extra DMAs, no averaging FLOPs.
    assert _costs(_mha(), X3, X3, X3, need_weights=True, average_attn_weights=False) == (264, 452, 588)


def test_cross_attention_reference():
    # T=2, S=3: I=32, P=80, Q=8, J=12, A=12, R=4.
    assert _costs(_mha(), X2, X3, X3, need_weights=False) == (208, 352, 456)


def test_cross_attention_kdim_vdim_reference():
    # K=6, V=5: I = 8+18+15 = 41, P_in = 4·15+12 = 72, P = 92.
    mha = _mha(kdim=6, vdim=5)
    macs, dmas, _ = _costs(mha, X2, torch.ones(1, 3, 6), torch.ones(1, 3, 5), need_weights=False)
    assert (macs, dmas) == (244, 373)


def test_encoder_layer_reference():
    # 264 + 192 + 2×24 MACs; 452 + 196 + 2×96 + 2×36 DMAs; 588 + 24 + 2·102 + 408 FLOPs.
    assert _costs(_encoder_layer(), X3) == (504, 912, 1224)


def test_decoder_layer_reference():
    # 160 + 208 + 128 + 3×16 MACs; 288 + 352 + 156 + 3×67 + 3×24 DMAs; 344 + 456 + 24 + 204 + 272.
    assert _costs(_decoder_layer(), X2, X3) == (544, 1069, 1300)


def test_transformer_reference():
    # 504 + 24 + 544 + 16 MACs; 912 + 96 + 1069 + 67 DMAs; 1,326 + 1,368 FLOPs (never halved into MACs).
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=True)
    assert _costs(model, X3, X2) == (1088, 2144, 2694)


@pytest.mark.parametrize(
    ("mask_kwargs", "dmas", "flops"),
    [
        ({"attn_mask": torch.zeros(3, 3)}, 497, 606),  # 9 + 2·18
        ({"attn_mask": torch.zeros(2, 3, 3, dtype=torch.bool)}, 506, 606),  # 18 + 2·18
        ({"key_padding_mask": torch.zeros(1, 3, dtype=torch.bool)}, 491, 606),  # 3 + 2·18
        ({"key_padding_mask": torch.zeros(1, 3), "attn_mask": torch.zeros(3, 3)}, 536, 624),  # both
    ],
)
def test_self_attention_masks(mask_kwargs, dmas, flops):
    # Masks never reduce dense products: MACs stay 264; each mask adds A = 18 module FLOPs.
    assert _costs(_mha(), X3, X3, X3, need_weights=False, **mask_kwargs) == (264, dmas, flops)


def test_causal_hint_with_mask_adds_no_second_stage():
    causal = nn.Transformer.generate_square_subsequent_mask(3)
    assert _costs(_mha(), X3, X3, X3, need_weights=False, attn_mask=causal, is_causal=True)[1] == 497


def test_encoder_layer_with_mask():
    assert _costs(_encoder_layer(), X3, src_mask=torch.zeros(3, 3))[:2] == (504, 957)


def test_positional_and_keyword_masks_agree():
    mask = torch.zeros(3, 3)
    assert _costs(_encoder_layer(), X3, mask) == _costs(_encoder_layer(), X3, src_mask=mask)


def test_sequence_first_layout_matches_batch_first():
    mha = nn.MultiheadAttention(4, 2).eval()
    x = torch.ones(3, 1, 4)  # (tokens, batch, features)
    assert _costs(mha, x, x, x, need_weights=False) == (264, 452, 588)
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0).eval()
    assert _costs(layer, x) == (504, 912, 1224)


def test_batch_scales_linearly_except_parameter_reads():
    # Parameter and epsilon reads (80 + 76 + 2·8 + 2 = 174 DMAs) do not grow with the batch.
    x = torch.ones(2, 3, 4)
    assert _costs(_encoder_layer(), x) == (1008, 2 * (912 - 174) + 174, 2448)


def test_gelu_layer_counts_five_flops_per_hidden_element():
    # Decision (README): GELU counts 5 FLOPs per element; rows·F = 24 → +4·24 over ReLU.
    macs, dmas, flops = _costs(_encoder_layer(activation="gelu"), X3)
    assert (macs, dmas, flops) == (504, 912, 1224 + 4 * 24)


def test_norm_first_and_identity_norms():
    assert _costs(_encoder_layer(norm_first=True), X3) == (504, 912, 1224)
    layer = _encoder_layer()
    layer.norm1 = nn.Identity()
    layer.norm2 = nn.Identity()
    # Identity norms add 0: 264 + 192; 452 + 196 + 72; 588 + 24 + 408.
    assert _costs(layer, X3) == (456, 720, 1020)


def test_bias_free_layers():
    # bias=False removes every bias and the LayerNorm bias: fewer parameter reads and adds.
    macs, dmas, flops = _costs(_encoder_layer(bias=False), X3)
    assert macs == 504
    # P_in 48, P_out 16 (−16 DMAs); FFN p = 64 (−12); two LayerNorms p = 4 (−8).
    assert dmas == 912 - 16 - 12 - 8
    # projections −3·12, output −12, linears −24 −12, LayerNorm bias −2·12.
    assert flops == 1224 - 36 - 12 - 36 - 24


def test_stacks_sum_layers_and_final_norm():
    layer = _encoder_layer()
    stack = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(4), enable_nested_tensor=False).eval()
    assert _costs(stack, X3) == (2 * 504 + 24, 2 * 912 + 96, 2 * 1224 + 102)
    decoder = nn.TransformerDecoder(_decoder_layer(), 2).eval()
    assert _costs(decoder, X2, X3) == (2 * 544, 2 * 1069, 2 * 1300)


def test_mha_zero_batch_flops_only():
    mha = _mha()
    empty = torch.ones(0, 3, 4)
    with pytest.raises(UnsupportedConfiguration):
        native_spec(mha, (empty, empty, empty), {})
    assert native_flops(native_spec(mha, (empty, empty, empty), {}, strict=False)) == 0


def test_meta_tensors_are_safe():
    with torch.device("meta"):
        model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=True)
        src, tgt = torch.empty(1, 3, 4), torch.empty(1, 2, 4)
    assert _costs(model, src, tgt) == (1088, 2144, 2694)


# --- unsupported configurations raise (never a fabricated dense bound) ------------------------


class _SubclassedAttention(nn.MultiheadAttention):
    pass


def _patched_forward() -> nn.Module:
    layer = _encoder_layer()
    layer.linear1.forward = lambda x: x  # type: ignore[method-assign]
    return layer


@pytest.mark.parametrize(
    ("module", "args", "kwargs", "reason"),
    [
        (_mha(add_bias_kv=True), (X3, X3, X3), {}, "add_bias_kv"),
        (_mha(add_zero_attn=True), (X3, X3, X3), {}, "add_zero_attn"),
        (_SubclassedAttention(4, 2, batch_first=True).eval(), (X3, X3, X3), {}, "exact native type"),
        (_mha(), (X3[0], X3[0], X3[0]), {}, "unbatched"),
        (_mha(), (X3, X3, X3), {"need_weights": 1}, "bool"),
        (_mha(), (X3, X3, X3), {"is_causal": True}, "causal hint"),
        (_mha(), (X3.to(torch.complex64),) * 3, {}, "real floating"),
        (_mha(), (X3, X3, X3), {"attn_mask": torch.zeros(3, 3, dtype=torch.int64)}, "boolean or floating"),
        (_mha(), (X3, X3, X3), {"attn_mask": torch.zeros(2, 3)}, "attn_mask must have shape"),
        (_mha().train(), (X3, X3, X3), {}, "evaluation"),
        (_encoder_layer(activation=nn.Tanh()), (X3,), {}, "ReLU or GELU"),
        (
            _patched_forward(),
            (X3,),
            {},
            "Linear estimates require the exact native type with its own forward",
        ),
    ],
)
def test_unsupported_configurations_raise(module, args, kwargs, reason):
    with pytest.raises(UnsupportedConfiguration, match=reason):
        native_spec(module, args, kwargs)


def test_token_mixing_norm_is_unsupported():
    layer = _encoder_layer()
    layer.norm1 = nn.LayerNorm((3, 4))
    layer.eval()
    with pytest.raises(UnsupportedConfiguration, match="token-local"):
        native_spec(layer, (X3,), {})


def test_nested_tensor_packing_with_padding_is_unsupported():
    stack = nn.TransformerEncoder(_encoder_layer(), 1).eval()  # enable_nested_tensor=True
    with pytest.raises(UnsupportedConfiguration, match="nested-tensor"):
        native_spec(stack, (X3,), {"src_key_padding_mask": torch.zeros(1, 3, dtype=torch.bool)})
    stack = nn.TransformerEncoder(_encoder_layer(), 1, enable_nested_tensor=False).eval()
    spec = native_spec(stack, (X3,), {"src_key_padding_mask": torch.zeros(1, 3, dtype=torch.bool)})
    assert native_macs(spec) == 504


def test_stack_hint_none_is_accepted_other_objects_are_not():
    stack = nn.TransformerEncoder(_encoder_layer(), 1, enable_nested_tensor=False).eval()
    assert native_macs(native_spec(stack, (X3,), {"is_causal": None})) == 504
    with pytest.raises(UnsupportedConfiguration, match="bool"):
        native_spec(stack, (X3,), {"is_causal": "yes"})
