"""Operator formulas of the kernels ``nn.SyncBatchNorm`` runs, ``torchscan_flops_v1``.

Synchronized batch norm splits ``native_batch_norm`` into per-rank statistics, a gather across ranks
(the collective itself is tallied as communication) and the element-wise normalization; its backward
into a per-rank reduction and an element-wise step. Each part is counted with the conventions of
``native_batch_norm`` and its backward (``operator_layers``, ``backward_ops``): ``N`` input elements,
``C`` channels, ``W`` ranks gathered; a mean of ``k`` values costs ``k`` (adds and one divide), a
variance three more per element (subtract, square, add), ``invstd = rsqrt(var + eps)`` 2 per channel;
a running-statistics update ``3C`` for the mean and ``5C`` for the variance (unbiasing included).
"""

from __future__ import annotations

from torchscan.formulas.operator_common import arg, dim_size, elements
from torchscan.formulas.operator_registry import register


def _channels(inputs: object) -> int:
    return dim_size(inputs, 1) if inputs.dim() > 1 else 1  # type: ignore[attr-defined, arg-type]


def _running(running_mean: object, running_var: object, channels: int) -> int:
    return channels * (3 * (running_mean is not None) + 5 * (running_var is not None))


@register("batch_norm_stats")
def batch_norm_stats(args: tuple, kwargs: dict, out: object) -> int:
    """``(input, eps)`` -> ``(mean, invstd)`` per channel: mean ``N``, variance ``3N``, invstd ``2C``:
    ``4N + 2C``."""
    return 4 * elements(args[0]) + 2 * _channels(args[0])


@register("batch_norm_update_stats")
def batch_norm_update_stats(args: tuple, kwargs: dict, out: object) -> int:
    """``(input, running_mean, running_var, momentum)`` -> ``(mean, var)``: mean and variance ``4N``
    and the running updates."""
    channels = _channels(args[0])
    return 4 * elements(args[0]) + _running(args[1], args[2], channels)


@register("batch_norm_elemt")
def batch_norm_elemt(args: tuple, kwargs: dict, out: object) -> int:
    """``(input, weight, bias, mean, invstd, eps)``: ``(x − mean)·invstd`` 2 per element, then the
    weight and the bias 1 each when given: ``(2 + A)·N``."""
    affine = (args[1] is not None) + (args[2] is not None)
    return (2 + affine) * elements(args[0])


@register("batch_norm_gather_stats", "batch_norm_gather_stats_with_counts")
def batch_norm_gather_stats(args: tuple, kwargs: dict, out: object) -> int:
    """``(input, mean[W, C], invstd[W, C], running_mean, running_var, momentum, eps, count(s))``.

    Per rank and channel: the variance from ``invstd`` (square, reciprocal, subtract ``eps``: 3), the
    count-weighted mean (multiply, add: 2) and second moment (``n·(var + mean²)``: 3, add 1): ``9WC``;
    per channel: the two divides by the total count, ``var = E[x²] − mean²`` 2, invstd 2: ``6C``; and
    the running updates.
    """
    stats = elements(args[1])
    channels = int(args[1].shape[-1]) if args[1].dim() else 1
    return 9 * stats + 6 * channels + _running(args[3], args[4], channels)


@register("batch_norm_backward_reduce")
def batch_norm_backward_reduce(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, input, mean, invstd, weight, input_g, weight_g, bias_g)`` -> ``(sum_dy, sum_dy_xmu,
    grad_weight, grad_bias)``: ``Σ dy`` ``N − C``; ``Σ dy·(x − mean)`` subtract, multiply, add:
    ``3N − C``; ``grad_weight = sum_dy_xmu·invstd`` ``C`` when ``weight_g`` (``grad_bias`` is
    ``sum_dy``): ``4N − 2C + [weight_g]·C``. An empty input sums nothing (its sums are zero-filled):
    each ``N − C`` is at least 0."""
    n, channels = elements(args[1]), _channels(args[1])
    sums = max(n - channels, 0)
    return 2 * n + 2 * sums + channels * bool(arg(args, kwargs, 6, "weight_g", True))


@register("batch_norm_backward_elemt")
def batch_norm_backward_elemt(args: tuple, kwargs: dict, out: object) -> int:
    """``(grad, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count)``: per channel the two means
    (divides by the total count), ``invstd²`` and the two factors (5); per element
    ``(dy − mean_dy − (x − mean)·k)·invstd·w``: subtract, multiply, two subtracts, multiply: ``5N + 5C``."""
    return 5 * elements(args[1]) + 5 * _channels(args[1])
