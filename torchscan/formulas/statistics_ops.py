"""Operator formulas of the statistical reductions the B.8 table lacks (issue #19 coverage).

``var``, ``std``, ``var_mean``, ``std_mean``, ``prod``, ``nansum``, ``logsumexp``, ``count_nonzero``,
``trace``, ``amax``/``amin``, the scans ``cumprod``/``cummax``/``cummin``, ``bincount`` and the
distances ``cdist``/``dist`` have their own kernels (no ``CompositeImplicitAutograd``
decomposition), so a model calling ``torch.var`` was partial. The spec is silent on them; each
count below follows the B.8 conventions (a reduction of ``k`` values costs ``k − 1`` adds, one
operation per element per step) and its derivation is in the docstring. ``in`` and ``out`` are
element counts of the input and of the (first) result.
"""

from __future__ import annotations

import math

import torch

from torchscan.formulas.operator_common import (
    UnsupportedOperatorFormula,
    arg,
    dim_size,
    elements,
    first_tensor,
    involves_floating,
    reduction_dtype,
)
from torchscan.formulas.operator_registry import register


def _reduced(args: tuple, out: object) -> tuple[int, int]:
    """``(in, out)`` of a reduction whose input is the first argument."""
    return elements(args[0]), elements(out)


@register("var", "var_mean", rule=reduction_dtype)
def variance(args: tuple, kwargs: dict, out: object) -> int:
    """``4·in``: the mean (``in − out`` adds, ``out`` divides), one subtract and one square per
    element, the sum of squares (``in − out`` adds) and one divide by ``n − correction`` per output.
    ``var_mean`` returns the mean it computed on the way: the same count."""
    return 4 * elements(args[0])


@register("std", "std_mean", rule=reduction_dtype)
def standard_deviation(args: tuple, kwargs: dict, out: object) -> int:
    """``4·in + out``: the variance, then one square root per output."""
    inputs, outputs = _reduced(args, out)
    return variance(args, kwargs, out) + (outputs if inputs else 0)


@register("prod", rule=reduction_dtype)
def product(args: tuple, kwargs: dict, out: object) -> int:
    """``max(in − out, 0)``: reducing ``k`` values into one costs ``k − 1`` multiplies."""
    inputs, outputs = _reduced(args, out)
    return max(inputs - outputs, 0)


@register("nansum", rule=reduction_dtype)
def nan_sum(args: tuple, kwargs: dict, out: object) -> int:
    """``in + max(in − out, 0)``: one NaN test per element, then the ``sum`` adds."""
    inputs, outputs = _reduced(args, out)
    return inputs + max(inputs - outputs, 0)


@register("logsumexp", rule=reduction_dtype)
def log_sum_exp(args: tuple, kwargs: dict, out: object) -> int:
    """``4·in``: the stabilising maximum (``in − out`` comparisons), one subtract and one ``exp`` per
    element, the sum (``in − out`` adds), then one ``log`` and one add of the maximum per output."""
    return 4 * elements(args[0])


@register("count_nonzero", rule=involves_floating)
def count_nonzero(args: tuple, kwargs: dict, out: object) -> int:
    """``in + max(in − out, 0)``: one comparison with zero per element, then the count's adds; the
    integer result does not make floating comparisons free (the input rule decides)."""
    inputs, outputs = _reduced(args, out)
    return inputs + max(inputs - outputs, 0)


@register("trace", rule=reduction_dtype)
def trace(args: tuple, kwargs: dict, out: object) -> int:
    """``max(min(rows, cols) − 1, 0)``: the adds of the diagonal's sum."""
    rows, cols = (int(size) for size in args[0].shape)
    return max(min(rows, cols) - 1, 0)


@register("amax", "amin")
def extremum_reduction(args: tuple, kwargs: dict, out: object) -> int:
    """``max(in − out, 0)`` comparisons, as the ``max``/``min`` reduction."""
    inputs, outputs = _reduced(args, out)
    return max(inputs - outputs, 0)


