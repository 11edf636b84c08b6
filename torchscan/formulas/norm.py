"""Normalization layers: BatchNorm (formulas.md A.5.9) and LayerNorm/GroupNorm/RMSNorm (A.5.10).

BatchNorm follows the running buffers actually present at call time, not the constructor flag.
The A.5.10 family uses the two-pass mathematical count (mean, biased variance, epsilon add and
square root per row, normalize); it says nothing about fused kernels.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from torch import Tensor, nn
from torch.nn.modules.batchnorm import _BatchNorm

from torchscan.formulas.native import PRIMITIVE_REASON, require_exact_native, require_native_forward
from torchscan.formulas.registry import UnsupportedConfiguration, dmas, flops, macs, receptive_field
from torchscan.formulas.tensors import (
    DENSE_REASON,
    call_tensors,
    is_dense_real,
    own_tensor,
    param_count,
    require_dense,
    untouched,
)

BATCH_NORM = (_BatchNorm, nn.SyncBatchNorm)
RMS_NORM: tuple[type[nn.Module], ...] = (nn.RMSNorm,) if hasattr(nn, "RMSNorm") else ()
ROW_NORMS = (nn.LayerNorm, nn.GroupNorm, *RMS_NORM)

LAYER_NORM_REASON = "LayerNorm FLOPs require a nonempty normalized row."
GROUP_NORM_REASON = "GroupNorm estimates require matching channels and a nonempty normalized group."
RMS_NORM_REASON = "RMSNorm estimates require matching nonempty normalized rows."
EPSILON_REASON = "Normalization estimates require a finite scalar epsilon."
PARAMETER_REASON = "Normalization parameters must have the native shape."


def _affine(module: nn.Module) -> tuple[int, int]:
    """``(A, W)``: affine tensors present (weight, bias) and whether a weight is present."""
    weight, bias = own_tensor(module, "weight"), own_tensor(module, "bias")
    return int(weight is not None) + int(bias is not None), int(weight is not None)


# --- BatchNorm (A.5.9) -------------------------------------------------------------------------


class BatchState(NamedTuple):
    """The configuration a BatchNorm call actually runs with."""

    channels: int
    has_mean: bool
    has_var: bool
    from_batch: bool  # statistics computed from the batch (training, or no running buffers at all)
    updating: bool  # running statistics updated (training and track_running_stats)


def _batch_norm(module: Any, inp: Tensor, out: Tensor) -> BatchState:
    require_native_forward(module, BATCH_NORM)
    require_dense(inp, out)
    has_mean = own_tensor(module, "running_mean") is not None
    has_var = own_tensor(module, "running_var") is not None
    return BatchState(
        channels=module.num_features,
        has_mean=has_mean,
        has_var=has_var,
        from_batch=module.training or not (has_mean or has_var),
        updating=module.training and module.track_running_stats,
    )


@flops.register(_BatchNorm)
def batch_norm_flops(module: nn.Module, inputs: tuple[Any, ...], output: Any) -> int:
    """``2N + 2C + A·N + 4N·[stats from batch] + C·(3·[mean] + 5·[var])·[running update]``; 0 when N = 0."""
    inp, out = call_tensors(inputs, output)
    state = _batch_norm(module, inp, out)
    n, c = inp.numel(), state.channels
    if n == 0:
        return 0
    update = c * (3 * state.has_mean + 5 * state.has_var) if state.updating else 0
    return 2 * n + 2 * c + _affine(module)[0] * n + 4 * n * state.from_batch + update


@macs.register(_BatchNorm)
def batch_norm_macs(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """``N·(1 + W)`` plus ``C·(M − 1) + C·(2M − 1) + 4C`` (``M = N / C``) for a running update.

    ``[affine]`` of the spec is read as "a weight is present" (the multiply of ``w·x̂ + b``).
    """
    state = _batch_norm(module, inp, out)
    n, c = inp.numel(), state.channels
    if n == 0:
        return 0
    total = n * (1 + _affine(module)[1])
    if state.updating and c:
        per_channel = n // c
        total += c * (per_channel - 1) + c * (2 * per_channel - 1) + 4 * c
    return total


@dmas.register(_BatchNorm)
def batch_norm_dmas(module: Any, inp: Tensor, out: Tensor) -> int:
    """Input, epsilon, running buffers, affine tensors, momentum, running update and output."""
    state = _batch_norm(module, inp, out)
    if untouched(inp, out):
        return 0
    c, both = state.channels, state.has_mean and state.has_var
    affine = own_tensor(module, "weight") is not None and own_tensor(module, "bias") is not None
    return (
        inp.numel()
        + 1
        + 2 * c * both
        + 2 * c * affine
        + int(module.momentum is not None)
        + (1 + 2 * c) * (state.updating and both)
        + out.numel()
    )


@receptive_field.register(_BatchNorm)
def batch_norm_rf(module: nn.Module, inp: Tensor, out: Tensor) -> tuple[float, float, float]:
    """``(1, 1, 0)``: per-element normalization."""
    _batch_norm(module, inp, out)
    return 1.0, 1.0, 0.0


# --- LayerNorm, GroupNorm, RMSNorm (A.5.10) ----------------------------------------------------


def _check_epsilon_and_parameters(module: Any, native_shape: tuple[int, ...]) -> None:
    eps = module.eps
    default_eps = eps is None and isinstance(module, RMS_NORM)  # RMSNorm then uses finfo(dtype).eps
    finite = not isinstance(eps, bool) and isinstance(eps, int | float) and math.isfinite(eps)
    if not (default_eps or finite):
        raise UnsupportedConfiguration(EPSILON_REASON)
    for param in (own_tensor(module, "weight"), own_tensor(module, "bias")):
        if param is not None and tuple(param.shape) != native_shape:
            raise UnsupportedConfiguration(PARAMETER_REASON)
        if param is not None and not is_dense_real(param):
            # A complex (or sparse) weight changes the arithmetic, whatever the input's dtype.
            raise UnsupportedConfiguration(DENSE_REASON)


def _row_size(module: Any) -> int:
    return math.prod(module.normalized_shape)


def _rows(module: Any, inp: Tensor, out: Tensor) -> int:
    """Validate the call and return the number of normalized rows ``R``."""
    if isinstance(module, nn.LayerNorm):
        require_native_forward(module, (nn.LayerNorm,))
    else:
        require_exact_native(module, ROW_NORMS, PRIMITIVE_REASON)
    require_dense(inp, out)
    if isinstance(module, nn.GroupNorm):
        _check_epsilon_and_parameters(module, (module.num_channels,))
        groups, channels = module.num_groups, module.num_channels
        if inp.dim() < 2 or inp.shape[1] != channels or not groups or channels % groups:
            raise UnsupportedConfiguration(GROUP_NORM_REASON)
        if channels // groups * math.prod(inp.shape[2:]) == 0:
            raise UnsupportedConfiguration(GROUP_NORM_REASON)
        return inp.shape[0] * groups
    shape = tuple(module.normalized_shape)
    _check_epsilon_and_parameters(module, shape)
    row = _row_size(module)
    if isinstance(module, RMS_NORM) and (row == 0 or tuple(inp.shape[inp.dim() - len(shape) :]) != shape):
        raise UnsupportedConfiguration(RMS_NORM_REASON)
    return inp.numel() // row if row else 0


@flops.register(*ROW_NORMS)
def row_norm_flops(module: nn.Module, inputs: tuple[Any, ...], output: Any) -> int:
    """LayerNorm/GroupNorm ``6N + 2R + A·N``; RMSNorm ``(3 + W)·N + 2R``."""
    inp, out = call_tensors(inputs, output)
    rows = _rows(module, inp, out)
    if isinstance(module, nn.LayerNorm) and _row_size(module) == 0:
        raise UnsupportedConfiguration(LAYER_NORM_REASON)
    n, (affine, weight) = inp.numel(), _affine(module)
    if isinstance(module, RMS_NORM):
        return (3 + weight) * n + 2 * rows
    return 6 * n + 2 * rows + affine * n


@macs.register(*ROW_NORMS)
def row_norm_macs(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """``N·(1 + W)``."""
    _rows(module, inp, out)
    return inp.numel() * (1 + _affine(module)[1])


@dmas.register(*ROW_NORMS)
def row_norm_dmas(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """LayerNorm/GroupNorm ``4N + 5R + 1 + P + 2N·[A > 0]``; RMSNorm ``3N + 4R + 1 + W·(2N + P)``.

    0 when ``N = 0``.
    """
    rows = _rows(module, inp, out)
    n, (affine, weight) = inp.numel(), _affine(module)
    if n == 0:
        return 0
    if isinstance(module, RMS_NORM):
        return 3 * n + 4 * rows + 1 + weight * (2 * n + param_count(module))
    return 4 * n + 5 * rows + 1 + param_count(module) + 2 * n * (affine > 0)


@receptive_field.register(*ROW_NORMS)
def row_norm_rf(module: nn.Module, inp: Tensor, out: Tensor) -> None:
    """Not applicable: each output depends on its whole normalized row or group."""
    _rows(module, inp, out)
    return None
