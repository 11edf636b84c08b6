"""Convolutions (formulas.md A.5.3) and transposed convolutions (A.5.4), lazy variants included.

Counts are dense padded arithmetic: products with padding zeros count, stride and dilation only set
the output shape. Transposed convolutions use the input-based scatter count.
"""

from __future__ import annotations

import math
from typing import Any

from torch import Tensor, nn

from torchscan.formulas.native import require_native_forward
from torchscan.formulas.registry import dmas, flops, macs, receptive_field
from torchscan.formulas.tensors import (
    call_tensors,
    first_axis,
    own_tensor,
    param_count,
    require_dense,
    untouched,
)

CONV = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
TRANSPOSED = (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)


def _check(module: nn.Module, natives: tuple[type[nn.Module], ...], inp: Tensor, out: Tensor) -> None:
    require_native_forward(module, natives)
    require_dense(inp, out)


def _kernel_volume(module: Any) -> int:
    return math.prod(module.kernel_size)


def _terms(module: Any) -> int:
    """Terms of one output's dot product: ``kv · in_channels / groups``."""
    return _kernel_volume(module) * module.in_channels // module.groups


def _weight_reads(module: Any, out: Tensor) -> int:
    """``(in_channels · kv · Nout) // groups``: weight-and-input reads of the dense algorithm."""
    return module.in_channels * _kernel_volume(module) * out.numel() // module.groups


# --- convolution -------------------------------------------------------------------------------


@flops.register(*CONV)
def conv_flops(module: nn.Module, inputs: tuple[Any, ...], output: Any) -> int:
    """``Nout · (2·terms − 1 + [bias])`` (an empty dot product costs 0)."""
    inp, out = call_tensors(inputs, output)
    _check(module, CONV, inp, out)
    terms = _terms(module)
    return out.numel() * (max(0, 2 * terms - 1) + int(own_tensor(module, "bias") is not None))


@macs.register(*CONV)
def conv_macs(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """``Nout · terms``."""
    _check(module, CONV, inp, out)
    return out.numel() * _terms(module)


@dmas.register(*CONV)
def conv_dmas(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """``(in_channels · kv · Nout) // groups + P + Nout``."""
    _check(module, CONV, inp, out)
    if untouched(inp, out):
        return 0
    return _weight_reads(module, out) + param_count(module) + out.numel()


@receptive_field.register(*CONV)
def conv_rf(module: Any, inp: Tensor, out: Tensor) -> tuple[float, float, float]:
    """``(d·(k − 1) + 1, s, p)`` on the first spatial axis; ``"valid"`` pads 0, ``"same"`` ``d·(k−1)//2``."""
    _check(module, CONV, inp, out)
    kernel, dilation = first_axis(module.kernel_size), first_axis(module.dilation)
    if module.padding == "valid":
        padding = 0
    elif module.padding == "same":
        padding = dilation * (kernel - 1) // 2
    else:
        padding = first_axis(module.padding)
    return float(dilation * (kernel - 1) + 1), float(first_axis(module.stride)), float(padding)


# --- transposed convolution --------------------------------------------------------------------


def _scatter_macs(module: Any, inp: Tensor) -> int:
    """``Nin · (out_channels / groups) · kv``: every input value scatters through every tap."""
    return inp.numel() * (module.out_channels // module.groups) * _kernel_volume(module)


@flops.register(*TRANSPOSED)
def conv_transpose_flops(module: nn.Module, inputs: tuple[Any, ...], output: Any) -> int:
    """``2 · MACs + [bias] · Nout``; cropped products still count."""
    inp, out = call_tensors(inputs, output)
    _check(module, TRANSPOSED, inp, out)
    return 2 * _scatter_macs(module, inp) + int(own_tensor(module, "bias") is not None) * out.numel()


@macs.register(*TRANSPOSED)
def conv_transpose_macs(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """``Nin · (out_channels / groups) · kv``."""
    _check(module, TRANSPOSED, inp, out)
    return _scatter_macs(module, inp)


@dmas.register(*TRANSPOSED)
def conv_transpose_dmas(module: Any, inp: Tensor, out: Tensor) -> int:
    """``5 · len(kernel_size) + (in_channels · kv · Nout) // groups + P + Nout``."""
    _check(module, TRANSPOSED, inp, out)
    if untouched(inp, out):
        return 0
    return 5 * len(module.kernel_size) + _weight_reads(module, out) + param_count(module) + out.numel()


@receptive_field.register(*TRANSPOSED)
def conv_transpose_rf(module: Any, inp: Tensor, out: Tensor) -> tuple[float, float, float]:
    """``(−k, 1 / s, 0)``: a transposed convolution upsamples, so its stride is fractional."""
    _check(module, TRANSPOSED, inp, out)
    return -float(first_axis(module.kernel_size)), 1.0 / first_axis(module.stride), 0.0
