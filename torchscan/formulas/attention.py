"""Native attention and Transformer calls: spec types, argument slots and the supported boundary.

extensions-and-transformers.md §12–§13. A native call is bound to its ``forward`` signature
("slots", defaults applied) and turned into a small *spec* tree (attention calls, feed-forwards,
norms, residuals) that the cost formulas (``attention_costs``) and the token analysis (``tokens``)
read. This module holds the spec types, the shared boundary checks and ``MultiheadAttention``;
``attention_layers`` builds layers, stacks and ``nn.Transformer`` and exposes ``native_spec``.

Building a spec only reads shapes, dtypes, layouts and module configuration, never tensor values,
so it is safe on ``meta`` tensors. Anything outside the boundary raises
:class:`UnsupportedConfiguration` with the reason; nothing here builds reports or guesses a dense
bound.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.modules.linear import NonDynamicallyQuantizableLinear

from torchscan.formulas.registry import UnsupportedConfiguration, has_native_forward

# The six exact native types with a complete-call estimate (§12).
NATIVE_TYPES: tuple[type[nn.Module], ...] = (
    nn.MultiheadAttention,
    nn.TransformerEncoderLayer,
    nn.TransformerDecoderLayer,
    nn.TransformerEncoder,
    nn.TransformerDecoder,
    nn.Transformer,
)
_OUT_PROJ_TYPES = (nn.Linear, NonDynamicallyQuantizableLinear)


@dataclass(frozen=True)
class NormSpec:
    """A feature-only ``LayerNorm((E,))`` applied to ``elements`` values (``Identity``/``None``: no spec)."""

    elements: int
    width: int
    weight: bool
    bias: bool


@dataclass(frozen=True)
class AttentionSpec:
    """One ``MultiheadAttention`` call in (B, T, S, E, H, K, V) terms (§14).

    ``masks`` holds the mask tensors present (key padding first, then the attention mask); they
    are kept for the token analysis only and are never read by the cost formulas beyond ``numel``.
    ``groups`` lists the argument names grouped by object identity (query, key, value order).
    """

    batch: int
    target: int
    source: int
    embed: int
    heads: int
    kdim: int
    vdim: int
    in_bias: bool
    out_bias: bool
    key_padding_mask: torch.Tensor | None
    attn_mask: torch.Tensor | None
    causal: bool
    averaged_weights: bool
    groups: tuple[tuple[str, ...], ...]
    batch_first: bool

    @property
    def masks(self) -> tuple[torch.Tensor, ...]:
        return tuple(m for m in (self.key_padding_mask, self.attn_mask) if m is not None)


@dataclass(frozen=True)
class FeedForwardSpec:
    """``linear2(activation(linear1(x)))`` on ``rows`` token vectors (``E → F → E``)."""

    rows: int
    embed: int
    hidden: int
    bias1: bool
    bias2: bool
    activation: str


@dataclass(frozen=True)
class LayerSpec:
    """An encoder layer (one self-attention) or decoder layer (self- then cross-attention)."""

    attentions: tuple[AttentionSpec, ...]
    feed_forward: FeedForwardSpec
    norms: tuple[NormSpec | None, ...]
    elements: int  # N = B·T·E, the residual stream size

    @property
    def residuals(self) -> int:
        return len(self.attentions) + 1


@dataclass(frozen=True)
class StackSpec:
    """An encoder or decoder stack; ``final_norm`` is applied to the stack's activation."""

    layers: tuple[LayerSpec, ...]
    final_norm: NormSpec | None


@dataclass(frozen=True)
class TransformerSpec:
    """``nn.Transformer``: encoder stack on ``src`` (length S), decoder stack on ``tgt`` (T)."""

    encoder: StackSpec
    decoder: StackSpec


NativeSpec = AttentionSpec | LayerSpec | StackSpec | TransformerSpec


@dataclass(frozen=True)
class Shape:
    """Shape of a 3D activation; ``memory`` of ``nn.Transformer`` only exists as a shape."""

    dims: tuple[int, ...]


def fail(reason: str) -> UnsupportedConfiguration:
    """The exception that marks a call outside the supported boundary."""
    return UnsupportedConfiguration(reason)


# --- argument slots (§12.1) -------------------------------------------------------------------


_SIGNATURES: dict[type, inspect.Signature] = {}


def _signature(native_type: type[nn.Module]) -> inspect.Signature:
    signature = _SIGNATURES.get(native_type)
    if signature is None:
        signature = _SIGNATURES[native_type] = inspect.signature(native_type.forward)
    return signature


