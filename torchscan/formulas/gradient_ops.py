"""Backward kernels beyond ``backward_ops``: backend convolution and matrix gradients, EmbeddingBag,
grid sampling, affine grids, distances and weight norm (training-and-hardware.md 2).

Each gradient is counted as the forward convention of the operator it differentiates implies
(formulas.md B.8 costs; derivations in the docstrings). The convolution gradients of the backends
(``convolution_backward_overrideable``, MPS, the slow CPU path) are counted exactly as
``aten.convolution_backward`` (``product_ops.convolution_gradients``): ``grad_input`` and
``grad_weight`` each the forward's MACs (once, whatever ``groups``), a bias gradient one addition per
gradient element.

:data:`GRADIENT_FORMULAS` maps bare operator names to formulas; ``operators`` registers them.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from torchscan.formulas.operator_common import (
    OperatorFormula,
    UnsupportedOperatorFormula,
    arg,
    elements,
)
from torchscan.formulas.product_ops import convolution_gradients

__all__ = ["GRADIENT_FORMULAS"]

# --- convolution and matrix-product gradients -----------------------------------------------------


def _convolution_gradients(
    grad: torch.Tensor, inputs: torch.Tensor, weight: torch.Tensor, transposed: bool, mask: Any, out: object
) -> int:
    """``aten.convolution_backward``'s count (``product_ops.convolution_gradients``)."""
    return convolution_gradients(grad, inputs, weight, transposed, mask)


def convolution_backward_overrideable(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, input, weight, stride, padding, dilation, transposed, output_padding, groups, mask)``."""
    return _convolution_gradients(args[0], args[1], args[2], bool(args[6]), args[9], out)


def mps_convolution_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(input, grad, weight, padding, stride, dilation, groups, output_mask)``."""
    return _convolution_gradients(args[1], args[0], args[2], False, args[7], out)


def mps_convolution_transpose_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(input, grad, weight, padding, output_padding, stride, dilation, groups, output_mask)``."""
    return _convolution_gradients(args[1], args[0], args[2], True, args[8], out)


def slow_conv2d_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, input, weight, kernel_size, stride, padding, output_mask)`` (CPU fallback)."""
    return _convolution_gradients(args[0], args[1], args[2], False, arg(args, kwargs, 6, "output_mask"), out)


def linear_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(input[..., k], grad[..., n], weight[n, k], output_mask)``: ``grad_input = grad·W`` and
    ``grad_weight = gradᵀ·input``, ``2·rows·k·n`` each (the ``mm`` counts); ``grad_bias`` sums
    ``rows`` gradients per output feature, ``rows·n − n`` adds."""
    inputs, grad, mask = args[0], args[1], [bool(item) for item in args[3]]
    rows, width = math.prod(inputs.shape[:-1]), int(inputs.shape[-1])
    features = int(grad.shape[-1])
    product = 2 * rows * width * features
    return product * mask[0] + product * mask[1] + max(rows * features - features, 0) * mask[2]


def matmul_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad[..., m, n], self[..., m, k], other[..., k, n], mask)``: ``grad·otherᵀ`` and
    ``selfᵀ·grad``, ``2·m·n·k`` per batch matrix each; broadcast batches (which would add a
    reduction) and vector operands are unsupported."""
    grad, first, second = args[0], args[1], args[2]
    if first.dim() < 2 or second.dim() < 2 or first.shape[:-2] != second.shape[:-2]:
        raise UnsupportedOperatorFormula("matmul_backward FLOPs cover matrices with equal batch shapes.")
    product = 2 * elements(grad) * int(first.shape[-1])
    return product * sum(bool(item) for item in args[3])


# --- EmbeddingBag ---------------------------------------------------------------------------------


def _bag_gradient(grad: object, indices: object, mode: int, weighted: bool, freq: bool) -> int:
    rows, width = elements(indices), int(grad.shape[-1])  # type: ignore[attr-defined]
    if mode == 2:  # max: each bag's gradient row goes to its argmax rows only
        return elements(grad)
    if mode not in (0, 1):
        raise UnsupportedOperatorFormula(f"EmbeddingBag FLOPs cover modes sum, mean and max, got {mode!r}.")
    return rows * width * (1 + (mode == 1) + weighted + freq)


def embedding_bag_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices,
    num_weights, scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx)``.

    Each of the ``n`` looked-up rows of width ``D`` receives its bag's gradient row: ``n·D`` adds;
    ``mean`` divides each by the bag size (``+n·D``), ``per_sample_weights`` multiplies (``+n·D``),
    ``scale_grad_by_freq`` divides by the row's frequency (``+n·D``). ``max`` adds each bag's
    gradient at its argmax only: ``bags·D``.
    """
    return _bag_gradient(args[0], args[1], int(args[8]), args[10] is not None, bool(args[7]))


def embedding_bag_dense_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, maximum_indices,
    num_weights, scale_grad_by_freq, mode, per_sample_weights, padding_idx)``: as
    :func:`embedding_bag_backward`."""
    return _bag_gradient(args[0], args[1], int(args[7]), args[8] is not None, bool(args[6]))


def embedding_bag_per_sample_weights_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, weight, indices, offsets, offset2bag, mode, padding_idx)``: each index's weight
    gradient is the dot product of its bag's gradient row and its weight row: ``n·(2D − 1)``."""
    width = int(args[1].shape[-1])
    return elements(args[2]) * max(2 * width - 1, 0)


# --- grids and sampling ---------------------------------------------------------------------------


