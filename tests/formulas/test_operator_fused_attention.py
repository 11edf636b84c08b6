"""Fused MultiheadAttention and TransformerEncoderLayer operator counts (formulas.md B.9), each
reconciled with the unfused path.
"""

from __future__ import annotations

import pytest
import torch
from operator_counting import MHA_BASE, count
from torch import nn

# B = 2, L = 3, E = 4, H = 2: MHA_BASE (operator_counting) is the fused attention without weights
X = torch.ones(2, 3, 4)


def _mha() -> nn.MultiheadAttention:
    return nn.MultiheadAttention(4, 2, batch_first=True).eval()


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, MHA_BASE + 36),  # averaged weights returned: + scores
        ({"need_weights": False}, MHA_BASE),
        ({"average_attn_weights": False}, MHA_BASE),  # per-head weights: no averaging work
        # padding mask → float mask via masked_fill_ (2·3 = 6, zeros_like ignored), then + scores
        ({"key_padding_mask": torch.zeros(2, 3, dtype=torch.bool)}, 6 + MHA_BASE + 36 + 36),
    ],
)
def test_fused_multi_head_attention(kwargs, expected):
    module = _mha()
    with torch.no_grad():
        tally = count(lambda: module(X, X, X, **kwargs))
    assert tally.complete
    assert tally.total == expected
    fused = expected - 6 if "key_padding_mask" in kwargs else expected
    assert tally.by_operator["aten._native_multi_head_attention"] == fused


def test_fused_mha_reconciles_with_the_unfused_path():
    # With gradients enabled PyTorch runs the same attention op by op; the only extra work it shows
    # is the separate in-projection bias add (B·L·3E = 72), which the closed form omits like addmm.
    module = _mha()
    unfused = count(lambda: module(X, X, X))
    assert "aten._native_multi_head_attention" not in unfused.by_operator
    assert unfused.total == MHA_BASE + 36 + 72


ENCODER_MHA = MHA_BASE  # the encoder layer returns no attention weights
# rows = 6 tokens, F = 6, hidden = 36, Nsrc = 24: 4·36·4 = 576, 18·24 + 4·6 = 456
ENCODER_RELU = ENCODER_MHA + 576 + 36 + 456  # 2,304
ENCODER_GELU = ENCODER_MHA + 576 + 5 * 36 + 456  # 2,448


@pytest.mark.parametrize(
    ("activation", "norm_first", "mask", "expected"),
    [
        ("relu", False, None, ENCODER_RELU),
        ("gelu", False, None, ENCODER_GELU),
        ("relu", True, None, ENCODER_RELU),  # layer order does not change the count
        ("relu", False, torch.zeros(3, 3), ENCODER_RELU + 36),  # a mask adds one add per score
    ],
)
def test_fused_transformer_encoder_layer(activation, norm_first, mask, expected):
    layer = nn.TransformerEncoderLayer(
        4, 2, dim_feedforward=6, batch_first=True, activation=activation, norm_first=norm_first
    ).eval()
    with torch.no_grad():
        tally = count(lambda: layer(X, src_mask=mask))
    assert tally.complete
    assert tally.by_operator == {"aten._transformer_encoder_layer_fwd": expected}


def test_fused_encoder_layer_reconciles_with_the_unfused_path():
    # Unfused: in-projection bias add 72 more, and SDPA scales the 36 scores instead of the
    # 24 query values (+12); everything else (products, softmax, norms, residuals, FFN) matches.
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, batch_first=True).eval()
    unfused = count(lambda: layer(X))
    assert "aten._transformer_encoder_layer_fwd" not in unfused.by_operator
    assert unfused.complete
    assert unfused.total == ENCODER_RELU + 72 + 12
