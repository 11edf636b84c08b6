"""Operator formulas of torchvision's kernels and PyTorch's grid sampler (families.md §2).

The torchvision formulas register by *name* (``torchvision.nms``): this module never imports
torchvision, so they apply exactly when torchvision registered and dispatched the operator. Each
formula reads shapes and scalar options only. Counts are nominal arithmetic of the documented
algorithm, not kernel instructions; the sort of ``nms``, its suppression scan and the gathers of
the sampling kernels are selection and data movement (real-models.md 2.1) and count nothing.
"""

from __future__ import annotations

import math

from torchscan.formulas.operator_common import OperatorFormula, UnsupportedOperatorFormula, arg, first_operand
from torchscan.formulas.operator_registry import register, register_library

ADAPTIVE_SAMPLING_REASON = (
    "RoIAlign FLOPs require a fixed sampling_ratio > 0: with sampling_ratio <= 0 the number of "
    "samples per bin depends on the box values."
)
ROI_POOL_REASON = (
    "RoIPool FLOPs depend on bin sizes that follow the box values (each bin's max runs over the "
    "pixels the box covers), which a shape formula cannot know."
)
GRID_MODE_REASON = "Grid sampling FLOPs cover bilinear, nearest and bicubic (2-D) interpolation only."
PS_ROI_POOL_BACKWARD_REASON = (
    "PSRoIPool gradients are spread evenly over each bin's pixels, whose number follows the box "
    "values, which a shape formula cannot know."
)
ROTATED_IOU_REASON = (
    "Rotated-box IoU FLOPs depend on the intersection polygon of each pair (its vertex count "
    "follows the box values), which a shape formula cannot know."
)

# Interpolation modes of the grid sampler (``GridSamplerInterpolation``) -> FLOPs per output value:
# bilinear 4 weighted taps (4 mul + 3 add); nearest a gather (0); bicubic 4x4 taps (16 mul + 15 add).
_TAPS_2D = {0: 7, 1: 0, 2: 31}
_TAPS_3D = {0: 15, 1: 0}  # trilinear: 8 taps, 8 mul + 7 add; nearest 0


@register_library("torchvision", "nms", rule=first_operand)
def nms(args: tuple, kwargs: dict, out: object) -> int:
    """``nms(boxes[n, 4], scores[n], iou)``: ``3·n + 12·n·(n − 1)/2``.

    Dense pairwise convention: each box's area costs 2 subtractions and 1 multiply (3·n); each of
    the ``n·(n − 1)/2`` pairs costs 4 max/min for the intersection corners, 2 subtractions for its
    sides, 2 clamps at 0, 1 multiply (intersection area), 1 add and 1 subtraction (union) and 1
    division (IoU) = 12. The sort by score and the suppression scan are selection (no FLOPs); the
    kernel may skip pairs of suppressed boxes, which this count does not credit (values unread).
    """
    n = int(args[0].shape[0])
    return 3 * n + 12 * n * (n - 1) // 2


def _roi_align(args: tuple, kwargs: dict, position_sensitive: bool) -> int:
    features, rois = args[0], args[1]
    ph, pw = int(arg(args, kwargs, 3, "pooled_height")), int(arg(args, kwargs, 4, "pooled_width"))
    ratio = int(arg(args, kwargs, 5, "sampling_ratio"))
    channels = int(features.shape[1])
    c_out = channels // (ph * pw) if position_sensitive else channels
    return _sampled_bins(int(rois.shape[0]) * c_out * ph * pw, ratio)


def _sampled_bins(bins: int, ratio: int) -> int:
    """``8·s²`` FLOPs for each of ``bins`` RoIAlign output values (forward and backward alike)."""
    if ratio <= 0:
        raise UnsupportedOperatorFormula(ADAPTIVE_SAMPLING_REASON)
    return bins * 8 * ratio * ratio


@register_library("torchvision", "roi_align", rule=first_operand)
def roi_align(args: tuple, kwargs: dict, out: object) -> int:
    """``roi_align(input[N, C, H, W], rois[K, 5], scale, ph, pw, sampling_ratio, aligned)``:
    ``K·C·ph·pw·8·s²`` with ``s = sampling_ratio``.

    Each output bin averages ``s × s`` bilinear samples; a sample costs 4 multiplies and 3 adds
    (the four weighted taps) plus 1 add into the average, 8 per sample, and the one division per
    bin is counted inside the ``8·s²``. Sample coordinates and gathers are not counted.
    ``sampling_ratio ≤ 0`` (adaptive: ``ceil`` of each box's size per bin) depends on the box
    values and raises :class:`UnsupportedOperatorFormula` naming ``sampling_ratio``.
    """
    return _roi_align(args, kwargs, position_sensitive=False)


