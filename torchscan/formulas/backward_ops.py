"""Backward and loss kernels of a training step (training-and-hardware.md 2), ``torchscan_flops_v1``.

Each formula counts the element-wise arithmetic of the gradient that the kernel computes, derived
from its forward counterpart's derivative (the derivation is in each docstring). Convention as in
formulas.md B.8: a multiply, add, subtract, divide, comparison, ``exp`` or ``erf`` costs 1, a
``tanh`` 6 and a ``sigmoid`` 4; selection, zero-filling and scattering a value move data and cost 0.
Reductions of ``k`` values cost ``k − 1`` adds and a mean one more divide. Loss kernels are in
``loss_ops``. ``silu_backward`` and ``mish_backward`` are ``CompositeImplicitAutograd``: their
elementary parts are counted one by one (``silu``: σ 4 and 5 products and sums, ``9N`` in all).
``convolution_backward`` lives with the convolutions (``product_ops``), the fused attention backwards
with their forwards (``attention_kernels``); the matrix-product gradients are ordinary ``mm``/``bmm``
calls. ``N`` is the element count of the incoming gradient (``grad``) unless a docstring says otherwise.

:data:`BACKWARD_FORMULAS` maps bare operator names to formulas; ``operators`` registers them.
"""

from __future__ import annotations

import math

from torchscan.formulas.operator_common import (
    OperatorFormula,
    UnsupportedOperatorFormula,
    arg,
    dim_size,
    elements,
)
from torchscan.formulas.pool_windows import adaptive_visits, clamped_windows

__all__ = ["BACKWARD_FORMULAS", "IGNORED_BACKWARD"]

IGNORED_BACKWARD = ("slice_backward", "select_backward", "diagonal_backward", "unfold_backward")
"""Backward kernels of views: they zero-fill and copy the gradient into place (data movement)."""


def _grad(args: tuple) -> int:
    return elements(args[0])


# --- activations ---------------------------------------------------------------------------------


def threshold_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, threshold)``: ``grad if self > threshold else 0``: 1 comparison per element."""
    return _grad(args)


def sigmoid_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, y)`` with ``y = σ(x)``: ``grad·y·(1 − y)``: subtract, two multiplies, ``3N``."""
    return 3 * _grad(args)


def tanh_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, y)`` with ``y = tanh(x)``: ``grad·(1 − y²)``: square, subtract, multiply, ``3N``."""
    return 3 * _grad(args)


def gelu_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, x, approximate)``: ``11N`` exact, ``23N`` with the tanh approximation.

    Exact: ``Φ(x) + x·φ(x)``; ``Φ = 0.5·(1 + erf(x/√2))`` 4 (scale, erf, add, halve), ``φ =
    exp(−x²/2)/√(2π)`` 4 (square, scale, exp, scale), ``x·φ``, the add and ``grad·`` 3.
    tanh, as the kernel evaluates it with ``x²`` computed once: ``x²`` 1, ``u = c·(x + a·x²·x)`` 4,
    ``t = tanh(u)`` 6, ``0.5·x`` and ``0.5·(1 + t)`` 3, ``1 − t²`` 2, ``1 + 3a·x²`` 2, the products
    ``0.5·x·(1 − t²)·c·(1 + 3a·x²)`` 3, the add and ``grad·`` 2.
    """
    cost = {"none": 11, "tanh": 23}.get(arg(args, kwargs, 2, "approximate", "none"))
    if cost is None:
        raise UnsupportedOperatorFormula("GELU estimates support only 'none' and 'tanh' approximations.")
    return cost * _grad(args)


def leaky_relu_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, slope, self_is_result)``: ``grad if x > 0 else slope·grad``: compare, multiply:
    ``2N``."""
    return 2 * _grad(args)


def shrink_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``hardshrink_backward``/``softshrink_backward(grad, self, lambd)``: ``grad`` where ``|x| > λ``,
    else 0: two comparisons, ``2N``."""
    return 2 * _grad(args)


