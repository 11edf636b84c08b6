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
    """``4·in + 3·out``, the kernel's operators: the stabilising maximum (``in − out`` comparisons), its
    guard against infinite maxima (``abs``, ``== inf`` and ``masked_fill`` per output), one subtract and
    one ``exp`` per element, the sum (``in − out`` adds), then one ``log`` and one add of the maximum per
    output. An empty input skips the maximum: ``exp``, sum and ``log`` of zeros, ``out``."""
    inputs, outputs = _reduced(args, out)
    return 4 * inputs + 3 * outputs if inputs else outputs


@register("count_nonzero", rule=involves_floating)
def count_nonzero(args: tuple, kwargs: dict, out: object) -> int:
    """``in``: one comparison with zero per element (the input rule decides: floating comparisons count
    even though the result is an integer); counting them is integer work, 0 (B.7.1), as
    ``(x != 0).sum()`` counts."""
    return elements(args[0])


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
    """The ``density`` normalisation of a histogram of ``B`` bins (``b_d`` per dimension): the sum of
    the counts and one divide per bin, then per dimension the bin widths (``b_d`` subtractions of the
    edges) and one divide per bin: ``2B − 1 + Σ_d (b_d + B)``."""
    counts = first_tensor(out)
    if not kwargs.get("density", False) or counts is None:
        return 0
    bins = elements(counts)
    return max(bins - 1, 0) + bins + sum(int(size) + bins for size in counts.shape)


def _data_bounds(inputs: torch.Tensor) -> int:
    """The ``min`` and ``max`` of each of the ``D`` coordinates over ``N`` samples (``aminmax``), where
    the bins are spread over the data's own range: ``2·(N − 1)·D``; 1-D data is one coordinate."""
    width = int(inputs.shape[-1]) if inputs.dim() > 1 else 1
    return 2 * max(elements(inputs) // max(width, 1) - 1, 0) * width


@register("histogram")
def histogram(args: tuple, kwargs: dict, out: object) -> int:
    """``histc``'s convention: one bin increment (or weight add) per input value (finding the bin is
    not counted); ``bins`` given as a count without a ``range`` spreads them over the data's bounds
    (:func:`_data_bounds`); with ``density`` the normalisation (:func:`_density`, ``4·bins − 1``)."""
    bounds = _data_bounds(args[0]) if isinstance(args[1], int) and kwargs.get("range") is None else 0
    return elements(args[0]) + bounds + _density(kwargs, out)


@register("_histogramdd_from_bin_cts", "_histogramdd_from_bin_tensors")
def histogram_dd(args: tuple, kwargs: dict, out: object) -> int:
    """``(self[..., D], bins, ...)``: :func:`histogram`'s count with one increment per sample (a row
    of ``D`` coordinates); bin counts without a ``range`` find the data's bounds again inside the
    kernel (:func:`_data_bounds`)."""
    inputs = args[0]
    rows = inputs.dim() > 1 and int(inputs.shape[-1]) > 0
    samples = elements(inputs) // int(inputs.shape[-1]) if rows else elements(inputs)
    counted_bins = all(isinstance(item, int) for item in args[1])
    bounds = _data_bounds(inputs) if counted_bins and kwargs.get("range") is None else 0
    return samples + bounds + _density(kwargs, out)


@register("_histogramdd_bin_edges")
def histogram_bin_edges(args: tuple, kwargs: dict, out: object) -> int:
    """``(self[N, D], bins, *, range)``: edges spaced evenly between the bounds are created (0); without
    a ``range`` the bounds are the data's ``min`` and ``max`` per dimension, ``2·(N − 1)·D``."""
    return 0 if kwargs.get("range") is not None else _data_bounds(args[0])


def distance_terms(p: float, width: int) -> int:
    """FLOPs of one ``p``-distance between two vectors of ``width``: the difference, then the norm."""
    if width == 0:
        return 0
    if p == 2:
        return 3 * width  # subtract, square, add (width − 1), root
    if p in (1, math.inf):
        return 3 * width - 1  # subtract, abs, add / compare (width − 1)
    raise UnsupportedOperatorFormula("Distance FLOPs cover only p = 1, 2 and infinity.")


def euclidean_expansion_flops(batch: int, rows: int, cols: int, width: int) -> int:
    """FLOPs of ``_euclidean_dist`` as PyTorch computes it, ``‖x‖² + ‖y‖² − 2x·y`` through one product:
    per batch the squared norms of the ``rows`` and ``cols`` vectors (``2M − 1`` each), ``x·(−2)``
    (``rows·M``), the product of ``[−2x, ‖x‖², 1]`` with ``[y, 1, ‖y‖²]ᵀ`` (``2·rows·cols·(M + 2)``,
    the matrix-product convention) and the clamp at 0 and square root of every pair (2)."""
    norms = (rows + cols) * (width + max(width - 1, 0))
    pairs = rows * cols
    return batch * (norms + rows * width + 2 * pairs * (width + 2) + 2 * pairs)


def uses_matrix_product(p: float, rows: int, cols: int, mode: object) -> bool:
    """Whether ``cdist`` takes its matrix-product path (``p = 2`` with ``compute_mode`` 1, or the default
    with more than 25 rows on either side), as PyTorch's kernel decides."""
    return p == 2 and (mode == 1 or (mode in (None, 0) and (rows > 25 or cols > 25)))


@register("_cdist_forward")
def pairwise_distance(args: tuple, kwargs: dict, out: object) -> int:
    """``(x1[..., P, M], x2[..., R, M], p, compute_mode)``: ``out`` pairs, each a ``p``-distance over
    ``M`` (``3M`` for ``p = 2``, ``3M − 1`` for 1 and infinity), computed directly; on the kernel's
    matrix-product path (:func:`uses_matrix_product`) :func:`euclidean_expansion_flops` instead."""
    p, width = float(arg(args, kwargs, 2, "p")), int(args[0].shape[-1])
    rows, cols = int(args[0].shape[-2]), int(args[1].shape[-2])
    pairs = elements(out)
    if pairs and uses_matrix_product(p, rows, cols, arg(args, kwargs, 3, "compute_mode")):
        return euclidean_expansion_flops(pairs // (rows * cols), rows, cols, width)
    return pairs * distance_terms(p, width)


@register("dist")
def distance(args: tuple, kwargs: dict, out: object) -> int:
    """``(self, other, p=2)``: one ``p``-distance over the broadcast elements."""
    width = math.prod(torch.broadcast_shapes(args[0].shape, args[1].shape))
    return distance_terms(float(arg(args, kwargs, 2, "p", 2)), width)