@register_library("torchvision", "ps_roi_align", rule=first_operand)
def ps_roi_align(args: tuple, kwargs: dict, out: object) -> int:
    """``ps_roi_align(input[N, C, H, W], rois[K, 5], scale, ph, pw, sampling_ratio)``:
    ``K·(C/(ph·pw))·ph·pw·8·s²``: :func:`roi_align` where each bin reads its own channel group."""
    return _roi_align(args, kwargs, position_sensitive=True)


@register_library("torchvision", "roi_pool", "ps_roi_pool", rule=first_operand)
def roi_pool(args: tuple, kwargs: dict, out: object) -> int:
    """``roi_pool`` / ``ps_roi_pool``: each bin is a max over the pixels its box covers, so the
    comparisons depend on box values; always :class:`UnsupportedOperatorFormula` (never a guess)."""
    raise UnsupportedOperatorFormula(ROI_POOL_REASON)


@register_library("torchvision", "_roi_align_backward", rule=first_operand)
def roi_align_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_roi_align_backward(grad[K, C, ph, pw], rois, scale, ph, pw, N, C, H, W, sampling_ratio,
    aligned)``: ``K·C·ph·pw·8·s²``, the forward's count.

    Each output gradient is shared by its bin's ``s × s`` samples, and each sample spreads it over its
    four taps: 4 multiplies by the bilinear weights and 4 adds into the input gradient, 8 per sample
    (the division by the sample count is folded in as in the forward). Adaptive ``sampling_ratio ≤ 0``
    depends on the box values: :class:`UnsupportedOperatorFormula` naming ``sampling_ratio``.
    """
    grad = args[0]
    return _sampled_bins(grad.numel(), int(arg(args, kwargs, 9, "sampling_ratio")))


@register_library("torchvision", "_ps_roi_align_backward", rule=first_operand)
def ps_roi_align_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_ps_roi_align_backward(grad[K, C/(ph·pw), ph, pw], rois, channel_mapping, scale, ph, pw,
    sampling_ratio, …)``: ``8·s²`` per output gradient, as :func:`roi_align_backward`."""
    grad = args[0]
    return _sampled_bins(grad.numel(), int(arg(args, kwargs, 6, "sampling_ratio")))


@register_library("torchvision", "_roi_pool_backward", rule=first_operand)
def roi_pool_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_roi_pool_backward(grad[K, C, ph, pw], rois, argmax, …)``: ``K·C·ph·pw``.

    Each output gradient is added to the one input pixel its bin's maximum came from (the forward's
    ``argmax``): 1 add per output value. Bins without a pixel (argmax −1) depend on the box values
    and are not credited (values unread), as ``nms`` does not credit suppressed pairs.
    """
    return int(args[0].numel())


@register_library("torchvision", "_ps_roi_pool_backward", rule=first_operand)
def ps_roi_pool_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_ps_roi_pool_backward``: each bin's gradient is divided over the pixels the box covers, a
    value-dependent count: always :class:`UnsupportedOperatorFormula` (never a guess)."""
    raise UnsupportedOperatorFormula(PS_ROI_POOL_BACKWARD_REASON)


@register_library("torchvision", "box_iou_rotated", rule=first_operand)
def box_iou_rotated(args: tuple, kwargs: dict, out: object) -> int:
    """``box_iou_rotated(boxes1, boxes2)``: the intersection polygon of each pair of rotated boxes is
    clipped edge by edge, so its FLOPs follow the box values: always
    :class:`UnsupportedOperatorFormula`."""
    raise UnsupportedOperatorFormula(ROTATED_IOU_REASON)


@register_library("torchvision", "deform_conv2d", rule=first_operand)
def deform_conv2d(args: tuple, kwargs: dict, out: object) -> int:
    """``deform_conv2d(input, weight, offset, mask, bias, stride, pad, dilation, groups, offset_groups,
    use_mask)``: the matching convolution's FLOPs + ``N·C_in·kh·kw·H_out·W_out·(7 + m)``.

    The convolution part is PyTorch's convention for ``aten.convolution`` (``2·N·C_out·H_out·W_out
    ·(C_in/groups)·kh·kw``, bias not counted). Every tap of every input channel is sampled
    bilinearly at its offset position (4 mul + 3 add = 7), plus 1 multiply by the modulation mask
    when ``use_mask`` (``m = 1``; torchvision passes a zero mask with ``use_mask=False`` otherwise).
    """
    features, weight = args[0], args[1]
    batch, c_in = int(features.shape[0]), int(features.shape[1])
    c_out, c_per_group, kh, kw = (int(size) for size in weight.shape)
    h_out, w_out = int(out.shape[-2]), int(out.shape[-1])  # type: ignore[attr-defined]
    mask = 1 if arg(args, kwargs, 13, "use_mask", False) else 0
    convolution = 2 * batch * c_out * h_out * w_out * c_per_group * kh * kw
    return convolution + batch * c_in * kh * kw * h_out * w_out * (7 + mask)


