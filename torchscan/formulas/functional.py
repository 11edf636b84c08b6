"""Functional formulas (real-models.md §1): dispatched operators estimated as their module counterparts.

An operator run in a composite module's own frame, or inside a leaf that has no module formula, is
estimated exactly as the Part-A module it is equivalent to: the formula builds that module on the
``meta`` device and runs the *registered* Part-A formulas on meta tensors of the observed shapes, so
the module and functional paths can never drift. Families without a module (pointwise arithmetic,
reductions, copies, indexing) follow the §1 table directly.

The dispatch callback only stores :func:`~torchscan.formulas.operator_calls.capture` (shapes, dtypes,
scalar arguments; never values; re-exported here); :func:`estimate_call` runs at report-build time.
Each metric is ``int`` or ``None`` (unestimated).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from torchscan.formulas import attention_kernels, operators, product_ops, registry
from torchscan.formulas.meta_modules import meta_module, module_estimate
from torchscan.formulas.operator_calls import (
    CUSTOM,
    IGNORED,
    INHERITED,
    SUPPLEMENTAL,
    UNCOUNTED,
    NestedMeta,
    OperatorCall,
    TensorMeta,
    capture,
)

# The call records live in ``operator_calls``; they are re-exported for the observer and the tests.
__all__ = [
    "CUSTOM",
    "IGNORED",
    "INHERITED",
    "PRODUCT_KERNELS",
    "SUPPLEMENTAL",
    "UNCOUNTED",
    "ZERO_COST",
    "Estimate",
    "NestedMeta",
    "OperatorCall",
    "TensorMeta",
    "capture",
    "estimate_call",
]

Estimate = tuple[int | None, int | None, int | None]  # (module_flops, macs, dmas)


def _tensors(value: Any) -> list[TensorMeta]:
    if isinstance(value, TensorMeta):
        return [value]
    if isinstance(value, tuple):
        return [t for v in value for t in _tensors(v)]
    return []


def _holds_nested(value: Any) -> bool:
    if isinstance(value, NestedMeta):
        return True
    return isinstance(value, tuple) and any(_holds_nested(v) for v in value)


def _elements(value: Any) -> int:
    return sum(t.numel() for t in _tensors(value))


def _operand_elements(call: OperatorCall) -> int:
    """Elements of every tensor operand read (an ``out=`` destination is written, not read)."""
    return _elements(call.args) + sum(_elements(v) for k, v in call.kwargs if k != "out")


def _first(value: Any) -> TensorMeta:
    found = _tensors(value)
    if not found:
        raise ValueError("no tensor")
    return found[0]


def _kwarg(call: OperatorCall, index: int, key: str, default: Any) -> Any:
    if len(call.args) > index:
        return call.args[index]
    return dict(call.kwargs).get(key, default)


def _linear(call: OperatorCall, bias_at: int | None, batched: bool) -> Estimate:
    """``mm``/``bmm`` as ``nn.Linear`` without bias per product row; ``addmm``/``baddbmm`` with bias."""
    offset = 0 if bias_at is None else 1
    a, b = call.args[offset], call.args[offset + 1]
    if not isinstance(a, TensorMeta) or not isinstance(b, TensorMeta):
        raise ValueError("matrix operands")
    batches = a.shape[0] if batched else 1
    rows, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    beta = _kwarg(call, 3, "beta", 1) if bias_at is not None else 0
    has_bias = bias_at is not None and beta != 0
    layer = meta_module(nn.Linear, k, n, has_bias)
    # truth.md 3: a complex multiply-accumulate is 4 real multiplies and 4 real additions
    factor, dtype = (4, torch.float32) if a.dtype.is_complex or b.dtype.is_complex else (1, a.dtype)
    flops, macs, dmas = module_estimate(layer, (TensorMeta((rows, k), dtype),), TensorMeta((rows, n), dtype))
    flops, macs, dmas = batches * flops * factor, batches * macs * factor, batches * dmas
    if has_bias:
        # Linear reads its N bias values once per product; a broadcast operand may hold more or fewer.
        dmas += _first(call.args[0]).numel() - batches * n
    # A non-unit alpha/beta scales the product/bias: one multiply per output element each.
    out_elements = batches * rows * n
    flops += out_elements * ((_kwarg(call, 4, "alpha", 1) != 1) + (has_bias and beta != 1))
    return flops, macs, dmas


def _vector_product(call: OperatorCall) -> Estimate:
    """``mv(A (n, m), x (m))`` as ``nn.Linear(m, n)`` without bias on one row; ``dot``/``vdot`` of two
    ``k``-vectors as ``nn.Linear(k, 1)``: FLOPs ``n·(2m − 1)``, MACs ``m·n``, DMAs ``n·m + m + n``."""
    a, b = call.args[0], call.args[1]
    if not isinstance(a, TensorMeta) or not isinstance(b, TensorMeta):
        raise ValueError("vector operands")
    width, outputs = (a.shape[-1], a.shape[0]) if len(a.shape) == 2 else (a.numel(), 1)
    layer = meta_module(nn.Linear, width, outputs, False)
    return module_estimate(layer, (TensorMeta((1, width), a.dtype),), TensorMeta((1, outputs), a.dtype))


def _grouped_mm(call: OperatorCall) -> Estimate:
    """``_grouped_mm(rows (M, K), experts (G, K, N), offs)``: each row is one expert's ``nn.Linear(K, N)``
    without bias, so FLOPs and MACs are those of that Linear on ``M`` rows; DMAs read the rows, every
    expert's weights and the offsets and write ``M·N`` (the Linear reads one weight matrix)."""
    rows, weight = call.args[0], call.args[1]
    if not (isinstance(rows, TensorMeta) and isinstance(weight, TensorMeta)) or len(rows.shape) != 2:
        raise ValueError("packed rows")
    if len(weight.shape) != 3 or weight.shape[1] != rows.shape[1]:
        raise ValueError("equal-width expert matrices")
    m, k, n = rows.shape[0], rows.shape[1], weight.shape[2]
    layer = meta_module(nn.Linear, k, n, False)
    flops, macs, _ = module_estimate(layer, (rows,), TensorMeta((m, n), rows.dtype))
    return flops, macs, _operand_elements(call) + _elements(call.out)


