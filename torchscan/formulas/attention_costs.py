"""MACs, logical DMAs and module FLOPs of native attention/Transformer calls (spec §15).

Pure integer arithmetic over the specs of :mod:`torchscan.formulas.attention`. Each count covers the
whole native call (the module and every descendant it runs), so the handler that reports it owns the
subtree. A DMA is one logical element read or write of the staged dense algorithm of §15.2–§15.3: not
a byte and not measured memory traffic. MACs are counted on their own and never derived by halving
FLOPs (the tiny ``nn.Transformer`` of §15.4 has 1,088 MACs and 2,694 module FLOPs).
"""

from __future__ import annotations

from collections.abc import Callable

from torchscan.formulas.attention import (
    AttentionSpec,
    FeedForwardSpec,
    LayerSpec,
    NativeSpec,
    NormSpec,
    StackSpec,
    TransformerSpec,
)

# Module-FLOP cost per element of the feed-forward activation: ReLU is one comparison; exact GELU
# counts 5 (formulas.md A.5.7, erf counted as 1), the project's decision for native layers.
_ACTIVATION_FLOPS = {"relu": 1, "gelu": 5}


def _dot(terms: int) -> int:
    """FLOPs of one dot product of ``terms`` products: K multiplies + K−1 adds (0 when empty)."""
    return max(0, 2 * terms - 1)


# --- MACs (§15.1) -----------------------------------------------------------------------------


def attention_macs(spec: AttentionSpec) -> int:
    """``2·B·T·E² + B·S·E·(K + V) + 2·B·T·S·E``; heads cancel, masks reduce nothing."""
    b, t, s, e = spec.batch, spec.target, spec.source, spec.embed
    return 2 * b * t * e * e + b * s * e * (spec.kdim + spec.vdim) + 2 * b * t * s * e


def _norm_macs(norm: NormSpec | None) -> int:
    return 0 if norm is None else norm.elements * (1 + norm.weight)


def _feed_forward_macs(ffn: FeedForwardSpec) -> int:
    return 2 * ffn.rows * ffn.embed * ffn.hidden


def _layer_macs(layer: LayerSpec) -> int:
    attention = sum(attention_macs(a) for a in layer.attentions)
    return attention + _feed_forward_macs(layer.feed_forward) + sum(_norm_macs(n) for n in layer.norms)


def _stack_macs(stack: StackSpec) -> int:
    return sum(_layer_macs(layer) for layer in stack.layers) + _norm_macs(stack.final_norm)


# --- logical DMAs (§15.2, §15.3) --------------------------------------------------------------


def attention_dmas(spec: AttentionSpec) -> int:
    """``I + P + 7Q + 4J + 10A + 4R`` plus each mask and head-averaged returned weights (§15.2)."""
    b, t, s, e, h = spec.batch, spec.target, spec.source, spec.embed, spec.heads
    q, j, a, r = b * t * e, b * s * e, b * h * t * s, b * h * t
    inputs = b * t * e + b * s * spec.kdim + b * s * spec.vdim
    params_in = e * (e + spec.kdim + spec.vdim) + 3 * e * spec.in_bias
    params_out = e * e + e * spec.out_bias
    total = inputs + params_in + params_out + 7 * q + 4 * j + 10 * a + 4 * r
    total += sum(mask.numel() + 2 * a for mask in spec.masks)
    if spec.averaged_weights:
        total += a + b * t * s
    return total


def _norm_dmas(norm: NormSpec | None) -> int:
    if norm is None:
        return 0
    n, rows = norm.elements, norm.elements // norm.width
    params = norm.width * (norm.weight + norm.bias)
    return 4 * n + 5 * rows + 1 + params + 2 * n * (norm.weight or norm.bias)


def _feed_forward_dmas(ffn: FeedForwardSpec) -> int:
    n, u = ffn.rows * ffn.embed, ffn.rows * ffn.hidden
    params = 2 * ffn.embed * ffn.hidden + ffn.hidden * ffn.bias1 + ffn.embed * ffn.bias2
    return 2 * n + 4 * u + params


def _layer_dmas(layer: LayerSpec) -> int:
    attention = sum(attention_dmas(a) for a in layer.attentions)
    norms = sum(_norm_dmas(n) for n in layer.norms)
    return attention + _feed_forward_dmas(layer.feed_forward) + norms + 3 * layer.elements * layer.residuals


def _stack_dmas(stack: StackSpec) -> int:
    return sum(_layer_dmas(layer) for layer in stack.layers) + _norm_dmas(stack.final_norm)


# --- module FLOPs (§15.5) ---------------------------------------------------------------------


