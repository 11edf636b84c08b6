"""Pooling windows as the kernels execute them (truth.md §6): taps clamped to the input.

A pooling kernel never reads padding or positions past the input: PyTorch's CPU and CUDA kernels
clamp every window to ``[0, L)`` on each axis (stepping over the dilation), whatever
``count_include_pad`` says about the divisor. So ``AvgPool2d(640, ceil_mode=True)`` on a ``2×2``
input executes what ``AvgPool2d(2)`` executes. The module formulas (``pooling``), the forward
operator formulas (``operator_layers``, ``fused_ops``) and the backward ones (``backward_ops``) all
count from :func:`clamped_windows`, so the three views agree by construction.

Pure arithmetic on sizes: nothing here imports torch, reads a tensor or calls a formula.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

Sizes = int | Sequence[int]


class Windows(NamedTuple):
    """What the windows of one pooling call cover, summed over every window of the call."""

    taps: int
    """In-bound input positions read, summed over all windows (a position read by two overlapping
    windows counts twice)."""
    nonempty: int
    """Windows with at least one in-bound tap (a dilated max-pooling window can have none: its output
    is ``-inf`` and its gradient is dropped)."""


def per_axis(value: Sizes | None, rank: int, default: int) -> tuple[int, ...]:
    """An int or a one-element sequence means the same size on every axis; ``None`` or an empty
    sequence means ``default`` (an omitted stride: pass the kernel's size per axis yourself)."""
    if value is None:
        return (default,) * rank
    if isinstance(value, int):
        return (value,) * rank
    sizes = tuple(int(v) for v in value)
    if not sizes:
        return (default,) * rank
    return sizes * rank if len(sizes) == 1 else sizes


def kernel_volume(kernel_size: Sizes, rank: int) -> int:
    """``K``: ``k^rank`` for an int or a one-element sequence, else the product of the sizes."""
    return math.prod(per_axis(kernel_size, rank, 1))


@lru_cache(maxsize=4096)
def axis_windows(length: int, outputs: int, kernel: int, stride: int, padding: int, dilation: int) -> Windows:
    """Taps and non-empty windows along one axis of input length ``length``.

    Window ``i`` starts at ``i·stride − padding`` and reads ``start + j·dilation`` for ``j < kernel``;
    only positions in ``[0, length)`` are taps. Windows lying wholly inside the input (the interior)
    have ``kernel`` taps each and are counted in one step; only the boundary windows are walked.
    """
    if length <= 0 or outputs <= 0 or kernel <= 0:
        return Windows(0, 0)
    reach = (kernel - 1) * dilation  # from the first tap to the last
    first_full = -(-padding // stride)  # smallest i with start >= 0
    last_full = (length - 1 + padding - reach) // stride  # largest i with the last tap < length
    first_full, last_full = max(first_full, 0), min(last_full, outputs - 1)
    full = max(0, last_full - first_full + 1)
    taps, nonempty = full * kernel, full
    boundary = range(outputs) if full == 0 else [*range(first_full), *range(last_full + 1, outputs)]
    for index in boundary:
        start = index * stride - padding
        low = 0 if start >= 0 else -(start // dilation)  # first j with start + j·d >= 0, ⌈−start/d⌉
        high = min(kernel - 1, (length - 1 - start) // dilation) if start < length else -1
        count = max(0, high - low + 1)
        taps += count
        nonempty += count > 0
    return Windows(taps, nonempty)


def clamped_windows(
    in_shape: Sequence[int],
    out_shape: Sequence[int],
    rank: int,
    kernel: Sizes,
    stride: Sizes | None,
    padding: Sizes,
    dilation: Sizes = 1,
) -> Windows:
    """Taps and non-empty windows of a fixed-window pooling call over its last ``rank`` axes.

    The leading sizes of ``in_shape`` (batch, channels; none for an unbatched call) multiply. A window
    is the product of its axes' windows, so both sums factor per axis. An int or one-element kernel,
    stride, padding or dilation applies to every axis; an omitted stride (``None`` or empty) is the
    kernel, as in PyTorch. Output lengths come from ``out_shape`` (``ceil_mode`` is already in them).
    """
    kernels = per_axis(kernel, rank, 1)
    strides = tuple(s if s > 0 else k for s, k in zip(per_axis(stride, rank, 0), kernels, strict=True))
    pads, dilations = per_axis(padding, rank, 0), per_axis(dilation, rank, 1)
    lengths, outputs = in_shape[len(in_shape) - rank :], out_shape[len(out_shape) - rank :]
    taps = nonempty = math.prod(int(size) for size in in_shape[: len(in_shape) - rank])
    for axis in range(rank):
        along = axis_windows(
            int(lengths[axis]), int(outputs[axis]), kernels[axis], strides[axis], pads[axis], dilations[axis]
        )
        taps *= along.taps
        nonempty *= along.nonempty
    return Windows(taps, nonempty)


def adaptive_visits(in_shape: Sequence[int], out_shape: Sequence[int], rank: int) -> int:
    """Values read by all adaptive windows: ``prod(leading) · Π_axes (L + O − gcd(L, O))``.

    Adaptive window ``i`` of an axis reads ``[⌊i·L/O⌋, ⌈(i+1)·L/O⌉)``, always inside the input. The
    windows tile the ``L`` elements, and each of the ``O − 1`` inner boundaries ``i·L/O`` that is not
    an integer (``O − gcd(L, O)`` of them) puts one element in both neighbouring windows. Output lengths
    come from the output, so ``None`` entries of ``output_size`` need no special case.
    """
    lengths = zip(in_shape[len(in_shape) - rank :], out_shape[len(out_shape) - rank :], strict=True)
    per_axis_reads = math.prod(int(size) + int(o) - math.gcd(int(size), int(o)) for size, o in lengths)
    return math.prod(int(size) for size in in_shape[: len(in_shape) - rank]) * per_axis_reads
