"""Module formulas on nested (ragged) tensors: where a formula holds for ragged sizes (truth.md 6).

A nested tensor has no single shape, so formulas that read shapes refuse it (A.1: an unsupported
configuration). Some families act on each row of the last dimension alone, whatever the other
dimensions are: a linear layer, an element-wise activation, dropout, identity, and a layer or RMS
norm over the last dimension. Their counts are those of the same rows laid out densely, so such a
call is estimated on a dense stand-in of ``(rows, last)`` with the nested tensor's elements (a meta
tensor: nothing is allocated or read). Every other family stays unavailable with its diagnostic:
a reduction, a convolution or a per-channel parameter over a ragged dimension has no such
equivalent, and a count is never made up.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from torchscan.formulas.activation import LEGACY, POINTWISE
from torchscan.formulas.norm import RMS_NORM

ROW_WISE: tuple[type[nn.Module], ...] = (
    nn.Linear,
    nn.Identity,
    nn.Dropout,
    *LEGACY,
    *(cls for cls in POINTWISE if cls is not nn.PReLU),  # PReLU's weights run along dimension 1
)
"""Families whose counts depend only on the rows of the last dimension (the formulas still check the
exact native type; a subclass that changed ``forward`` is refused by them as on dense tensors)."""
_LAST_DIM_NORMS: tuple[type[nn.Module], ...] = (nn.LayerNorm, *RMS_NORM)


def holds_for_ragged(module: nn.Module) -> bool:
    """True when ``module``'s formulas count a nested call exactly as its rows laid out densely."""
    if isinstance(module, ROW_WISE):
        return True
    return isinstance(module, _LAST_DIM_NORMS) and len(module.normalized_shape) == 1  # type: ignore[arg-type]


def _stand_in(tensor: Tensor) -> Tensor | None:
    """A dense meta tensor ``(rows, last)`` with the elements of ``tensor``, or None when none fits."""
    if not tensor.is_nested:
        return tensor
    if tensor.layout not in (torch.strided, torch.jagged) or tensor.dim() < 2:
        return None
    last = int(tensor.size(-1))  # the last dimension of a nested tensor is regular (never ragged)
    elements = int(tensor.numel())
    if last == 0 or elements % last:
        return None
    return torch.empty((elements // last, last), dtype=tensor.dtype, device="meta")


def dense_call(
    module: nn.Module, inputs: tuple[Any, ...], inp: Tensor, out: Tensor
) -> tuple[tuple[Any, ...], Tensor, Tensor] | None:
    """``(inputs, inp, out)`` standing in for a call with nested tensors, or None when none holds.

    Only a call of a :func:`holds_for_ragged` family with one tensor argument qualifies; ``inputs``
    becomes that argument's stand-in alone and the output the stand-in of ``out``.
    """
    if not holds_for_ragged(module) or len(inputs) != 1 or inputs[0] is not inp:
        return None
    dense_in, dense_out = _stand_in(inp), _stand_in(out)
    if dense_in is None or dense_out is None:
        return None
    return (dense_in,), dense_in, dense_out