def rrelu_with_noise_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, noise, lower, upper, training, self_is_result)``: training multiplies each
    gradient by its sampled slope (``N``); evaluation is ``leaky_relu_backward`` (``2N``)."""
    lower, upper = arg(args, kwargs, 3, "lower"), arg(args, kwargs, 4, "upper")
    sampled = bool(arg(args, kwargs, 5, "training")) and upper - lower > 1e-6
    return _grad(args) if sampled else 2 * _grad(args)


def hardtanh_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, min, max)``: ``grad if min < x < max else 0``: two comparisons, ``2N``."""
    return 2 * _grad(args)


def hardsigmoid_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self)``: ``grad/6 if −3 < x < 3 else 0``: two comparisons and a divide, ``3N``."""
    return 3 * _grad(args)


def hardswish_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self)``: ``0`` below −3, ``grad`` above 3, else ``grad·(x/3 + 0.5)``: two
    comparisons, divide, add, multiply: ``5N``."""
    return 5 * _grad(args)


def elu_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, alpha, scale, input_scale, is_result, self_or_result)``.

    ``grad·where(x > 0, scale, d)``: the comparison 1 and ``grad·`` 1 (the positive branch's ``scale``
    is a constant, selected). From the input ``d = C·exp(x·input_scale)`` (``C = scale·α·input_scale``,
    one scalar): ``exp`` and ``C·`` 2; from the result ``d = input_scale·(y + α·scale)``: the add 1.
    The multiply by ``input_scale`` counts only when it is not 1, as in the forward (B.8): ``(4 +
    [input_scale ≠ 1])·N`` from the input (ELU, SELU 4, CELU 5), ``(3 + [input_scale ≠ 1])·N`` from
    the result (an in-place forward).
    """
    scaled = arg(args, kwargs, 3, "input_scale", 1) != 1
    return (3 + scaled if arg(args, kwargs, 4, "is_result", False) else 4 + scaled) * _grad(args)


def softplus_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, beta, threshold)``: ``z = exp(β·x)``, ``grad·z/(z + 1)`` where ``β·x ≤
    threshold`` (else ``grad``): scale, compare, exp, add, divide, multiply: ``6N``."""
    return 6 * _grad(args)


def log_sigmoid_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, buffer)``: ``d log σ(x)/dx = σ(−x)``: negate 1, σ 4, ``grad·`` 1: ``6N``."""
    return 6 * _grad(args)


def dropout_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``native_dropout_backward(grad, mask, scale)``: ``grad·mask·scale``: two multiplies, ``2N``."""
    return 2 * _grad(args)


# --- softmax family ------------------------------------------------------------------------------


def _rows(tensor: object, dim: int) -> tuple[int, int]:
    n = elements(tensor)
    width = dim_size(tensor, dim)  # type: ignore[arg-type]
    return n, (n // width if width else 0)


def softmax_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, y, dim, dtype)``: ``y·(grad − Σ grad·y)``: product N, row sums ``N − R``, subtract N,
    multiply N: ``4N − R``."""
    n, r = _rows(args[1], args[2])
    return 4 * n - r


def masked_softmax_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_masked_softmax_backward(grad, y, mask, dim)``: :func:`softmax_backward` along ``dim`` (the
    last when ``None``); masked positions are selected away (free)."""
    dim = arg(args, kwargs, 3, "dim")
    return softmax_backward((args[0], args[1], -1 if dim is None else dim), {}, out)