def bind_slots(native_type: type[nn.Module], module: nn.Module, args: tuple, kwargs: Mapping) -> dict:
    """Bind a call to ``native_type.forward`` with defaults applied; keyword and positional alike."""
    try:
        bound = _signature(native_type).bind(module, *args, **kwargs)
    except TypeError as error:
        reason = f"call does not match the native {native_type.__name__}.forward signature: {error}"
        raise fail(reason) from None
    bound.apply_defaults()
    slots = dict(bound.arguments)
    slots.pop("self", None)
    return slots


def native_type_of(module: nn.Module) -> type[nn.Module]:
    """The exact native type of ``module`` with an unchanged ``forward``; raise otherwise (§13)."""
    cls = type(module)
    if cls not in NATIVE_TYPES:
        raise fail(f"native Transformer estimates require the exact native type, got {cls.__name__}")
    require_native_forward(module, cls)
    return cls


def require_native_forward(module: nn.Module, cls: type[nn.Module]) -> None:
    if type(module) is not cls or not has_native_forward(module, cls):
        raise fail(f"{cls.__name__} estimates require the exact native type with its own forward")


def require_eval(module: nn.Module) -> None:
    if any(m.training for m in module.modules()):
        raise fail("native Transformer estimates cover evaluation mode only")


def require_real_parameters(module: nn.Module) -> None:
    for parameter in module.parameters():
        if parameter.layout != torch.strided or parameter.is_nested or not parameter.dtype.is_floating_point:
            raise fail("native Transformer estimates require dense, strided, real floating parameters")


def causal_hint(value: object, name: str, *, allow_none: bool) -> bool:
    if value is None and allow_none:
        return False  # "infer from the mask": the mask is counted anyway
    if not isinstance(value, bool):
        raise fail(f"{name} must be a bool")
    return value


def activation_shape(value: object, role: str, *, strict: bool) -> Shape:
    if not isinstance(value, torch.Tensor):
        raise fail(f"{role} must be a tensor")
    if value.is_nested or value.layout != torch.strided:
        raise fail(f"{role} must be a dense strided tensor (nested and sparse inputs are unsupported)")
    if strict and not value.dtype.is_floating_point:
        raise fail(f"{role} must be a real floating-point tensor")
    if value.dim() != 3:
        raise fail(f"{role} must be a batched 3D tensor (unbatched inputs are unsupported)")
    return Shape(tuple(value.shape))


def _mask(value: object, role: str, expected: tuple[tuple[int, ...], ...]) -> torch.Tensor | None:
    if value is None:
        return None
    if not isinstance(value, torch.Tensor) or value.is_nested or value.layout != torch.strided:
        raise fail(f"{role} must be None or a dense strided tensor")
    if value.dtype != torch.bool and not value.dtype.is_floating_point:
        raise fail(f"{role} must be a boolean or floating tensor")
    if tuple(value.shape) not in expected:
        shapes = " or ".join(str(list(s)) for s in expected)
        raise fail(f"{role} must have shape {shapes}, got {list(value.shape)}")
    return value


def split_layout(shape: Shape, batch_first: bool) -> tuple[int, int, int]:
    """(batch, tokens, features) of a 3D activation in the module's layout."""
    a, b, features = shape.dims
    return (a, b, features) if batch_first else (b, a, features)


# --- MultiheadAttention -----------------------------------------------------------------------


def _check_attention_module(mha: nn.Module) -> tuple[int, int, int, int, bool, bool]:
    """Module-side checks of §13 "Attention"; returns (E, H, K, V, in_bias, out_bias)."""
    require_native_forward(mha, nn.MultiheadAttention)
    if mha.training:
        raise fail("native attention estimates cover evaluation mode only")
    if mha.bias_k is not None or mha.bias_v is not None:
        raise fail("add_bias_kv=True is unsupported")
    if mha.add_zero_attn:
        raise fail("add_zero_attn=True is unsupported")
    embed, heads, kdim, vdim = mha.embed_dim, mha.num_heads, mha.kdim, mha.vdim
    if heads <= 0 or embed % heads or mha.head_dim != embed // heads:
        raise fail("attention requires num_heads > 0 dividing embed_dim")
    if mha._qkv_same_embed_dim:
        if mha.in_proj_weight is None or tuple(mha.in_proj_weight.shape) != (3 * embed, embed):
            raise fail("packed in_proj_weight must have the native shape (3E, E)")
    else:
        expected = ((mha.q_proj_weight, (embed, embed)), (mha.k_proj_weight, (embed, kdim)))
        for weight, shape in (*expected, (mha.v_proj_weight, (embed, vdim))):
            if weight is None or tuple(weight.shape) != shape:
                raise fail("separate projection weights must have the native shapes (E,E), (E,K), (E,V)")
    in_bias = mha.in_proj_bias is not None
    if in_bias and tuple(mha.in_proj_bias.shape) != (3 * embed,):
        raise fail("in_proj_bias must have the native shape (3E,)")
    out = mha.out_proj
    if type(out) not in _OUT_PROJ_TYPES or out.in_features != embed or out.out_features != embed:
        raise fail("the output projection must be a native Linear with in = out = embed_dim")
    if tuple(out.weight.shape) != (embed, embed):
        raise fail("the output projection weight must have shape (E, E)")
    out_bias = out.bias is not None
    if out_bias and tuple(out.bias.shape) != (embed,):
        raise fail("the output projection bias must have shape (E,)")
    require_real_parameters(mha)
    return embed, heads, kdim, vdim, in_bias, out_bias