def _convolution(call: OperatorCall) -> Estimate:
    """``convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)``."""
    inp, weight, bias = call.args[0], call.args[1], call.args[2]
    stride, padding, dilation, transposed, output_padding, groups = call.args[3:9]
    rank = len(weight.shape) - 2
    kernel = tuple(weight.shape[2:])
    factory: Callable[..., nn.Module]
    if transposed:
        factory = (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)[rank - 1]
        layer = meta_module(
            factory, weight.shape[0], weight.shape[1] * groups, kernel, tuple(stride), tuple(padding),
            tuple(output_padding), groups, bias is not None, tuple(dilation),
        )  # fmt: skip
    else:
        factory = (nn.Conv1d, nn.Conv2d, nn.Conv3d)[rank - 1]
        layer = meta_module(
            factory, weight.shape[1] * groups, weight.shape[0], kernel, tuple(stride), tuple(padding),
            tuple(dilation), groups, bias is not None,
        )  # fmt: skip
    return module_estimate(layer, (inp,), _first(call.out))


def _activation(factory: Callable[[OperatorCall], nn.Module]) -> Callable[[OperatorCall], Estimate]:
    def estimate(call: OperatorCall) -> Estimate:
        return module_estimate(factory(call), (_first(call.args),), _first(call.out))

    return estimate


def _inplace(call: OperatorCall) -> bool:
    return call.name.endswith("_")


