"""Pooling (formulas.md A.5.11): fixed max/average pooling and adaptive max/average pooling.

``rank`` comes from the module class, so batched and unbatched inputs count alike. Fixed pooling
counts nominal dense windows (padded and ceil-mode positions included); adaptive pooling counts the
exact overlapping floor/ceil windows.
"""

from __future__ import annotations

import math
from typing import Any

from torch import Tensor, nn

from torchscan.formulas.native import require_native_forward
from torchscan.formulas.registry import UnsupportedConfiguration, dmas, flops, macs, receptive_field
from torchscan.formulas.tensors import call_tensors, first_axis, require_dense

Ranks = dict[type[nn.Module], int]
MAX_POOL: Ranks = {nn.MaxPool1d: 1, nn.MaxPool2d: 2, nn.MaxPool3d: 3}
AVG_POOL: Ranks = {nn.AvgPool1d: 1, nn.AvgPool2d: 2, nn.AvgPool3d: 3}
ADAPTIVE_MAX: Ranks = {nn.AdaptiveMaxPool1d: 1, nn.AdaptiveMaxPool2d: 2, nn.AdaptiveMaxPool3d: 3}
ADAPTIVE_AVG: Ranks = {nn.AdaptiveAvgPool1d: 1, nn.AdaptiveAvgPool2d: 2, nn.AdaptiveAvgPool3d: 3}
RANKS: Ranks = {**MAX_POOL, **AVG_POOL, **ADAPTIVE_MAX, **ADAPTIVE_AVG}
ADAPTIVE_RF_REASON = "Adaptive pooling receptive fields require a nonempty output."


def _rank(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """Validate the call and return the pooling rank of the module's native class."""
    require_native_forward(module, tuple(RANKS))
    require_dense(inp, out)
    return next(RANKS[cls] for cls in type(module).__mro__ if cls in RANKS)


def kernel_volume(kernel_size: int | tuple[int, ...], rank: int) -> int:
    """``K``: ``k^rank`` for an int or a one-element sequence, else the product of the sizes."""
    if isinstance(kernel_size, int):
        return kernel_size**rank
    if len(kernel_size) == 1:
        return kernel_size[0] ** rank
    return math.prod(kernel_size)


def adaptive_visits(inp: Tensor, out: Tensor, rank: int) -> int:
    """Values read by all adaptive windows: ``prod(input.shape[:-rank]) · Π (L + O − gcd(L, O))``.

    Output lengths come from the output tensor, so ``None`` entries of ``output_size`` need no special case.
    """
    lengths = zip(inp.shape[inp.dim() - rank :], out.shape[out.dim() - rank :], strict=True)
    per_axis = math.prod(size + o - math.gcd(size, o) for size, o in lengths)
    return math.prod(inp.shape[: inp.dim() - rank]) * per_axis


def _indices(module: Any) -> int:
    return int(bool(getattr(module, "return_indices", False)))


# --- fixed pooling -----------------------------------------------------------------------------


@flops.register(*MAX_POOL, *AVG_POOL)
def pool_flops(module: Any, inputs: tuple[Any, ...], output: Any) -> int:
    """Max ``Nout·(K − 1)`` comparisons; average ``Nout·K`` (``K − 1`` adds and one divide)."""
    inp, out = call_tensors(inputs, output)
    k = kernel_volume(module.kernel_size, _rank(module, inp, out))
    return out.numel() * (k - 1 if isinstance(module, tuple(MAX_POOL)) else k)


@macs.register(*MAX_POOL, *AVG_POOL)
def pool_macs(module: Any, inp: Tensor, out: Tensor) -> int:
    """Max ``Nout·(K − 1)``; average ``Nout·(K − 1 + rank)``."""
    rank = _rank(module, inp, out)
    k = kernel_volume(module.kernel_size, rank)
    return out.numel() * (k - 1 if isinstance(module, tuple(MAX_POOL)) else k - 1 + rank)


@dmas.register(*MAX_POOL, *AVG_POOL)
def pool_dmas(module: Any, inp: Tensor, out: Tensor) -> int:
    """Max ``Nout·(K + 1 + [return_indices])``; average ``Nout·(K + 1)``."""
    k = kernel_volume(module.kernel_size, _rank(module, inp, out))
    return out.numel() * (k + 1 + _indices(module))


@receptive_field.register(*MAX_POOL, *AVG_POOL)
def pool_rf(module: Any, inp: Tensor, out: Tensor) -> tuple[float, float, float]:
    """Max ``(d·(k − 1) + 1, s, p)``; average ``(k, s, p)``; the stride defaults to the kernel."""
    _rank(module, inp, out)
    kernel = first_axis(module.kernel_size)
    stride = module.stride if module.stride not in (None, (), []) else kernel
    dilation = first_axis(getattr(module, "dilation", 1))
    field = dilation * (kernel - 1) + 1
    return float(field), float(first_axis(stride)), float(first_axis(module.padding))


# --- adaptive pooling --------------------------------------------------------------------------


@flops.register(*ADAPTIVE_MAX, *ADAPTIVE_AVG)
def adaptive_pool_flops(module: Any, inputs: tuple[Any, ...], output: Any) -> int:
    """Max ``visits − Nout`` comparisons; average ``visits`` (adds plus one divide per window)."""
    inp, out = call_tensors(inputs, output)
    visits = adaptive_visits(inp, out, _rank(module, inp, out))
    return max(0, visits - out.numel()) if isinstance(module, tuple(ADAPTIVE_MAX)) else visits


@macs.register(*ADAPTIVE_MAX, *ADAPTIVE_AVG)
def adaptive_pool_macs(module: Any, inp: Tensor, out: Tensor) -> int:
    """Max ``visits − Nout``; average ``visits + Nout·(rank − 1)``."""
    rank = _rank(module, inp, out)
    visits = adaptive_visits(inp, out, rank)
    if isinstance(module, tuple(ADAPTIVE_MAX)):
        return max(0, visits - out.numel())
    return visits + out.numel() * (rank - 1)


@dmas.register(*ADAPTIVE_MAX, *ADAPTIVE_AVG)
def adaptive_pool_dmas(module: Any, inp: Tensor, out: Tensor) -> int:
    """Max ``visits + Nout·(1 + [return_indices])``; average ``visits + Nout``."""
    visits = adaptive_visits(inp, out, _rank(module, inp, out))
    return visits + out.numel() * (1 + _indices(module))


@receptive_field.register(*ADAPTIVE_MAX, *ADAPTIVE_AVG)
def adaptive_pool_rf(module: Any, inp: Tensor, out: Tensor) -> tuple[float, float, float]:
    """On the last axis: field ``ceil(Lin / Lout)``, stride the same, padding ``(Lin − field·stride) / 2``."""
    _rank(module, inp, out)
    length_in, length_out = inp.shape[-1], out.shape[-1]
    if length_out == 0:
        raise UnsupportedConfiguration(ADAPTIVE_RF_REASON)
    field = math.ceil(length_in / length_out)
    return float(field), float(field), (length_in - field * field) / 2
