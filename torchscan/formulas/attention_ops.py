"""Closed-form FLOPs of the fused multi-head attention and encoder-layer operators (formulas.md B.9).

Each function is an operator formula ``(args, kwargs, out) -> int`` over the schema of its operator;
``torchscan.formulas.operators`` registers them under the B.7 dtype rules. Matrix products count
2 FLOPs per multiply-accumulate and omit fused biases, like PyTorch's native counts, so a fused call
and its unfused operator-by-operator graph stay comparable. These are not the module-formula
estimates of ``nn.MultiheadAttention`` or the Transformer family (extensions-and-transformers.md).
"""

from __future__ import annotations

import math

from torchscan.formulas.operator_common import UnsupportedOperatorFormula, arg, elements

__all__ = ["fused_encoder_layer_flops", "fused_mha_flops", "mha_closed_form"]

FUSED_MHA_REASON = "Fused MHA counts require dense batched self-attention with matching widths."


def _softmax_rows(scores: int, rows: int) -> int:
    """Stable softmax over ``rows`` rows holding ``scores`` values: ``5·scores − 2·rows``."""
    return 5 * scores - 2 * rows if scores else 0


def mha_closed_form(batch: int, length: int, embed: int, heads: int, *, masked: bool, weights: bool) -> int:
    """Fused self-attention over ``(batch, length, embed)`` with ``heads`` heads.

    ``8·B·L·E²`` (Q/K/V and output projections) ``+ B·L·E`` (query scaling) ``+ 4·B·L²·E`` (scores
    and weighted values) ``+ 5·scores − 2·rows`` (softmax) ``+ scores·([mask] + [averaged weights])``
    with ``rows = B·H·L`` and ``scores = rows·L``.
    """
    tokens = batch * length
    rows = batch * heads * length
    scores = rows * length
    return (
        8 * tokens * embed * embed
        + tokens * embed
        + 4 * tokens * length * embed
        + _softmax_rows(scores, rows)
        + scores * (masked + weights)
    )


def fused_mha_flops(args: tuple, kwargs: dict, out: object) -> int:
    """``_native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias,
    proj_weight, proj_bias, mask, need_weights, average_attn_weights, mask_type)``.

    Dense batched self-attention only: query, key and value share the shape ``(B, L, E)`` with
    ``E = embed_dim``. Returned weights cost ``scores`` only when averaged over heads.
    """
    query, key, value, embed_dim, heads = args[:5]
    if not (query.dim() == 3 and query.shape == key.shape == value.shape and query.shape[2] == embed_dim):
        raise UnsupportedOperatorFormula(FUSED_MHA_REASON)
    weights = bool(arg(args, kwargs, 10, "need_weights", True)) and bool(
        arg(args, kwargs, 11, "average_attn_weights", True)
    )
    masked = arg(args, kwargs, 9, "mask") is not None
    batch, length, _ = query.shape
    return mha_closed_form(batch, length, embed_dim, heads, masked=masked, weights=weights)


def fused_encoder_layer_flops(args: tuple, kwargs: dict, out: object) -> int:
    """``_transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
    proj_bias, use_gelu, norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2,
    ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, mask, mask_type)``.

    The fused MHA count (no returned weights) ``+ 4·hidden·E`` (two feed-forward products)
    ``+ (5·hidden if GELU else hidden)`` ``+ 18·Nsrc + 4·rows`` (two affine LayerNorms and two
    residual additions), with ``rows`` tokens, ``F = ffn_weight_1.shape[0]`` and ``hidden = rows·F``.
    A 2-D source is one unbatched sequence.
    """
    src, embed_dim, heads = args[:3]
    if src.dim() not in (2, 3) or src.shape[-1] != embed_dim:
        raise UnsupportedOperatorFormula(FUSED_MHA_REASON)
    batch, length = math.prod(src.shape[:-2]), int(src.shape[-2])
    masked = arg(args, kwargs, 18, "mask") is not None
    attention = mha_closed_form(batch, length, embed_dim, heads, masked=masked, weights=False)
    rows, hidden = batch * length, batch * length * int(args[14].shape[0])
    activation = 5 * hidden if args[7] else hidden
    return attention + 4 * hidden * embed_dim + activation + 18 * elements(src) + 4 * rows
