"""Matrix-product and convolution kernels, TorchScan's own formulas (torch-versions.md 1, truth.md 1).

These operators are also in PyTorch's ``FlopCounterMode`` registry; TorchScan counts them with the
formulas below on every torch, whatever that registry holds, because these are the ones the reference
suite (``tests/formulas/reference/``) checked. The convention is FlopCounterMode's where it is right:
2 FLOPs per multiply-accumulate (MAC), fused bias additions and alpha/beta scaling of the forward
omitted. Where it is wrong it is corrected (``provenance.CORRECTIONS``): the weight gradient of a
grouped convolution is counted once, not once per group, and a bias gradient is counted.

Complex operands (truth.md 3): one complex MAC is 4 real multiplies and 4 real additions, so a product
or convolution with a complex operand costs 4 × the real formula. Every dtype counts (an integer
product still multiplies): the B.7 integer exclusion is for element-wise arithmetic only.
"""

from __future__ import annotations

import math
from typing import Any

from torchscan.formulas.operator_common import UnsupportedOperatorFormula, arg, first_tensor

__all__ = [
    "CONVOLUTIONS",
    "PRODUCTS",
    "conv_macs",
    "convolution_backward_flops",
    "convolution_flops",
    "convolution_gradients",
    "kernel_convolution_flops",
]

PRODUCT_SHAPE_REASON = (
    "Matrix product formula requires 2-D (mm) or 3-D (bmm) operands with matching inner sizes."
)
CONV_SHAPE_REASON = "Convolution formula requires a batched input and a weight of the same rank."


def any_dtype(args: tuple, kwargs: dict, out: object) -> bool:
    """Dtype rule of products and convolutions: every dtype counts (complex handled by the formula)."""
    return True


def _complex_factor(*tensors: Any) -> int:
    """4 when any operand is complex (a complex MAC is four real ones), else 1."""
    for tensor in tensors:  # a plain loop: this runs for every counted product and convolution
        if tensor is not None and tensor.is_complex():
            return 4
    return 1


def _mm(a: Any, b: Any) -> int:
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise UnsupportedOperatorFormula(PRODUCT_SHAPE_REASON)
    m, k = a.shape
    return 2 * int(m) * int(k) * int(b.shape[1]) * _complex_factor(a, b)


def _bmm(a: Any, b: Any) -> int:
    if a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise UnsupportedOperatorFormula(PRODUCT_SHAPE_REASON)
    batch, m, k = a.shape
    return 2 * int(batch) * int(m) * int(k) * int(b.shape[2]) * _complex_factor(a, b)


def mm(args: tuple, kwargs: dict, out: object) -> int:
    """``mm(a[m,k], b[k,n])`` (and its ``out_dtype`` forms): ``2·m·k·n``."""
    return _mm(args[0], args[1])


def addmm(args: tuple, kwargs: dict, out: object) -> int:
    """``addmm(bias, a[m,k], b[k,n])``: the product only, ``2·m·k·n`` (fused bias and scaling omitted)."""
    return _mm(args[1], args[2])


def bmm(args: tuple, kwargs: dict, out: object) -> int:
    """``bmm(a[B,m,k], b[B,k,n])``: ``2·B·m·k·n``."""
    return _bmm(args[0], args[1])


def baddbmm(args: tuple, kwargs: dict, out: object) -> int:
    """``baddbmm(bias, a[B,m,k], b[B,k,n])``: the batched product only, ``2·B·m·k·n``."""
    return _bmm(args[1], args[2])


def scaled_mm(args: tuple, kwargs: dict, out: object) -> int:
    """``_scaled_mm(a[m,k], b[k,n], scale_a, scale_b, ...)`` (float8): ``2·m·k·n``; the per-tensor or
    per-row scaling and the optional bias are fused and omitted, as for ``addmm``."""
    return _mm(args[0], args[1])


PRODUCTS = {"mm": mm, "addmm": addmm, "bmm": bmm, "baddbmm": baddbmm, "_scaled_mm": scaled_mm}
"""Bare aten name -> formula (registered with :func:`any_dtype`)."""


# --- convolutions ---------------------------------------------------------------------------------