def _elu(call: OperatorCall) -> nn.Module:
    alpha, scale, input_scale = (
        _kwarg(call, i, k, 1.0) for i, k in ((1, "alpha"), (2, "scale"), (3, "input_scale"))
    )
    if scale == 1 and input_scale == 1:
        return meta_module(nn.ELU, alpha, _inplace(call))
    selu = nn.SELU()
    if (
        input_scale == 1
        and math.isclose(scale, 1.0507009873554804934193349852946)
        and math.isclose(alpha, 1.6732632423543772848170429916717)
    ):
        return selu
    raise ValueError("ELU with a scale is not a module configuration")


_ACTIVATIONS: dict[str, Callable[[OperatorCall], nn.Module]] = {
    "relu": lambda c: meta_module(nn.ReLU, _inplace(c)),
    "gelu": lambda c: meta_module(nn.GELU, _kwarg(c, 1, "approximate", "none")),
    "silu": lambda c: meta_module(nn.SiLU),
    "sigmoid": lambda c: meta_module(nn.Sigmoid),
    "tanh": lambda c: meta_module(nn.Tanh),
    "hardtanh": lambda c: meta_module(
        nn.Hardtanh, _kwarg(c, 1, "min_val", -1.0), _kwarg(c, 2, "max_val", 1.0)
    ),
    "elu": _elu,
    "leaky_relu": lambda c: meta_module(nn.LeakyReLU, _kwarg(c, 1, "negative_slope", 0.01), _inplace(c)),
    "softplus": lambda c: meta_module(
        nn.Softplus, _kwarg(c, 1, "beta", 1.0), _kwarg(c, 2, "threshold", 20.0)
    ),
    "mish": lambda c: meta_module(nn.Mish),
    "hardswish": lambda c: meta_module(nn.Hardswish),
    "hardsigmoid": lambda c: meta_module(nn.Hardsigmoid),
    "hardshrink": lambda c: meta_module(nn.Hardshrink, _kwarg(c, 1, "lambd", 0.5)),
    "softshrink": lambda c: meta_module(nn.Softshrink, _kwarg(c, 1, "lambd", 0.5)),
    "threshold": lambda c: meta_module(nn.Threshold, c.args[1], c.args[2]),
    "log_sigmoid_forward": lambda c: meta_module(nn.LogSigmoid),
}


def _softmax(factory: type[nn.Module]) -> Callable[[OperatorCall], Estimate]:
    def estimate(call: OperatorCall) -> Estimate:
        return module_estimate(meta_module(factory, call.args[1]), (_first(call.args),), _first(call.out))

    return estimate


def _layer_norm(call: OperatorCall) -> Estimate:
    """``native_layer_norm(input, normalized_shape, weight, bias, eps)``."""
    inp, shape, weight, bias, eps = call.args[:5]
    if weight is None and bias is not None:
        raise ValueError("bias without weight")
    layer = meta_module(nn.LayerNorm, tuple(shape), eps, weight is not None, bias is not None)
    return module_estimate(layer, (inp,), _first(call.out))


def _group_norm(call: OperatorCall) -> Estimate:
    """``native_group_norm(input, weight, bias, N, C, HxW, group, eps)``."""
    inp, weight, bias, _, channels, _, groups, eps = call.args[:8]
    if (weight is None) != (bias is None):
        raise ValueError("partial affine")
    layer = meta_module(nn.GroupNorm, groups, channels, eps, weight is not None)
    return module_estimate(layer, (inp,), _first(call.out))


def _rms_norm(call: OperatorCall) -> Estimate:
    """``rms_norm(input, normalized_shape, weight, eps)`` (and ``_fused_rms_norm``)."""
    inp, shape = call.args[0], call.args[1]
    weight, eps = _kwarg(call, 2, "weight", None), _kwarg(call, 3, "eps", None)
    layer = meta_module(nn.RMSNorm, tuple(shape), eps, weight is not None)
    return module_estimate(layer, (inp,), _first(call.out))