@register("cumprod", "cummax", "cummin")
def scan(args: tuple, kwargs: dict, out: object) -> int:
    """``in − in / width``: each scanned row of ``width`` values costs ``width − 1`` multiplies
    (``cumprod``) or comparisons (``cummax``/``cummin``), as ``cumsum``'s adds."""
    inputs, width = elements(args[0]), dim_size(args[0], arg(args, kwargs, 1, "dim"))
    return inputs - inputs // width if width else 0


@register("_cummax_helper", "_cummin_helper")
def scan_helper(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, values, indices, dim)``: the CPU kernel of ``cummax``/``cummin``, counted as they are:
    ``in − in / width`` comparisons."""
    inputs, width = elements(args[0]), dim_size(args[0], arg(args, kwargs, 3, "dim"))
    return inputs - inputs // width if width else 0


@register("bincount")
def bin_count(args: tuple, kwargs: dict, out: object) -> int:
    """``in``: one weight added per input value (``weights`` given: a floating result); counting
    integer occurrences is integer work and counts 0 by the result rule (B.7)."""
    return elements(args[0])


def _density(kwargs: dict, out: object) -> int:
    counts = first_tensor(out)
    return 2 * elements(counts) if kwargs.get("density", False) and counts is not None else 0


@register("histogram")
def histogram(args: tuple, kwargs: dict, out: object) -> int:
    """``histc``'s convention: one bin increment (or weight add) per input value (finding the bin is
    not counted), and with ``density`` the normalisation: a sum and a divide per bin, ``2·bins``."""
    return elements(args[0]) + _density(kwargs, out)


@register("_histogramdd_from_bin_cts", "_histogramdd_from_bin_tensors")
def histogram_dd(args: tuple, kwargs: dict, out: object) -> int:
    """``(self[..., D], bins, ...)``: :func:`histogram`'s count with one increment per sample (a row
    of ``D`` coordinates)."""
    inputs = args[0]
    rows = inputs.dim() > 1 and int(inputs.shape[-1]) > 0
    samples = elements(inputs) // int(inputs.shape[-1]) if rows else elements(inputs)
    return samples + _density(kwargs, out)


@register("_histogramdd_bin_edges")
def histogram_bin_edges(args: tuple, kwargs: dict, out: object) -> int:
    """``(self[N, D], bins, *, range)``: edges spaced evenly between the bounds are created (0); without
    a ``range`` the bounds are the data's ``min`` and ``max`` per dimension, ``2·(N − 1)·D``."""
    if kwargs.get("range") is not None:
        return 0
    inputs = args[0]
    width = int(inputs.shape[-1]) if inputs.dim() > 1 else 1
    return 2 * max(elements(inputs) // max(width, 1) - 1, 0) * width


def distance_terms(p: float, width: int) -> int:
    """FLOPs of one ``p``-distance between two vectors of ``width``: the difference, then the norm."""
    if width == 0:
        return 0
    if p == 2:
        return 3 * width  # subtract, square, add (width − 1), root
    if p in (1, math.inf):
        return 3 * width - 1  # subtract, abs, add / compare (width − 1)
    raise UnsupportedOperatorFormula("Distance FLOPs cover only p = 1, 2 and infinity.")


@register("_cdist_forward")
def pairwise_distance(args: tuple, kwargs: dict, out: object) -> int:
    """``(x1[..., P, M], x2[..., R, M], p, compute_mode)``: ``out`` pairs, each a ``p``-distance over
    ``M`` (``3M`` for ``p = 2``, ``3M − 1`` for 1 and infinity). The matrix-product path of
    ``compute_mode`` does the same nominal arithmetic in another order."""
    return elements(out) * distance_terms(float(arg(args, kwargs, 2, "p")), int(args[0].shape[-1]))


@register("dist")
def distance(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, other, p=2)``: one ``p``-distance over the broadcast elements."""
    width = math.prod(torch.broadcast_shapes(args[0].shape, args[1].shape))
    return distance_terms(float(arg(args, kwargs, 2, "p", 2)), width)