def grid_sampler_backward(coordinates: int, corners: int) -> OperatorFormula:
    """Factory: ``(grad[N, C, ...], input, grid, mode, padding, align_corners, output_mask)``, the
    bilinear (trilinear) backward.

    Per output value: each of the ``corners`` taps adds ``weight·grad`` into the input gradient
    (2 per tap) and contributes ``value·grad`` times the weight's derivative to each grid coordinate
    (3 per tap and coordinate: product, signed factor, add); per location the grid gradient is
    rescaled by the unnormalisation factor (``coordinates`` multiplies). Nearest mode moves the
    gradient (1 add per value); bicubic is unsupported.
    """

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        grad, grid = args[0], args[2]
        mode = int(arg(args, kwargs, 3, "interpolation_mode", 0))
        mask = arg(args, kwargs, 6, "output_mask")
        wanted = [bool(item) for item in mask] if mask is not None else [True, True]
        values, locations = elements(grad), math.prod(int(size) for size in grid.shape[:-1])
        if mode == 1:  # nearest
            return values * wanted[0]
        if mode != 0:
            raise UnsupportedOperatorFormula("Grid-sampler gradient FLOPs cover bilinear and nearest modes.")
        count = 2 * corners * values if wanted[0] else 0
        if len(wanted) > 1 and wanted[1]:
            count += 3 * corners * coordinates * values + coordinates * locations
        return count

    return formula


def cudnn_grid_sampler_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(input, grid, grad)``: cuDNN's bilinear backward, as ``grid_sampler_2d_backward``."""
    return grid_sampler_backward(2, 4)((args[2], args[0], args[1], 0, 0, False, None), {}, out)


def affine_grid_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``cudnn_affine_grid_generator_backward(grad[N, H, W, 2], N, C, H, W)``: ``grad_theta[2, 3] =
    gradᵀ·base_grid``, a ``[2, HW]·[HW, 3]`` product per batch, ``2·2·HW·3 = 6·elements(grad)``."""
    return 6 * elements(args[0])


# --- distances and weight norm --------------------------------------------------------------------


def cdist_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad[..., P, R], x1[..., P, M], x2, p, cdist)``: the gradient for ``x1``. ``p = 2``: per
    pair ``grad/d`` (1) and per pair and feature the difference, product and accumulation (3):
    ``pairs·(3M + 1)``; ``p = 1``: difference, sign, product, accumulation, ``4M`` per pair. Other
    orders are unsupported."""
    order, width, pairs = float(args[3]), int(args[1].shape[-1]), elements(args[0])
    if order == 2:
        return pairs * (3 * width + 1)
    if order == 1:
        return pairs * 4 * width
    raise UnsupportedOperatorFormula("cdist gradient FLOPs cover p = 1 and p = 2 only.")


def pdist_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad[pairs], self[N, M], p, pdist)``: each pair's gradient reaches both rows: ``p = 2``
    ``pairs·(4M + 1)`` (difference, product, two accumulations per feature; ``grad/d`` per pair),
    ``p = 1`` ``pairs·5M`` (the sign too). Other orders are unsupported."""
    order, width, pairs = float(args[2]), int(args[1].shape[-1]), elements(args[0])
    if order == 2:
        return pairs * (4 * width + 1)
    if order == 1:
        return pairs * 5 * width
    raise UnsupportedOperatorFormula("pdist gradient FLOPs cover p = 1 and p = 2 only.")


def weight_norm_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_weight_norm_interface_backward(grad_w, v, g, norms, dim)`` for ``w = g·v/‖v‖``.

    ``grad_g = Σ grad_w·v / ‖v‖`` per slice: a product and an add per element, a divide per slice;
    ``grad_v = (g/‖v‖)·(grad_w − v·grad_g/‖v‖)``: two divides per slice, then a product, a subtract
    and a product per element: ``5N + 3S`` with ``S`` slices (one when ``dim = −1``).
    """
    v, dim = args[1], int(arg(args, kwargs, 4, "dim", 0))
    slices = 1 if dim == -1 else int(v.shape[dim])
    return 5 * elements(v) + 3 * slices


GRADIENT_FORMULAS: dict[str, OperatorFormula] = {
    "convolution_backward_overrideable": convolution_backward_overrideable,
    "mps_convolution_backward": mps_convolution_backward,
    "mps_convolution_transpose_backward": mps_convolution_transpose_backward,
    "_slow_conv2d_backward": slow_conv2d_backward,
    "linear_backward": linear_backward,
    "matmul_backward": matmul_backward,
    "_embedding_bag_backward": embedding_bag_backward,
    "_embedding_bag_dense_backward": embedding_bag_dense_backward,
    "_embedding_bag_per_sample_weights_backward": embedding_bag_per_sample_weights_backward,
    "grid_sampler_2d_backward": grid_sampler_backward(2, 4),
    "_grid_sampler_2d_cpu_fallback_backward": grid_sampler_backward(2, 4),
    "grid_sampler_3d_backward": grid_sampler_backward(3, 8),
    "cudnn_grid_sampler_backward": cudnn_grid_sampler_backward,
    "cudnn_affine_grid_generator_backward": affine_grid_backward,
    "_cdist_backward": cdist_backward,
    "_pdist_backward": pdist_backward,
    "_weight_norm_interface_backward": weight_norm_backward,
}
"""Bare aten name -> formula ``(args, kwargs, out) -> int`` (registered with the result dtype rule)."""