def _batch_norm(with_stats: bool, training_at: int | None) -> Callable[[OperatorCall], Estimate]:
    """The ``native_batch_norm`` family as ``nn.BatchNormNd`` in the mode observed."""

    def estimate(call: OperatorCall) -> Estimate:
        inp, weight = call.args[0], call.args[1]
        running = call.args[3] if with_stats else None
        training = bool(call.args[training_at]) if training_at is not None else False
        # momentum follows ``training``; the no-training overload has none and momentum at 5
        momentum = call.args[5 if training_at is None else training_at + 1]
        factory = {2: nn.BatchNorm1d, 3: nn.BatchNorm1d, 4: nn.BatchNorm2d, 5: nn.BatchNorm3d}[len(inp.shape)]
        layer = meta_module(factory, inp.shape[1], 1e-5, momentum, weight is not None, running is not None)
        layer.train(training)  # the cached module's mode is set per call, before its formulas read it
        return module_estimate(layer, (inp,), _first(call.out))

    return estimate


def _pool(factory: type[nn.Module], avg: bool) -> Callable[[OperatorCall], Estimate]:
    """``max_poolNd[_with_indices](x, k, stride, padding, dilation, ceil)``, ``avg_poolNd(x, k, ...)``."""

    def estimate(call: OperatorCall) -> Estimate:
        args = list(call.args[1:])
        kernel = tuple(args[0])
        stride = tuple(args[1]) if len(args) > 1 and args[1] else kernel
        if avg:
            rest = [tuple(args[2]) if len(args) > 2 else 0, *args[3:6]]
            layer = meta_module(factory, kernel, stride, *rest)
        else:
            padding = tuple(args[2]) if len(args) > 2 else 0
            dilation = tuple(args[3]) if len(args) > 3 else 1
            ceil_mode = args[4] if len(args) > 4 else False
            layer = meta_module(factory, kernel, stride, padding, dilation, False, ceil_mode)
        return module_estimate(layer, (call.args[0],), _first(call.out))

    return estimate


def _adaptive(factory: type[nn.Module]) -> Callable[[OperatorCall], Estimate]:
    def estimate(call: OperatorCall) -> Estimate:
        layer = meta_module(factory, tuple(call.args[1]))
        return module_estimate(layer, (call.args[0],), _first(call.out))

    return estimate


def _attention(mask_at: int | None) -> Callable[[OperatorCall], Estimate]:
    """SDPA kernels as the attention core: scaling, scores, masks, softmax, weighted sum.

    Shapes ``q (…, T, D)``, ``k (…, S, D)``, ``v (…, S, Dv)``; ``A = lead·T·S`` scores, ``R = lead·T``
    rows. FLOPs: ``lead·T·D`` scaling + ``A·(2D − 1)`` scores + ``A`` per mask (a causal flag is a
    mask) + ``5A − 2R`` softmax + ``lead·T·Dv·(2S − 1)`` values (attention_costs §15.5 per head).
    MACs ``A·D + A·Dv``. DMAs: read q, k, v and masks, write and re-read the scores twice (softmax),
    write the output: ``Q + K + V + M + 4A + O``.
    """

    def estimate(call: OperatorCall) -> Estimate:
        q, k, v = call.args[:3]
        mask = call.args[mask_at] if mask_at is not None and len(call.args) > mask_at else None
        mask = dict(call.kwargs).get("attn_mask", mask)
        # is_causal: 5th argument of the flash kernels, 7th of those taking an attention bias
        causal = bool(_kwarg(call, 4 if mask_at is None else 6, "is_causal", False))
        lead = math.prod(q.shape[:-2])
        t, d, s, dv = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
        a, r = lead * t * s, lead * t
        masks = int(isinstance(mask, TensorMeta)) + int(causal)
        flops = lead * t * d + a * max(0, 2 * d - 1) + masks * a + 5 * a - 2 * r
        flops += lead * t * dv * max(0, 2 * s - 1)
        mask_reads = mask.numel() if isinstance(mask, TensorMeta) else 0
        dmas = q.numel() + k.numel() + v.numel() + mask_reads + 4 * a + lead * t * dv
        return flops, a * d + a * dv, dmas

    return estimate