def conv_macs(x_shape: Any, w_shape: Any, out_shape: Any, transposed: bool) -> int:
    """Multiply-accumulates of one convolution: ``N · prod(w.shape) · prod(S)``.

    ``w`` is ``(C_out, C_in/groups, *kernel)`` (``(C_in, C_out/groups, *kernel)`` when transposed), so
    ``prod(w.shape)`` is the MACs one spatial position costs over every output channel (plain) or every
    input channel (transposed); ``S`` is the output's spatial shape, or the input's for a transposed
    convolution (each input position scatters into ``C_out/groups · prod(kernel)`` outputs). Taps on
    padding are computed and counted.
    """
    if len(x_shape) < 3 or len(w_shape) != len(x_shape) or len(out_shape) != len(x_shape):
        raise UnsupportedOperatorFormula(CONV_SHAPE_REASON)
    spatial = (x_shape if transposed else out_shape)[2:]
    return int(x_shape[0]) * math.prod(int(s) for s in w_shape) * math.prod(int(s) for s in spatial)


def convolution_flops(args: tuple, kwargs: dict, out: object) -> int:
    """``convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups)`` and the
    kernels with that schema (``_convolution``, ``convolution_overrideable``): ``2 · MACs`` (bias omitted).
    """
    transposed = bool(arg(args, kwargs, 6, "transposed", False))
    return kernel_convolution_flops(args[0], args[1], out, transposed)


def plain_convolution_flops(args: tuple, kwargs: dict, out: object) -> int:
    """``cudnn_convolution`` and ``_slow_conv2d_forward`` (no ``transposed`` flag): ``2 · MACs``. The
    other backends' kernels (oneDNN, MIOpen, MPS, ...) are in ``backend_ops``, counted the same way."""
    return kernel_convolution_flops(args[0], args[1], out, False)


def kernel_convolution_flops(x: Any, w: Any, out: object, transposed: bool) -> int:
    """``2 · MACs`` of one backend convolution kernel given its input, weight and output."""
    result = first_tensor(out)
    if result is None:
        raise UnsupportedOperatorFormula(CONV_SHAPE_REASON)
    return 2 * conv_macs(x.shape, w.shape, result.shape, transposed) * _complex_factor(x, w)


def convolution_gradients(grad_out: Any, x: Any, w: Any, transposed: bool, mask: Any) -> int:
    """FLOPs of a convolution's gradients, from ``grad_out``, the input ``x`` and the weight ``w``.

    ``grad_input`` (``mask[0]``) is a transposed convolution of ``grad_out`` with the same MACs as the
    forward; ``grad_weight`` (``mask[1]``) correlates the input with ``grad_out`` inside each group:
    again the forward's MACs, ``N · C_out · (C_in/groups) · prod(kernel) · prod(S)`` — once, not once
    per group (FlopCounterMode multiplies it by ``groups``); ``grad_bias`` (``mask[2]``, when present)
    sums ``grad_out`` over batch and space: one addition per ``grad_out`` element (two for complex).
    Each term only where the mask asks for it; a missing mask means every gradient.
    """
    wanted = [True, True, True] if mask is None else [bool(item) for item in mask]
    factor = _complex_factor(grad_out, x, w)
    macs = conv_macs(x.shape, w.shape, grad_out.shape, transposed)
    flops = (wanted[0] + (len(wanted) > 1 and wanted[1])) * 2 * macs * factor
    if len(wanted) > 2 and wanted[2]:
        flops += math.prod(int(s) for s in grad_out.shape) * (2 if factor == 4 else 1)
    return flops


def convolution_backward_flops(args: tuple, kwargs: dict, out: object) -> int:
    """``convolution_backward(grad_out, x, w, bias_sizes, stride, padding, dilation, transposed,
    output_padding, groups, output_mask)``: :func:`convolution_gradients`."""
    transposed = bool(arg(args, kwargs, 7, "transposed", False))
    mask = arg(args, kwargs, 10, "output_mask", (True, True, True))
    return convolution_gradients(args[0], args[1], args[2], transposed, mask)


CONVOLUTIONS = {
    "convolution": convolution_flops,
    "_convolution": convolution_flops,
    "convolution_overrideable": convolution_flops,
    "cudnn_convolution": plain_convolution_flops,
    "_slow_conv2d_forward": plain_convolution_flops,
    "convolution_backward": convolution_backward_flops,
}
"""Bare aten name -> formula (registered with :func:`any_dtype`)."""
