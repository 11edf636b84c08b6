"""Native Transformer layers, stacks and ``nn.Transformer``: specs of one complete call (spec §12–§13).

A layer, stack or ``nn.Transformer`` call is described by the attention calls, feed-forwards, norms
and residuals it runs, derived from its arguments bound to the native ``forward`` (a stack passes
its own arguments to every layer; ``nn.Transformer`` feeds its encoder and decoder as §12.1 says).
Only shapes and configuration are read, so this is safe on ``meta`` tensors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import torch.nn.functional as F
from torch import nn

from torchscan.formulas.attention import (
    AttentionSpec,
    FeedForwardSpec,
    LayerSpec,
    NativeSpec,
    NormSpec,
    Shape,
    StackSpec,
    TransformerSpec,
    activation_shape,
    attention_spec,
    bind_slots,
    causal_hint,
    fail,
    mha_spec,
    native_type_of,
    require_eval,
    require_native_forward,
    require_real_parameters,
    split_layout,
)

_ACTIVATIONS = {F.relu: "relu", F.gelu: "gelu"}


# --- layers, stacks, Transformer ------------------------------------------------------------


def _norm(norm: object, embed: int, elements: int, role: str) -> NormSpec | None:
    if norm is None:
        return None
    if type(norm) is nn.Identity:
        require_native_forward(norm, nn.Identity)
        return None
    if type(norm) is not nn.LayerNorm:
        raise fail(f"{role} must be LayerNorm((E,)), Identity or None")
    require_native_forward(norm, nn.LayerNorm)
    if tuple(norm.normalized_shape) != (embed,):
        raise fail(f"{role} must be LayerNorm(({embed},)): token-mixing norms are not token-local")
    for tensor in (norm.weight, norm.bias):
        if tensor is not None and tuple(tensor.shape) != (embed,):
            raise fail(f"{role} parameters must have the native shape")
    return NormSpec(
        elements=elements, width=embed, weight=norm.weight is not None, bias=norm.bias is not None
    )


def _linear(linear: object, fan_in: int, fan_out: int, role: str) -> bool:
    if type(linear) is not nn.Linear:
        raise fail(f"{role} must be exactly nn.Linear")
    require_native_forward(linear, nn.Linear)
    if (linear.in_features, linear.out_features) != (fan_in, fan_out):
        raise fail(f"{role} must map {fan_in} -> {fan_out} features")
    return linear.bias is not None


def _dropouts(layer: nn.Module, names: tuple[str, ...]) -> None:
    for name in names:
        dropout = getattr(layer, name, None)
        if type(dropout) is not nn.Dropout:
            raise fail(f"{name} must be exactly nn.Dropout")
        require_native_forward(dropout, nn.Dropout)


def _feed_forward(layer: nn.Module, embed: int, rows: int) -> FeedForwardSpec:
    stored = getattr(layer, "activation", None)
    activation = next((name for function, name in _ACTIVATIONS.items() if stored is function), None)
    if activation is None:
        raise fail("the feed-forward activation must be torch.nn.functional.relu or gelu (ReLU or GELU)")
    hidden = getattr(layer.linear1, "out_features", -1)
    bias1 = _linear(layer.linear1, embed, hidden, "linear1")
    bias2 = _linear(layer.linear2, hidden, embed, "linear2")
    return FeedForwardSpec(
        rows=rows, embed=embed, hidden=hidden, bias1=bias1, bias2=bias2, activation=activation
    )


def _layer_embed(layer: object, layer_type: type[nn.Module]) -> tuple[int, bool]:
    if type(layer) is not layer_type:
        raise fail(f"stack layers must be exactly {layer_type.__name__}")
    attention = getattr(layer, "self_attn", None)
    if type(attention) is not nn.MultiheadAttention:
        raise fail("self_attn must be exactly nn.MultiheadAttention")
    return attention.embed_dim, bool(attention.batch_first)


def encoder_layer_spec(
    layer: nn.Module, src: Shape, src_mask: object, padding: object, causal: bool
) -> LayerSpec:
    """Spec of one ``TransformerEncoderLayer`` call (self-attention, feed-forward, two norms)."""
    require_native_forward(layer, nn.TransformerEncoderLayer)
    embed, batch_first = _layer_embed(layer, nn.TransformerEncoderLayer)
    attention = attention_spec(
        cast(nn.Module, layer.self_attn),
        src,
        src,
        src,
        key_padding_mask=padding,
        attn_mask=src_mask,
        causal=causal,
        groups=(("query", "key", "value"),),
    )
    _check_layer_attention(attention, embed)
    batch, tokens, _ = split_layout(src, batch_first)
    elements = batch * tokens * embed
    _dropouts(layer, ("dropout", "dropout1", "dropout2"))
    norms = (_norm(layer.norm1, embed, elements, "norm1"), _norm(layer.norm2, embed, elements, "norm2"))
    return LayerSpec((attention,), _feed_forward(layer, embed, batch * tokens), norms, elements)


def decoder_layer_spec(
    layer: nn.Module,
    tgt: Shape,
    memory: Shape,
    masks: tuple[object, object, object, object],
    hints: tuple[bool, bool],
) -> LayerSpec:
    """Spec of one ``TransformerDecoderLayer`` call; ``masks`` = tgt, memory, tgt pad, memory pad."""
    require_native_forward(layer, nn.TransformerDecoderLayer)
    embed, batch_first = _layer_embed(layer, nn.TransformerDecoderLayer)
    cross = getattr(layer, "multihead_attn", None)
    if (
        type(cross) is not nn.MultiheadAttention
        or cross.embed_dim != embed
        or cross.batch_first != batch_first
    ):
        raise fail("multihead_attn must be a native MultiheadAttention with the same E and layout")
    tgt_mask, memory_mask, tgt_padding, memory_padding = masks
    own = attention_spec(
        cast(nn.Module, layer.self_attn),
        tgt,
        tgt,
        tgt,
        key_padding_mask=tgt_padding,
        attn_mask=tgt_mask,
        causal=hints[0],
        groups=(("query", "key", "value"),),
    )
    other = attention_spec(
        cross,
        tgt,
        memory,
        memory,
        key_padding_mask=memory_padding,
        attn_mask=memory_mask,
        causal=hints[1],
        groups=(("query",), ("key", "value")),
    )
    _check_layer_attention(own, embed)
    _check_layer_attention(other, embed)
    batch, tokens, _ = split_layout(tgt, batch_first)
    elements = batch * tokens * embed
    _dropouts(layer, ("dropout", "dropout1", "dropout2", "dropout3"))
    norms = tuple(_norm(getattr(layer, n), embed, elements, n) for n in ("norm1", "norm2", "norm3"))
    return LayerSpec((own, other), _feed_forward(layer, embed, batch * tokens), norms, elements)


def _check_layer_attention(attention: AttentionSpec, embed: int) -> None:
    if attention.kdim != embed or attention.vdim != embed:
        raise fail("attention inside native layers must use kdim = vdim = E")


def _stack_layers(stack: nn.Module, layer_type: type[nn.Module]) -> tuple[nn.Module, ...]:
    layers = tuple(getattr(stack, "layers", ()))
    if not layers:
        raise fail("a native stack must have at least one layer")
    geometry = {_layer_embed(layer, layer_type) for layer in layers}
    if len(geometry) != 1:
        raise fail("all layers of a native stack must share E and layout")
    return layers


def _stack_norm(stack: nn.Module, layers: tuple[nn.Module, ...], shape: Shape) -> NormSpec | None:
    embed, batch_first = _layer_embed(layers[0], type(layers[0]))
    batch, tokens, _ = split_layout(shape, batch_first)
    return _norm(stack.norm, embed, batch * tokens * embed, "the final norm")


def encoder_stack_spec(
    stack: nn.Module, src: Shape, mask: object, padding: object, causal: bool
) -> StackSpec:
    """Spec of a ``TransformerEncoder`` call: the same arguments reach every layer."""
    require_native_forward(stack, nn.TransformerEncoder)
    layers = _stack_layers(stack, nn.TransformerEncoderLayer)
    packing = getattr(stack, "use_nested_tensor", getattr(stack, "enable_nested_tensor", False))
    if padding is not None and packing:
        raise fail("an encoder called with src_key_padding_mask must not use nested-tensor packing")
    specs = tuple(encoder_layer_spec(layer, src, mask, padding, causal) for layer in layers)
    return StackSpec(specs, _stack_norm(stack, layers, src))


def decoder_stack_spec(
    stack: nn.Module,
    tgt: Shape,
    memory: Shape,
    masks: tuple[object, object, object, object],
    hints: tuple[bool, bool],
) -> StackSpec:
    """Spec of a ``TransformerDecoder`` call: the same arguments reach every layer."""
    require_native_forward(stack, nn.TransformerDecoder)
    layers = _stack_layers(stack, nn.TransformerDecoderLayer)
    specs = tuple(decoder_layer_spec(layer, tgt, memory, masks, hints) for layer in layers)
    return StackSpec(specs, _stack_norm(stack, layers, tgt))


def _decoder_arguments(slots: Mapping[str, Any], *, allow_none: bool) -> tuple[tuple, tuple[bool, bool]]:
    masks = (
        slots["tgt_mask"],
        slots["memory_mask"],
        slots["tgt_key_padding_mask"],
        slots["memory_key_padding_mask"],
    )
    hints = (
        causal_hint(slots["tgt_is_causal"], "tgt_is_causal", allow_none=allow_none),
        causal_hint(slots["memory_is_causal"], "memory_is_causal", allow_none=allow_none),
    )
    return masks, hints


def _transformer_spec(module: nn.Module, slots: Mapping[str, Any]) -> TransformerSpec:
    encoder, decoder = module.encoder, module.decoder
    if type(encoder) is not nn.TransformerEncoder or type(decoder) is not nn.TransformerDecoder:
        raise fail("nn.Transformer estimates require native encoder and decoder stacks")
    for stack, layer_type in ((encoder, nn.TransformerEncoderLayer), (decoder, nn.TransformerDecoderLayer)):
        embed, batch_first = _layer_embed(_stack_layers(stack, layer_type)[0], layer_type)
        if embed != module.d_model or batch_first != module.batch_first:
            raise fail("the stacks' first layers must match the Transformer's d_model and batch_first")
    src = activation_shape(slots["src"], "src", strict=True)
    tgt = activation_shape(slots["tgt"], "tgt", strict=True)
    src_causal = causal_hint(slots["src_is_causal"], "src_is_causal", allow_none=True)
    encoder_spec = encoder_stack_spec(
        encoder, src, slots["src_mask"], slots["src_key_padding_mask"], src_causal
    )
    masks, hints = _decoder_arguments(slots, allow_none=True)
    return TransformerSpec(encoder_spec, decoder_stack_spec(decoder, tgt, src, masks, hints))


def native_spec(
    module: nn.Module, args: tuple, kwargs: Mapping[str, Any], *, strict: bool = True
) -> NativeSpec:
    """Spec of one complete native call, or :class:`UnsupportedConfiguration` (§12.1, §13).

    ``strict=False`` applies the narrower module-FLOP boundary of §15.6 to a standalone
    ``MultiheadAttention`` (zero batch accepted, masks only counted); the other types always use
    the full boundary. The spec holds shapes and mask references only; it must not outlive the call.
    """
    native_type = native_type_of(module)
    require_eval(module)
    require_real_parameters(module)
    slots = bind_slots(native_type, module, args, kwargs)
    if native_type is nn.MultiheadAttention:
        return mha_spec(module, slots, strict)
    if native_type is nn.TransformerEncoderLayer:
        src = activation_shape(slots["src"], "src", strict=True)
        causal = causal_hint(slots["is_causal"], "is_causal", allow_none=False)
        return encoder_layer_spec(module, src, slots["src_mask"], slots["src_key_padding_mask"], causal)
    if native_type is nn.TransformerEncoder:
        src = activation_shape(slots["src"], "src", strict=True)
        causal = causal_hint(slots["is_causal"], "is_causal", allow_none=True)
        return encoder_stack_spec(module, src, slots["mask"], slots["src_key_padding_mask"], causal)
    if native_type is nn.Transformer:
        return _transformer_spec(module, slots)
    tgt = activation_shape(slots["tgt"], "tgt", strict=True)
    memory = activation_shape(slots["memory"], "memory", strict=True)
    if native_type is nn.TransformerDecoderLayer:
        masks, hints = _decoder_arguments(slots, allow_none=False)
        return decoder_layer_spec(module, tgt, memory, masks, hints)
    masks, hints = _decoder_arguments(slots, allow_none=True)
    return decoder_stack_spec(module, tgt, memory, masks, hints)
