"""Softmax family (formulas.md A.5.8): exact native ``Softmax``, ``Softmax2d``, ``LogSoftmax``, ``Softmin``.

Per row of length ``S``: max ``S−1``, subtract ``S``, exp ``S``, sum ``S−1``, divide ``S`` (softmax);
log-softmax replaces the divide by one log and a subtract; softmin negates first.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from torchscan.formulas.native import PRIMITIVE_REASON, require_exact_native
from torchscan.formulas.registry import UnsupportedConfiguration, dmas, flops, macs, receptive_field
from torchscan.formulas.tensors import call_tensors, require_dense

SOFTMAX = (nn.Softmax, nn.Softmax2d, nn.LogSoftmax, nn.Softmin)
SOFTMAX_DIM_REASON = "Softmax estimates require a valid dimension."

# (FLOPs per element, FLOPs per row, DMAs per element, DMAs per row): FLOPs = a·N + b·R, DMAs = c·N + d·R
COEFFICIENTS: dict[type[nn.Module], tuple[int, int, int, int]] = {
    nn.Softmax: (5, -2, 8, 4),
    nn.Softmax2d: (5, -2, 8, 4),
    nn.LogSoftmax: (4, -1, 8, 6),
    nn.Softmin: (6, -2, 10, 4),
}


def _dim(module: nn.Module, inp: Tensor) -> int:
    """The reduced dimension: ``-3`` for Softmax2d, else the module's ``dim`` (PyTorch's legacy
    implicit choice when it is ``None``: 0 for 0-, 1- and 3-dimensional inputs, else 1)."""
    if isinstance(module, nn.Softmax2d):
        return -3
    dim = getattr(module, "dim", None)
    if dim is None:
        return 0 if inp.dim() in (0, 1, 3) else 1
    return dim


def _rows(module: nn.Module, inp: Tensor, out: Tensor) -> tuple[int, int]:
    """Validate the call and return ``(N, R)``."""
    require_exact_native(module, SOFTMAX, PRIMITIVE_REASON)
    require_dense(inp, out)
    dim, ndim = _dim(module, inp), max(inp.dim(), 1)
    if not -ndim <= dim < ndim:
        raise UnsupportedConfiguration(SOFTMAX_DIM_REASON)
    size = inp.shape[dim] if inp.dim() else 1
    total = inp.numel()
    return total, (total // size if size else 0)


def _counts(module: nn.Module, inp: Tensor, out: Tensor) -> tuple[int, int]:
    """Validate the call and return ``(FLOPs, DMAs)``."""
    total, rows = _rows(module, inp, out)
    a, b, c, d = COEFFICIENTS[type(module)]
    return a * total + b * rows, c * total + d * rows


@flops.register(*SOFTMAX)
def softmax_flops(module: nn.Module, inputs: tuple[Any, ...], output: Any) -> int:
    """Softmax ``5N − 2R``, LogSoftmax ``4N − R``, Softmin ``6N − 2R`` (0 for an empty input)."""
    inp, out = call_tensors(inputs, output)
    return _counts(module, inp, out)[0]


@macs.register(*SOFTMAX)
def softmax_macs(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """0."""
    _rows(module, inp, out)
    return 0


@dmas.register(*SOFTMAX)
def softmax_dmas(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """Softmax ``8N + 4R``, LogSoftmax ``8N + 6R``, Softmin ``10N + 4R``."""
    return _counts(module, inp, out)[1]


@receptive_field.register(*SOFTMAX)
def softmax_rf(module: nn.Module, inp: Tensor, out: Tensor) -> None:
    """Not applicable: every output depends on its whole row."""
    _rows(module, inp, out)
    return None