def _zero(call: OperatorCall) -> Estimate:
    return 0, 0, 0


def _copy(call: OperatorCall) -> Estimate:
    """Copies and layout changes: FLOPs 0, MACs 0, DMAs = elements read + written."""
    return 0, 0, _operand_elements(call) + _elements(call.out)


def _indexing(call: OperatorCall) -> Estimate:
    """Embedding convention: FLOPs 0, MACs 0, DMAs = index elements read + output elements written."""
    index = sum(
        t.numel() for t in _tensors(call.args) if not t.dtype.is_floating_point and not t.dtype.is_complex
    )
    if call.name == "aten.embedding":
        index = _first(call.args[1]).numel()
    return 0, 0, index + _elements(call.out)


def _deduplication(call: OperatorCall) -> Estimate:
    """``_unique2`` and the other sorting deduplications, once ignored as selection (families.md 1.3):
    FLOPs 0, MACs 0, DMAs = every operand element read (boxes, scores or features, not only indices)
    + every output element written. Not yet classified (uncounted): unestimated, never a zero."""
    if not call.ignored:
        raise ValueError("deduplication not classified as selection")
    return _copy(call)


def _pointwise(call: OperatorCall) -> Estimate:
    """Other arithmetic: the operator FLOPs (when counted), 0 MACs, operand reads + output writes."""
    return (call.flops if call.complete else None), 0, _operand_elements(call) + _elements(call.out)


def _names(*names: str) -> list[str]:
    return [f"aten.{n}" for name in names for n in (name, f"{name}_")]


_TABLE: dict[str, Callable[[OperatorCall], Estimate]] = {
    "aten.mm": lambda c: _linear(c, None, False),
    "aten.bmm": lambda c: _linear(c, None, True),
    "aten.addmm": lambda c: _linear(c, 0, False),
    "aten.addmm_": lambda c: _linear(c, 0, False),
    "aten.baddbmm": lambda c: _linear(c, 0, True),
    "aten.baddbmm_": lambda c: _linear(c, 0, True),
    "aten.mv": _vector_product,
    "aten.dot": _vector_product,
    "aten.vdot": _vector_product,
    "aten._grouped_mm": _grouped_mm,
    "aten.convolution": _convolution,
    "aten._convolution": _convolution,
    **{name: _activation(factory) for key, factory in _ACTIVATIONS.items() for name in _names(key)},
    "aten._softmax": _softmax(nn.Softmax),
    "aten._safe_softmax": _softmax(nn.Softmax),
    "aten._log_softmax": _softmax(nn.LogSoftmax),
    "aten.native_layer_norm": _layer_norm,
    "aten.native_group_norm": _group_norm,
    "aten.rms_norm": _rms_norm,
    "aten._fused_rms_norm": _rms_norm,
    "aten.native_batch_norm": _batch_norm(True, 5),
    "aten._native_batch_norm_legit": lambda c: (
        _batch_norm(True, 5)(c) if isinstance(c.args[3], TensorMeta) else _batch_norm(False, 3)(c)
    ),
    "aten._native_batch_norm_legit_no_training": _batch_norm(True, None),
    "aten.max_pool1d": _pool(nn.MaxPool1d, False),
    "aten.max_pool2d": _pool(nn.MaxPool2d, False),
    "aten.max_pool3d": _pool(nn.MaxPool3d, False),
    "aten.max_pool2d_with_indices": _pool(nn.MaxPool2d, False),
    "aten.max_pool3d_with_indices": _pool(nn.MaxPool3d, False),
    "aten.avg_pool1d": _pool(nn.AvgPool1d, True),
    "aten.avg_pool2d": _pool(nn.AvgPool2d, True),
    "aten.avg_pool3d": _pool(nn.AvgPool3d, True),
    "aten._adaptive_avg_pool2d": _adaptive(nn.AdaptiveAvgPool2d),
    "aten._adaptive_avg_pool3d": _adaptive(nn.AdaptiveAvgPool3d),
    "aten.adaptive_avg_pool1d": _adaptive(nn.AdaptiveAvgPool1d),
    "aten.adaptive_max_pool1d": _adaptive(nn.AdaptiveMaxPool1d),
    "aten.adaptive_max_pool2d": _adaptive(nn.AdaptiveMaxPool2d),
    "aten.adaptive_max_pool3d": _adaptive(nn.AdaptiveMaxPool3d),
    "aten._scaled_dot_product_flash_attention_for_cpu": _attention(None),
    "aten._scaled_dot_product_flash_attention": _attention(None),
    "aten._scaled_dot_product_efficient_attention": _attention(3),
    "aten._scaled_dot_product_cudnn_attention": _attention(3),
    "aten.embedding": _indexing,
    **{
        f"aten.{name}": _deduplication for name in ("_unique", "_unique2", "unique_dim", "unique_consecutive")
    },
}
"""Operators estimated as a specific module or core (real-models.md §1 table), by packet name."""

