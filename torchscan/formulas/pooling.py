"""Pooling (formulas.md A.5.11, truth.md §6): fixed max/average pooling and adaptive max/average pooling.

``rank`` comes from the module class, so batched and unbatched inputs count alike. Fixed pooling
counts the taps the kernel executes: every window clamped to the input (padding, dilation and
``ceil_mode`` positions past the input cost nothing, whatever ``count_include_pad`` says about the
divisor; :mod:`~torchscan.formulas.pool_windows`). Adaptive pooling counts the exact overlapping
floor/ceil windows. A window of ``T`` in-bound taps costs, for max pooling, ``T − 1`` comparisons
(none for an empty window) and, for average pooling, ``T − 1`` adds and one divide.
"""

from __future__ import annotations

import math
from typing import Any

from torch import Tensor, nn

from torchscan.formulas.native import require_native_forward
from torchscan.formulas.pool_windows import Windows, adaptive_visits, clamped_windows
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


def _windows(module: Any, inp: Tensor, out: Tensor) -> tuple[int, Windows]:
    """``(rank, windows)``: the call's windows clamped to the input (truth.md §6)."""
    rank = _rank(module, inp, out)
    dilation = getattr(module, "dilation", 1)  # average pooling has none
    geometry = (module.kernel_size, module.stride, module.padding, dilation)
    return rank, clamped_windows(inp.shape, out.shape, rank, *geometry)


def _indices(module: Any) -> int:
    return int(bool(getattr(module, "return_indices", False)))


# --- fixed pooling -----------------------------------------------------------------------------


@flops.register(*MAX_POOL, *AVG_POOL)
def pool_flops(module: Any, inputs: tuple[Any, ...], output: Any) -> int:
    """Max ``taps − windows`` (``T − 1`` comparisons per non-empty window); average ``taps``
    (``T − 1`` adds and one divide per window)."""
    inp, out = call_tensors(inputs, output)
    windows = _windows(module, inp, out)[1]
    return windows.taps - windows.nonempty if isinstance(module, tuple(MAX_POOL)) else windows.taps


@macs.register(*MAX_POOL, *AVG_POOL)
def pool_macs(module: Any, inp: Tensor, out: Tensor) -> int:
    """Max ``taps − windows``; average ``taps + Nout·(rank − 1)`` (``T − 1 + rank`` per window)."""
    rank, windows = _windows(module, inp, out)
    if isinstance(module, tuple(MAX_POOL)):
        return windows.taps - windows.nonempty
    return windows.taps + out.numel() * (rank - 1)


@dmas.register(*MAX_POOL, *AVG_POOL)
def pool_dmas(module: Any, inp: Tensor, out: Tensor) -> int:
    """Max ``taps + Nout·(1 + [return_indices])``; average ``taps + Nout`` (every tap read, every
    output written)."""
    windows = _windows(module, inp, out)[1]
    return windows.taps + out.numel() * (1 + _indices(module))


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
    visits = adaptive_visits(inp.shape, out.shape, _rank(module, inp, out))
    return max(0, visits - out.numel()) if isinstance(module, tuple(ADAPTIVE_MAX)) else visits


@macs.register(*ADAPTIVE_MAX, *ADAPTIVE_AVG)
def adaptive_pool_macs(module: Any, inp: Tensor, out: Tensor) -> int:
    """Max ``visits − Nout``; average ``visits + Nout·(rank − 1)``."""
    rank = _rank(module, inp, out)
    visits = adaptive_visits(inp.shape, out.shape, rank)
    if isinstance(module, tuple(ADAPTIVE_MAX)):
        return max(0, visits - out.numel())
    return visits + out.numel() * (rank - 1)


@dmas.register(*ADAPTIVE_MAX, *ADAPTIVE_AVG)
def adaptive_pool_dmas(module: Any, inp: Tensor, out: Tensor) -> int:
    """Max ``visits + Nout·(1 + [return_indices])``; average ``visits + Nout``."""
    visits = adaptive_visits(inp.shape, out.shape, _rank(module, inp, out))
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