def _grid_sampler(taps: dict[int, int], coordinates: int) -> OperatorFormula:
    """Factory: ``2·coordinates`` FLOPs per grid location + ``taps[mode]`` per output value."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        features, grid = args[0], args[1]
        mode = int(arg(args, kwargs, 2, "interpolation_mode", 0))
        if mode not in taps:
            raise UnsupportedOperatorFormula(GRID_MODE_REASON)
        locations = math.prod(int(size) for size in grid.shape[:-1])  # N·(Do·)Ho·Wo
        return 2 * coordinates * locations + int(features.shape[1]) * locations * taps[mode]

    return formula


_GRID_2D = _grid_sampler(_TAPS_2D, 2)
_GRID_3D = _grid_sampler(_TAPS_3D, 3)


@register("grid_sampler_2d", "_grid_sampler_2d_cpu_fallback")
def grid_sampler_2d(args: tuple, kwargs: dict, out: object) -> int:
    """``grid_sampler_2d(input[N, C, Hi, Wi], grid[N, Ho, Wo, 2], mode, padding, align_corners)``:
    ``4·N·Ho·Wo + N·C·Ho·Wo·t``, ``t`` = 7 bilinear, 0 nearest, 31 bicubic.

    Unnormalising the 2 grid coordinates costs 1 multiply + 1 add each per location. Per output
    value: bilinear = 4 weighted taps (4 mul + 3 add); nearest = a gather; bicubic = 4 rows of 4
    taps with cubic weights, 16 mul + 15 add = 31. Padding and bounds checks are selection.
    """
    return _GRID_2D(args, kwargs, out)


@register("cudnn_grid_sampler")
def cudnn_grid_sampler(args: tuple, kwargs: dict, out: object) -> int:
    """``cudnn_grid_sampler(input, grid)``: cuDNN's bilinear, zero-padded sampler, counted as
    :func:`grid_sampler_2d` in bilinear mode (``4·N·Ho·Wo + 7·N·C·Ho·Wo``)."""
    return _GRID_2D((args[0], args[1], 0), {}, out)


@register("grid_sampler_3d")
def grid_sampler_3d(args: tuple, kwargs: dict, out: object) -> int:
    """``grid_sampler_3d(input[N, C, Di, Hi, Wi], grid[N, Do, Ho, Wo, 3], mode, …)``:
    ``6·N·Do·Ho·Wo + N·C·Do·Ho·Wo·t``, ``t`` = 15 trilinear (8 taps: 8 mul + 7 add), 0 nearest."""
    return _GRID_3D(args, kwargs, out)


@register_library("torchvision", "_deform_conv2d_backward", rule=first_operand)
def deform_conv2d_backward(args: tuple, kwargs: dict, out: object) -> int:
    """``_deform_conv2d_backward(grad[N, C_out, H_out, W_out], input, weight, offset, mask, bias, …,
    use_mask)``: ``2·conv + N·C_in·kh·kw·H_out·W_out·(22 + 2m) + N·C_out·H_out·W_out``.

    ``conv`` is the forward's convolution count (``2·N·C_out·H_out·W_out·(C_in/groups)·kh·kw``),
    once for the gradient of the sampled columns and once for the weight gradient, as PyTorch counts
    ``convolution_backward``. Per sampled tap (``N·C_in·kh·kw·H_out·W_out``): the column gradient is
    spread over the 4 bilinear taps (4 mul + 4 add = 8) and each of the 2 offset coordinates gets the
    derivative of the bilinear weights against the 4 tap values (4 mul + 3 add = 7, 14 in all); with
    ``use_mask`` (``m = 1``) the column gradient is multiplied by the mask and the mask's gradient is
    one multiply-add (2). The bias gradient sums the output gradient (1 add per element).
    """
    grad, features, weight = args[0], args[1], args[2]
    batch, c_in = int(features.shape[0]), int(features.shape[1])
    c_out, c_per_group, kh, kw = (int(size) for size in weight.shape)
    h_out, w_out = int(grad.shape[-2]), int(grad.shape[-1])
    mask = 1 if arg(args, kwargs, 14, "use_mask", False) else 0
    convolution = 2 * batch * c_out * h_out * w_out * c_per_group * kh * kw
    taps = batch * c_in * kh * kw * h_out * w_out
    return 2 * convolution + taps * (22 + 2 * mask) + batch * c_out * h_out * w_out