_REASON_RULES = {
    operators.INDEXING_REASON: _indexing,
    operators.RANDOM_REASON: _zero,
    operators.PROFILER_REASON: _zero,
    "Data movement is excluded from FLOPs.": _copy,
}

# TorchScan's kernels that multiply matrices (products, convolutions and their backward, fused
# attention, recurrent layers, bilinear forms):
# their MACs are not 0, so the pointwise rule (0 MACs) must never describe them. Without an entry
# of their own in ``_TABLE`` they stay unestimated (real-models.md 1, "What stays unestimated").
PRODUCT_KERNELS = frozenset(
    f"aten.{name}"
    for name in (
        "lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
        "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "mkldnn_rnn_layer", "mkldnn_rnn_layer_backward",
        "bilinear", "_trilinear",
        "_native_multi_head_attention", "_transformer_encoder_layer_fwd", "_scaled_grouped_mm",
        *product_ops.PRODUCTS, *product_ops.CONVOLUTIONS, *attention_kernels.ATTENTION_KERNELS,
    )
)  # fmt: skip

# Operators never stored by the recorder: their functional estimate is 0/0/0 whatever the call.
ZERO_COST = frozenset(
    name
    for name, reason in operators.IGNORED_OPERATORS.items()
    if reason not in _REASON_RULES and name not in _TABLE
)


def estimate_call(call: OperatorCall) -> Estimate:
    """The functional estimate of one call: ``(module_flops, macs, dmas)``, ``None`` = unestimated.

    Only an operator without a functional formula (custom, uncounted, an unlisted native kernel, a
    call its formula rejects) is unestimated; pointwise, reduction and indexing operators are known
    to give 0 MACs, so they never leave MACs unestimated. A call with a nested (ragged) operand is
    unestimated unless its operator costs nothing whatever its operands (no formula reads a shape
    that a nested tensor does not have).
    """
    if _holds_nested((call.args, call.kwargs, call.out)):
        return (0, 0, 0) if call.ignored and call.name in ZERO_COST else (None, None, None)
    rule = _TABLE.get(call.name)
    if rule is not None:
        try:
            return rule(call)
        except (registry.NotRecognised, NotImplementedError, ValueError, TypeError, IndexError, KeyError):
            return None, None, None
    if call.ignored:
        if call.name in ZERO_COST:
            return 0, 0, 0
        reason = operators.ignored_reason(call.name) or operators.INDEXING_REASON
        return _REASON_RULES.get(reason, _zero)(call)
    if call.kind == SUPPLEMENTAL and call.name not in PRODUCT_KERNELS:
        return _pointwise(call)
    return None, None, None