def log_softmax_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, y, dim, dtype)``: ``grad − exp(y)·Σ grad``: row sums ``N − R``, exp N, multiply N,
    subtract N: ``4N − R``."""
    n, r = _rows(args[1], args[2])
    return 4 * n - r


# --- normalization -------------------------------------------------------------------------------


def _norm_backward(n: int, params: int, weight: bool, mask: list[bool]) -> int:
    """Normalization backward over ``n`` elements with ``params`` affine entries and
    ``output_mask = [input, weight, bias]`` (``W`` = 1 with a weight).

    ``x̂ = (x − mean)·rstd`` 2N (when dx or dw is wanted); dx: ``g' = g·w`` (W·N),
    ``rstd·(g' − mean(g') − x̂·mean(g'·x̂))``: two means 2N (adds plus one divide per row: ``N − R + R``),
    the product ``g'·x̂`` N, ``x̂·`` N, two subtracts 2N, ``rstd·`` N: ``7N + W·N``; dw ``Σ g·x̂`` over
    the rows: ``N + (N − params)``; db ``Σ g``: ``N − params``.
    """
    count = 2 * n if (mask[0] or (mask[1] and weight)) else 0
    if mask[0]:
        count += 7 * n + weight * n
    if mask[1] and weight:
        count += n + _summed_into(n, params)
    if mask[2]:
        count += _summed_into(n, params)
    return count


def _summed_into(n: int, sums: int) -> int:
    """Adds of ``n`` values reduced into ``sums`` equal sums: ``n − sums``, and 0 for an empty input
    (the sums are zero-filled, nothing is added)."""
    return max(n - sums, 0)


def _mask(value: object, size: int = 3) -> list[bool]:
    return [bool(item) for item in value] if value is not None else [True] * size  # type: ignore[attr-defined]


def layer_norm_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, input, normalized_shape, mean, rstd, weight, bias, output_mask)``: :func:`_norm_backward`
    with ``prod(normalized_shape)`` affine entries (rows of that width)."""
    n, row = elements(args[1]), math.prod(args[2])
    if row == 0:
        raise UnsupportedOperatorFormula("LayerNorm FLOPs require a nonempty normalized row.")
    return _norm_backward(n, row, args[5] is not None, _mask(args[7]))


def group_norm_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, input, mean, rstd, weight, N, C, HxW, groups, output_mask)``: :func:`_norm_backward`
    with ``N·groups`` statistics rows and ``C`` affine entries."""
    channels, groups = args[6], args[8]
    if groups <= 0:
        raise UnsupportedOperatorFormula("GroupNorm FLOPs require a nonempty normalized group.")
    return _norm_backward(elements(args[1]), channels, args[4] is not None, _mask(args[9]))


def batch_norm_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps, mask)``.

    Training: :func:`_norm_backward` with ``C`` statistics rows and ``C`` affine entries. Evaluation
    (fixed statistics): ``invstd = rsqrt(var + eps)`` 2C, dx ``= g·w·invstd`` ``(1 + W)·N``, x̂ 2N for
    dw ``Σ g·x̂`` ``N + (N − C)``, db ``N − C``.
    """
    inputs, weight, train, mask = args[1], args[2] is not None, args[7], _mask(args[9])
    n = elements(inputs)
    channels = dim_size(inputs, 1) if inputs.dim() > 1 else 1
    if train:
        return _norm_backward(n, channels, weight, mask)
    count = 2 * channels
    if mask[0]:
        count += (1 + weight) * n
    if mask[1] and weight:
        count += 3 * n + _summed_into(n, channels)
    if mask[2]:
        count += _summed_into(n, channels)
    return count


def backend_batch_norm_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``cudnn_batch_norm_backward``/``miopen_batch_norm_backward(input, grad, weight, running_mean,
    running_var, save_mean, save_var, eps, ...)``: the backends' training-mode kernels, counted as
    ``native_batch_norm_backward`` in training with all three gradients (:func:`_norm_backward`)."""
    inputs = args[0]
    channels = dim_size(inputs, 1) if inputs.dim() > 1 else 1
    return _norm_backward(elements(inputs), channels, args[2] is not None, [True, True, True])


def rms_norm_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_fused_rms_norm_backward(grad, input, normalized_shape, rstd, weight, output_mask)``.

    ``x̂ = x·rstd`` N (when dx or dw is wanted); dx: ``g' = g·w`` (W·N), ``rstd·(g' − x̂·mean(g'·x̂))``:
    product N, mean N, ``x̂·`` N, subtract N, ``rstd·`` N: ``5N + W·N``; dw ``Σ g·x̂``:
    ``N + (N − params)``.
    """
    n, row, weight = elements(args[1]), math.prod(args[2]), args[4] is not None
    if row == 0:
        raise UnsupportedOperatorFormula("RMSNorm FLOPs require a nonempty normalized row.")
    mask = _mask(args[5], 2)
    count = n if (mask[0] or (mask[1] and weight)) else 0
    if mask[0]:
        count += 5 * n + weight * n
    if mask[1] and weight:
        count += n + _summed_into(n, row)
    return count


# --- pooling and embedding -----------------------------------------------------------------------