def attention_spec(
    mha: nn.Module,
    query: Shape,
    key: Shape,
    value: Shape,
    *,
    key_padding_mask: object = None,
    attn_mask: object = None,
    causal: bool = False,
    averaged_weights: bool = False,
    groups: tuple[tuple[str, ...], ...] = (("query",), ("key",), ("value",)),
    strict: bool = True,
) -> AttentionSpec:
    """Spec of one attention call on 3D shapes; ``strict=False`` is the narrower FLOP boundary."""
    embed, heads, kdim, vdim, in_bias, out_bias = _check_attention_module(mha)
    batch_first = bool(mha.batch_first)
    batch, target, q_width = split_layout(query, batch_first)
    k_batch, source, k_width = split_layout(key, batch_first)
    v_batch, v_source, v_width = split_layout(value, batch_first)
    if (q_width, k_width, v_width) != (embed, kdim, vdim):
        raise fail(f"attention input widths must be (E, kdim, vdim) = ({embed}, {kdim}, {vdim})")
    if not batch == k_batch == v_batch or source != v_source:
        raise fail("query, key and value must share the batch size; key and value their length")
    if target <= 0 or source <= 0 or (strict and batch <= 0):
        raise fail("empty attention inputs are unsupported")
    if causal and attn_mask is None:
        raise fail("a causal hint without an attention mask is unsupported (ambiguous fast path)")
    if strict:
        padding = _mask(key_padding_mask, "key_padding_mask", ((batch, source),))
        attention = _mask(attn_mask, "attn_mask", ((target, source), (batch * heads, target, source)))
    else:
        padding = key_padding_mask if isinstance(key_padding_mask, torch.Tensor) else None
        attention = attn_mask if isinstance(attn_mask, torch.Tensor) else None
    return AttentionSpec(
        batch=batch,
        target=target,
        source=source,
        embed=embed,
        heads=heads,
        kdim=kdim,
        vdim=vdim,
        in_bias=in_bias,
        out_bias=out_bias,
        key_padding_mask=padding,
        attn_mask=attention,
        causal=causal,
        averaged_weights=averaged_weights,
        groups=groups,
        batch_first=batch_first,
    )


def _identity_groups(slots: Mapping[str, Any]) -> tuple[tuple[str, ...], ...]:
    """Group query/key/value by object identity, in that order (§16.4)."""
    groups: list[list[str]] = []
    owners: list[object] = []
    for name in ("query", "key", "value"):
        for owner, group in zip(owners, groups, strict=True):
            if slots[name] is owner:
                group.append(name)
                break
        else:
            owners.append(slots[name])
            groups.append([name])
    return tuple(tuple(g) for g in groups)


def mha_spec(module: nn.Module, slots: Mapping[str, Any], strict: bool) -> AttentionSpec:
    need, average = slots["need_weights"], slots["average_attn_weights"]
    if not isinstance(need, bool) or not isinstance(average, bool):
        raise fail("need_weights and average_attn_weights must be bool")
    return attention_spec(
        module,
        activation_shape(slots["query"], "query", strict=strict),
        activation_shape(slots["key"], "key", strict=strict),
        activation_shape(slots["value"], "value", strict=strict),
        key_padding_mask=slots["key_padding_mask"],
        attn_mask=slots["attn_mask"],
        causal=causal_hint(slots["is_causal"], "is_causal", allow_none=False),
        averaged_weights=need and average,
        groups=_identity_groups(slots),
        strict=strict,
    )
