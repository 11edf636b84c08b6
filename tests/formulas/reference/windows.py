"""Pooling windows enumerated by brute force (the reference of the pooling and interpolation suites).

Each window is listed from PyTorch's documented geometry, one axis at a time, as a boolean
``(outputs, inputs)`` membership; :func:`window_mask` combines the axes and :func:`pooled` recomputes
the kernel's output values from it, so a suite can check that the windows are the executed ones
before it counts their taps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch


def fixed_axis(
    length: int, outputs: int, kernel: int, stride: int, padding: int, dilation: int
) -> torch.Tensor:
    """``(outputs, length)`` membership of one axis: row ``i`` marks the in-bound taps of window ``i``."""
    member = torch.zeros(outputs, length, dtype=torch.bool)
    for i in range(outputs):
        for j in range(kernel):
            position = i * stride - padding + j * dilation
            if 0 <= position < length:
                member[i, position] = True
    return member


def adaptive_axis(length: int, outputs: int) -> torch.Tensor:
    """Adaptive window ``i`` reads ``[⌊i·L/O⌋, ⌈(i+1)·L/O⌉)``."""
    member = torch.zeros(outputs, length, dtype=torch.bool)
    for i in range(outputs):
        member[i, (i * length) // outputs : -((-(i + 1) * length) // outputs)] = True
    return member


def window_mask(axes: Sequence[torch.Tensor]) -> torch.Tensor:
    """``(O1, …, Or, L1, …, Lr)`` membership of the whole windows: the outer product of the axes."""
    mask = torch.ones((), dtype=torch.bool)
    for axis in axes:
        rank = mask.dim() // 2
        mask = mask.reshape(*mask.shape[:rank], 1, *mask.shape[rank:], 1) & axis.reshape(
            *([1] * rank), axis.shape[0], *([1] * rank), axis.shape[1]
        )
    return mask


def pooled(
    x: torch.Tensor, mask: torch.Tensor, kind: str, divisor: torch.Tensor | None = None
) -> torch.Tensor:
    """The pooling recomputed from the windows: maxima (``-inf`` for a window with no tap) or sums
    divided by ``divisor`` (the tap counts when ``None``). ``x`` is ``(B, L1, …, Lr)``."""
    rank = mask.dim() // 2
    inputs = x.double().reshape(x.shape[0], *([1] * rank), *x.shape[1:])
    dims = tuple(range(-rank, 0))
    if kind == "max":
        return torch.where(mask, inputs, -math.inf).amax(dim=dims)
    sums = torch.where(mask, inputs, 0.0).sum(dim=dims)
    return sums / (mask.sum(dim=dims) if divisor is None else divisor)


def taps_per_window(mask: torch.Tensor) -> torch.Tensor:
    """In-bound taps of each window, shaped as the output."""
    rank = mask.dim() // 2
    return mask.sum(dim=tuple(range(-rank, 0)))