def max_pool_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, ..., indices)`` of the kernels whose windows always hold a tap (adaptive,
    fractional): each output gradient is added at its argmax: ``G`` adds (overlapping windows
    accumulate)."""
    return _grad(args)


def max_pool_indices_backward(rank: int) -> OperatorFormula:
    """Factory: ``max_poolNd_with_indices_backward(grad, self, kernel_size, stride, padding, dilation,
    ceil_mode, indices)``: one add per gradient of a window with an in-bound tap; a dilated window
    lying wholly on padding has no argmax and its gradient is dropped (truth.md §6)."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        geometry = (args[2], arg(args, kwargs, 3, "stride"), arg(args, kwargs, 4, "padding", 0))
        dilation = arg(args, kwargs, 5, "dilation", 1)
        return clamped_windows(args[1].shape, args[0].shape, rank, *geometry, dilation).nonempty

    return formula


def recomputed_max_pool_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``max_pool2d_backward(grad, self, kernel_size, stride, padding, dilation, ceil_mode)`` (no saved
    indices): each window's argmax is found again (``T − 1`` comparisons over its ``T`` in-bound taps)
    and its gradient added: ``T`` per non-empty window, ``taps`` in all."""
    geometry = (args[2], arg(args, kwargs, 3, "stride"), arg(args, kwargs, 4, "padding", 0))
    return clamped_windows(
        args[1].shape, args[0].shape, 2, *geometry, arg(args, kwargs, 5, "dilation", 1)
    ).taps


def mkldnn_max_pool_backward(rank: int) -> OperatorFormula:
    """Factory: ``mkldnn_max_poolNd_backward(grad, output, input, kernel_size, stride, padding,
    dilation, ceil_mode)``: one add per gradient of a window with an in-bound tap."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        geometry = (args[3], arg(args, kwargs, 4, "stride"), arg(args, kwargs, 5, "padding", 0))
        dilation = arg(args, kwargs, 6, "dilation", 1)
        return clamped_windows(args[2].shape, args[0].shape, rank, *geometry, dilation).nonempty

    return formula


def avg_pool_backward(rank: int) -> OperatorFormula:
    """Factory: ``(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor)``:
    one divide per output gradient and one add into each of its window's ``T`` in-bound taps:
    ``G + taps`` (truth.md §6: taps on padding or past the input receive nothing)."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        geometry = (args[2], arg(args, kwargs, 3, "stride"), arg(args, kwargs, 4, "padding", 0))
        return _grad(args) + clamped_windows(args[1].shape, args[0].shape, rank, *geometry).taps

    return formula


def adaptive_avg_pool_backward(rank: int) -> OperatorFormula:
    """Factory: ``(grad, self)``: one divide per output gradient plus one add per visited input
    (the forward's ``visits = prod(leading)·Π (L + O − gcd(L, O))``): ``G + visits``."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        return _grad(args) + adaptive_visits(args[1].shape, args[0].shape, rank)

    return formula


def embedding_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, indices, num_weights, padding_idx, scale_grad_by_freq)``: each gradient row is added
    into its weight row: ``G`` adds; ``scale_grad_by_freq`` divides each by its count: ``+G``."""
    return _grad(args) * (1 + bool(arg(args, kwargs, 4, "scale_grad_by_freq", False)))


# --- upsampling, padding, PReLU, GLU -----------------------------------------------------------


def nearest_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``upsample_nearest*_backward(grad, output_size, input_size, ...)``: each output gradient is
    added into its source element: ``G`` adds (the forward copies and counts 0)."""
    return _grad(args)


def interpolation_backward(neighbours: int) -> OperatorFormula:
    """Factory: ``(grad, output_size, input_size, align_corners, scales...)``: each output gradient
    is weighted and added into its ``n`` source neighbours (the forward's ``2n − 1`` mirrored):
    ``n`` multiplies and ``n`` adds, ``2n·G``."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        return 2 * neighbours * _grad(args)

    return formula


def padding_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``reflection_pad*_backward``/``replication_pad*_backward(grad, self, padding)``: each output
    gradient is added into the element it was copied from: ``G`` adds."""
    return _grad(args)