def attention_flops(spec: AttentionSpec) -> int:
    """Module FLOPs of one attention call under the project's module-FLOP conventions (§15.5)."""
    b, t, s, e, h = spec.batch, spec.target, spec.source, spec.embed, spec.heads
    head_dim = e // h
    a, r, rows_q, rows_kv = b * h * t * s, b * h * t, b * t, b * s
    projections = rows_q * e * (_dot(e) + spec.in_bias)
    projections += rows_kv * e * (_dot(spec.kdim) + spec.in_bias)
    projections += rows_kv * e * (_dot(spec.vdim) + spec.in_bias)
    scaling = rows_q * e
    scores = a * _dot(head_dim) + len(spec.masks) * a + (5 * a - 2 * r)
    values = rows_q * e * _dot(s)
    output = rows_q * e * (_dot(e) + spec.out_bias)
    averaged = a if spec.averaged_weights else 0
    return projections + scaling + scores + values + output + averaged


def _norm_flops(norm: NormSpec | None) -> int:
    if norm is None:
        return 0
    n = norm.elements
    return 6 * n + 2 * (n // norm.width) + n * norm.weight + n * norm.bias


def _feed_forward_flops(ffn: FeedForwardSpec) -> int:
    first = ffn.rows * ffn.hidden * (_dot(ffn.embed) + ffn.bias1)
    second = ffn.rows * ffn.embed * (_dot(ffn.hidden) + ffn.bias2)
    return first + _ACTIVATION_FLOPS[ffn.activation] * ffn.rows * ffn.hidden + second


def _layer_flops(layer: LayerSpec) -> int:
    attention = sum(attention_flops(a) for a in layer.attentions)
    norms = sum(_norm_flops(n) for n in layer.norms)
    return attention + layer.residuals * layer.elements + norms + _feed_forward_flops(layer.feed_forward)


def _stack_flops(stack: StackSpec) -> int:
    return sum(_layer_flops(layer) for layer in stack.layers) + _norm_flops(stack.final_norm)


# --- dispatch over spec kinds ---------------------------------------------------------------


def native_macs(spec: NativeSpec) -> int:
    """MACs of one complete native call (§15.1)."""
    return _apply(spec, attention_macs, _layer_macs, _stack_macs)


def native_dmas(spec: NativeSpec) -> int:
    """Logical DMAs of one complete native call (§15.2–§15.3); not bytes, not hardware traffic."""
    return _apply(spec, attention_dmas, _layer_dmas, _stack_dmas)


def native_flops(spec: NativeSpec) -> int:
    """Module FLOPs of one complete native call (§15.5); a separate method from operator FLOPs."""
    return _apply(spec, attention_flops, _layer_flops, _stack_flops)


def _apply(
    spec: NativeSpec,
    attention: Callable[[AttentionSpec], int],
    layer: Callable[[LayerSpec], int],
    stack: Callable[[StackSpec], int],
) -> int:
    if isinstance(spec, AttentionSpec):
        return attention(spec)
    if isinstance(spec, LayerSpec):
        return layer(spec)
    if isinstance(spec, StackSpec):
        return stack(spec)
    if isinstance(spec, TransformerSpec):
        return stack(spec.encoder) + stack(spec.decoder)
    raise TypeError(f"not a native spec: {type(spec).__name__}")


# --- whole calls and their parts (views-3.md 1: shares along the module tree) ------------------

Costs = tuple[int, int, int]
"""``(module FLOPs, MACs, logical DMAs)`` of one native call or of one part of it."""


def native_costs(spec: NativeSpec) -> Costs:
    """Module FLOPs, MACs and logical DMAs of one complete native call."""
    return native_flops(spec), native_macs(spec), native_dmas(spec)


def norm_costs(norm: NormSpec | None) -> Costs:
    """A feature-only LayerNorm's part of a native call (``Identity``/``None``: nothing)."""
    return _norm_flops(norm), _norm_macs(norm), _norm_dmas(norm)


def projection_costs(rows: int, fan_in: int, fan_out: int, bias: bool) -> Costs:
    """One ``Linear(fan_in → fan_out)`` applied to ``rows`` vectors inside a native call.

    The terms of §15 that belong to the projection: ``rows·o·(2i − 1 + b)`` FLOPs, ``rows·i·o``
    MACs, and ``rows·i + i·o + o·b + rows·o`` DMAs (read input and parameters, write the output) —
    the same numbers the ``nn.Linear`` module formulas give for that call.
    """
    return (
        rows * fan_out * (_dot(fan_in) + bias),
        rows * fan_in * fan_out,
        rows * fan_in + fan_in * fan_out + fan_out * bias + rows * fan_out,
    )
