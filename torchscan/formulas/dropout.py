"""Dropout (formulas.md A.5.12): ``nn.Dropout`` and subclasses running its native forward.

Random-number generation is not counted. ``Dropout1d/2d/3d`` and the alpha variants are not
``nn.Dropout`` subclasses and are not covered.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from torchscan.formulas.native import require_native_forward
from torchscan.formulas.registry import dmas, flops, macs, receptive_field
from torchscan.formulas.tensors import call_tensors, require_dense, untouched

NATIVE = (nn.Dropout,)


def _check(module: nn.Module, inp: Tensor, out: Tensor) -> None:
    require_native_forward(module, NATIVE)
    require_dense(inp, out)


@flops.register(*NATIVE)
def dropout_flops(module: nn.Dropout, inputs: tuple[Any, ...], output: Any) -> int:
    """0 in evaluation or when ``p == 0``; ``2N`` in training (mask, rescale); ``N`` when ``p == 1``."""
    inp, out = call_tensors(inputs, output)
    _check(module, inp, out)
    if not module.training or module.p == 0:
        return 0
    return inp.numel() if module.p == 1 else 2 * inp.numel()


@macs.register(*NATIVE)
def dropout_macs(module: nn.Dropout, inp: Tensor, out: Tensor) -> int:
    """0."""
    _check(module, inp, out)
    return 0


@dmas.register(*NATIVE)
def dropout_dmas(module: nn.Dropout, inp: Tensor, out: Tensor) -> int:
    """``N + 1 + (0 if inplace else Nout)`` (the ``1`` reads ``p``), in any mode."""
    _check(module, inp, out)
    if untouched(inp, out):
        return 0
    return inp.numel() + 1 + (0 if module.inplace else out.numel())


@receptive_field.register(*NATIVE)
def dropout_rf(module: nn.Dropout, inp: Tensor, out: Tensor) -> tuple[float, float, float]:
    """``(1, 1, 0)``."""
    _check(module, inp, out)
    return 1.0, 1.0, 0.0