def prelu_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_prelu_kernel_backward(grad, self, weight)`` on the broadcast input: ``x > 0`` 1,
    ``dx = g or w·g`` 1, ``dw = x·g`` where ``x ≤ 0`` 1: ``3N`` (the sum over broadcast positions is
    the separate reduction of the weight's expand)."""
    return 3 * _grad(args)


def glu_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, self, dim)`` with ``glu(a, b) = a·σ(b)`` and ``G`` output gradients: ``s = σ(b)`` 4,
    ``da = g·s`` 1, ``db = g·a·s·(1 − s)`` 4: ``9G``."""
    return 9 * _grad(args)


BACKWARD_FORMULAS: dict[str, OperatorFormula] = {
    "threshold_backward": threshold_backward,
    "sigmoid_backward": sigmoid_backward,
    "tanh_backward": tanh_backward,
    "gelu_backward": gelu_backward,
    "leaky_relu_backward": leaky_relu_backward,
    "hardtanh_backward": hardtanh_backward,
    "hardsigmoid_backward": hardsigmoid_backward,
    "hardswish_backward": hardswish_backward,
    "elu_backward": elu_backward,
    "softplus_backward": softplus_backward,
    "log_sigmoid_backward": log_sigmoid_backward,
    "native_dropout_backward": dropout_backward,
    "hardshrink_backward": shrink_backward,
    "softshrink_backward": shrink_backward,
    "rrelu_with_noise_backward": rrelu_with_noise_backward,
    "_softmax_backward_data": softmax_backward,
    "_masked_softmax_backward": masked_softmax_backward,
    "_log_softmax_backward_data": log_softmax_backward,
    "native_layer_norm_backward": layer_norm_backward,
    "native_group_norm_backward": group_norm_backward,
    "native_batch_norm_backward": batch_norm_backward,
    "batch_norm_backward": batch_norm_backward,  # the same arguments, ``update`` for ``train``
    "cudnn_batch_norm_backward": backend_batch_norm_backward,
    "miopen_batch_norm_backward": backend_batch_norm_backward,
    "_fused_rms_norm_backward": rms_norm_backward,
    "max_pool2d_with_indices_backward": max_pool_indices_backward(2),
    "max_pool3d_with_indices_backward": max_pool_indices_backward(3),
    "max_pool2d_backward": recomputed_max_pool_backward,
    "fractional_max_pool2d_backward": max_pool_backward,
    "fractional_max_pool3d_backward": max_pool_backward,
    "mkldnn_max_pool2d_backward": mkldnn_max_pool_backward(2),
    "mkldnn_max_pool3d_backward": mkldnn_max_pool_backward(3),
    "mkldnn_adaptive_avg_pool2d_backward": adaptive_avg_pool_backward(2),
    "adaptive_max_pool2d_backward": max_pool_backward,
    "adaptive_max_pool3d_backward": max_pool_backward,
    "avg_pool2d_backward": avg_pool_backward(2),
    "avg_pool3d_backward": avg_pool_backward(3),
    "_adaptive_avg_pool2d_backward": adaptive_avg_pool_backward(2),
    "_adaptive_avg_pool3d_backward": adaptive_avg_pool_backward(3),
    "adaptive_avg_pool3d_backward": adaptive_avg_pool_backward(3),  # its out= form (grad_input)
    "embedding_dense_backward": embedding_backward,
    "reflection_pad1d_backward": padding_backward,
    "reflection_pad2d_backward": padding_backward,
    "reflection_pad3d_backward": padding_backward,
    "replication_pad1d_backward": padding_backward,
    "replication_pad2d_backward": padding_backward,
    "replication_pad3d_backward": padding_backward,
    "upsample_linear1d_backward": interpolation_backward(2),
    "upsample_bilinear2d_backward": interpolation_backward(4),
    "upsample_trilinear3d_backward": interpolation_backward(8),
    "upsample_bicubic2d_backward": interpolation_backward(16),
    "_prelu_kernel_backward": prelu_backward,
    "glu_backward": glu_backward,
    **{
        f"{name}{rank}d_backward": nearest_backward
        for name in ("upsample_nearest", "_upsample_nearest_exact")
        for rank in (1, 2, 3)
    },
}
"""Bare aten name -> formula ``(args, kwargs, out) -> int`` (registered with the result dtype rule)."""
