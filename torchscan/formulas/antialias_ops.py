"""Operator formulas of anti-aliased resampling (``F.interpolate(..., antialias=True)``).

``_upsample_bilinear2d_aa``, ``_upsample_bicubic2d_aa`` and ``_upsample_lanczos2d_aa`` (torchvision's
``Resize`` on tensors, image processors) filter separably: first along the width (every input row
resampled to the output width), then along the height (every output column), each pass skipped when
its size does not change. Output index ``i`` of an axis reads the input indices whose filter support
covers it; the count of those taps follows from the sizes alone, as PyTorch computes it:
``support = (interp_size / 2)·max(scale, 1)`` with ``interp_size`` 2 (bilinear), 4 (bicubic) or 6
(Lanczos), ``center = scale·(i + 0.5)``, taps ``min(⌊center + support + 0.5⌋, in) −
max(⌊center − support + 0.5⌋, 0)``. Each output value of a pass is ``Σ wⱼ·xⱼ`` over its taps:
``2·taps − 1`` FLOPs (formulas.md B.8's interpolation convention: ``n`` products and ``n − 1`` adds);
the filter weights depend on indices only and are not counted, as for the other interpolation modes.
The backward scatters each gradient through the same taps: ``2·taps`` per gradient value and pass.
"""

from __future__ import annotations

import math

from torchscan.formulas.operator_common import OperatorFormula, UnsupportedOperatorFormula, arg, first_tensor
from torchscan.formulas.operator_registry import register

_INTERP_SIZE = {"bilinear": 2, "bicubic": 4, "lanczos": 6}


def _scale(in_size: int, out_size: int, align_corners: bool, factor: float | None) -> float:
    """PyTorch's ``area_pixel_compute_scale``: input units per output unit."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    if factor is not None and factor > 0:
        return 1.0 / factor
    return in_size / out_size


def axis_taps(
    in_size: int, out_size: int, interp_size: int, align_corners: bool, factor: float | None
) -> int:
    """Input taps summed over the ``out_size`` output indices of one axis."""
    scale = _scale(in_size, out_size, align_corners, factor)
    support = interp_size * 0.5 * (scale if scale >= 1.0 else 1.0)
    max_taps = math.ceil(support) * 2 + 1
    total = 0
    for index in range(out_size):
        center = scale * (index + 0.5)
        low = max(int(center - support + 0.5), 0)
        total += min(max(min(int(center + support + 0.5), in_size) - low, 0), max_taps)
    return total


def _passes(
    in_shape: list[int], out_shape: list[int], interp_size: int, options: tuple, per_tap: int, offset: int
) -> int:
    """FLOPs of the width pass then the height pass: ``Σ (per_tap·taps − offset)`` per output value."""
    if len(in_shape) != 4 or len(out_shape) != 4:
        raise UnsupportedOperatorFormula("Anti-aliased resampling FLOPs need 4-d (N, C, H, W) tensors.")
    planes = in_shape[0] * in_shape[1]
    (in_h, in_w), (out_h, out_w) = in_shape[2:], out_shape[2:]
    align_corners, scale_h, scale_w = options
    count = 0
    if in_w != out_w:  # every input row to the output width
        taps = axis_taps(in_w, out_w, interp_size, align_corners, scale_w)
        count += planes * in_h * (per_tap * taps - offset * out_w)
    if in_h != out_h:  # every output column to the output height
        taps = axis_taps(in_h, out_h, interp_size, align_corners, scale_h)
        count += planes * out_w * (per_tap * taps - offset * out_h)
    return count


def _forward(interp_size: int) -> OperatorFormula:
    """Factory: ``(self[N, C, H, W], output_size, align_corners, scales_h, scales_w)``: both passes at
    ``2·taps − 1`` per output value."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        result = first_tensor(out)
        assert result is not None
        options = (
            bool(arg(args, kwargs, 2, "align_corners", False)),
            arg(args, kwargs, 3, "scales_h"),
            arg(args, kwargs, 4, "scales_w"),
        )
        return _passes(list(args[0].shape), list(result.shape), interp_size, options, 2, 1)

    return formula


def _backward(interp_size: int) -> OperatorFormula:
    """Factory: ``(grad[N, C, H', W'], output_size, input_size, align_corners, scales_h, scales_w)``:
    both passes at ``2·taps`` per gradient value (a product and a scattered add per tap)."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        options = (
            bool(arg(args, kwargs, 3, "align_corners", False)),
            arg(args, kwargs, 4, "scales_h"),
            arg(args, kwargs, 5, "scales_w"),
        )
        return _passes(list(args[2]), list(args[0].shape), interp_size, options, 2, 0)

    return formula


for _mode, _size in _INTERP_SIZE.items():
    _name = f"_upsample_{_mode}2d_aa"
    register(_name)(_forward(_size))
    register(f"{_name}_backward")(_backward(_size))
