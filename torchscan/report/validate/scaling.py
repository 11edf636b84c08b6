"""Check a saved ScalingReport (attention-and-scaling.md 2) before anything reads it; never imports torch.

Every failure is a ``ValueError`` whose message starts with the location
(``fits.flops.seq.by_operator['aten.mm'].residuals[2]``), like the other validators'. Beyond shapes
it checks the report's own arithmetic where it is exact: the points are the grid of ``axes`` in
order, each fit covers the series it names, its status follows the points' statuses, an exact
fit's coefficients equal its rationals, and every residual is the value minus the polynomial at
that size — zero for an exact fit.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

from torchscan.report.scaling_schema import (
    BREAKDOWN_METRICS,
    BUILD_ERROR,
    CONTEXT_KEYS,
    COUNT_METRICS,
    EXACT_METHOD,
    LATENCY_IQR,
    LEAST_SQUARES_METHOD,
    METRIC_UNITS,
    METRICS,
    SCALING_REPORT,
)
from torchscan.report.schema import STATUSES
from torchscan.report.validate.core import (
    check_diagnostics,
    check_metric_result,
    child,
    fail,
    is_count,
    is_number,
    report_root,
    require_list,
    require_object,
)

_PARTS = ("by_operator", "by_module_type")


def _check_context(context: dict[str, Any], where: str) -> list[str]:
    """Context keys and types; returns the requested metrics."""
    for key in CONTEXT_KEYS:
        if key not in context:
            raise fail(child(where, key), "is missing")
    for key in ("torchscan_version", "torch_version", "python_version"):
        if not isinstance(context[key], str):
            raise fail(child(where, key), "must be a string")
    for key in ("device", "model_type"):
        if context[key] is not None and not isinstance(context[key], str):
            raise fail(child(where, key), "must be a string or null")
    if context["workload"] not in ("callable", "module"):
        raise fail(child(where, "workload"), "must be callable or module")
    metrics = context["metrics"]
    if not (isinstance(metrics, list) and metrics and metrics == [m for m in METRICS if m in metrics]):
        raise fail(
            child(where, "metrics"), f"must list some of {', '.join(METRICS)}, once each, in that order"
        )
    return metrics


def _check_axes(axes: dict[str, Any], where: str) -> None:
    if not axes:
        raise fail(where, "must name at least one axis")
    for name, sizes in axes.items():
        location = child(where, name)
        if not name.isidentifier():
            raise fail(location, "an axis name must be an identifier")
        if not isinstance(sizes, list) or len(sizes) < 2:
            raise fail(location, "must list at least two sizes")
        for position, size in enumerate(sizes):
            if not is_count(size) or size == 0:
                raise fail(child(location, position), "must be an int > 0")
            if position and size <= sizes[position - 1]:
                raise fail(child(location, position), "sizes must be strictly increasing")


def _check_point(point: Any, expected: dict[str, int], index: int, metrics: list[str], where: str) -> None:
    if not isinstance(point, dict):
        raise fail(where, "must be a point object")
    if point.get("index") != index or not is_count(point.get("index")):
        raise fail(child(where, "index"), f"must be {index} (points are listed in grid order)")
    if point.get("sizes") != expected:
        raise fail(child(where, "sizes"), f"must be {expected} (the grid of axes, last axis fastest)")
    keys = [*metrics, LATENCY_IQR] if "latency" in metrics else metrics
    for name in [*METRICS, LATENCY_IQR]:
        location = child(where, name)
        if name not in keys:
            if name in point:
                raise fail(location, "is not a requested metric (context.metrics)")
            continue
        check_metric_result(point.get(name), location, additive=True)
        if point[name]["unit"] != METRIC_UNITS.get(name, "seconds"):
            raise fail(child(location, "unit"), f"must be {METRIC_UNITS.get(name, 'seconds')}")
    wanted = [m for m in BREAKDOWN_METRICS if m in metrics]
    for key in _PARTS:
        location = child(where, key)
        if not wanted:
            if key in point:
                raise fail(location, "exists only with flops or operator_bytes")
            continue
        parts = require_object(point, key, where)
        if sorted(parts) != sorted(wanted):
            raise fail(location, f"must have exactly the keys {', '.join(wanted)}")
        for metric in wanted:
            values = require_object(parts, metric, location)
            for name, value in values.items():
                if not is_count(value):
                    raise fail(child(child(location, metric), name), "must be a nonnegative integer")
            if values and point[metric]["status"] == "unavailable":
                raise fail(child(location, metric), "must be empty where the metric is unavailable")
    if "errors" in point:
        errors = require_object(point, "errors", where)
        for name, kind in errors.items():
            if name not in (*metrics, BUILD_ERROR) or not isinstance(kind, str):
                raise fail(child(child(where, "errors"), name), "must map a metric or build to a type name")


def _series(axes: dict[str, list[int]], points: list[dict[str, Any]], axis: str) -> list[int]:
    at = {name: sizes[-1] for name, sizes in axes.items() if name != axis}
    chosen = [p for p in points if all(p["sizes"][name] == size for name, size in at.items())]
    return [p["index"] for p in sorted(chosen, key=lambda p: p["sizes"][axis])]


def _check_coefficients(fit: dict[str, Any], where: str) -> list[Fraction] | None:
    """The fitted polynomial as exact rationals, after checking its fields agree."""
    degree, coefficients = fit.get("degree"), fit.get("coefficients")
    if degree is None or coefficients is None:
        if degree is not None or coefficients is not None or "numerators" in fit or "denominator" in fit:
            raise fail(
                where, "degree, coefficients, numerators and denominator are recorded together or not at all"
            )
        return None
    if not is_count(degree):
        raise fail(child(where, "degree"), "must be a nonnegative integer or null")
    if not isinstance(coefficients, list) or len(coefficients) != degree + 1:
        raise fail(child(where, "coefficients"), f"must list degree + 1 = {degree + 1} numbers")
    for position, value in enumerate(coefficients):
        if not is_number(value):
            raise fail(child(child(where, "coefficients"), position), "must be a finite number")
    if fit["method"] == LEAST_SQUARES_METHOD:
        if "numerators" in fit or "denominator" in fit:
            raise fail(where, "a least-squares fit has no exact numerators or denominator")
        return [Fraction(c) for c in coefficients]
    numerators, denominator = fit.get("numerators"), fit.get("denominator")
    if not is_count(denominator) or denominator == 0:
        raise fail(child(where, "denominator"), "must be an int > 0")
    if not (
        isinstance(numerators, list)
        and len(numerators) == degree + 1
        and all(isinstance(n, int) and not isinstance(n, bool) for n in numerators)
    ):
        raise fail(child(where, "numerators"), f"must list degree + 1 = {degree + 1} integers")
    exact = [Fraction(n, denominator) for n in numerators]
    for position, (value, rational) in enumerate(zip(coefficients, exact, strict=True)):
        plain = rational.numerator if rational.denominator == 1 else float(rational)
        if value != plain or type(value) is not type(plain):
            raise fail(child(child(where, "coefficients"), position), "must equal numerators / denominator")
    if degree and exact[-1] == 0:
        raise fail(child(where, "numerators"), "the leading coefficient of a fit of degree > 0 is not zero")
    return exact


def _check_fit(
    fit: Any,
    where: str,
    method: str,
    sizes: list[int],
    values: list[Any],
    statuses: list[str],
    indices: list[int],
) -> None:
    """One PolynomialFit against the series it describes (``values``: known values, ``None`` if none)."""
    if not isinstance(fit, dict):
        raise fail(where, "must be a fit object")
    if fit.get("method") != method:
        raise fail(child(where, "method"), f"must be {method}")
    if fit.get("points") != indices:
        raise fail(child(where, "points"), f"must be {indices} (the series along this axis)")
    known = [status for status in statuses if status != "unavailable"]
    status = "unavailable" if len(known) < 2 else "partial" if "partial" in known else "complete"
    if fit.get("status") not in STATUSES or fit["status"] != status:
        raise fail(child(where, "status"), f"must be {status} (from the statuses of its points)")
    if fit.get("exponent") is not None and not is_number(fit["exponent"]):
        raise fail(child(where, "exponent"), "must be a finite number or null")
    polynomial = _check_coefficients(fit, where)
    if polynomial is not None and status == "unavailable":
        raise fail(where, "an unavailable fit has no polynomial")
    residuals = fit.get("residuals")
    if not isinstance(residuals, list) or len(residuals) != len(indices):
        raise fail(child(where, "residuals"), "must have one entry per point")
    for position, (size, value, residual) in enumerate(zip(sizes, values, residuals, strict=True)):
        location = child(child(where, "residuals"), position)
        if polynomial is None or value is None:
            if residual is not None:
                raise fail(location, "must be null (no value or no polynomial)")
            continue
        if not is_number(residual):
            raise fail(location, "must be a finite number")
        terms = [c * size**k for k, c in enumerate(polynomial)]
        gap = Fraction(value) - sum(terms, Fraction(0))
        if method == EXACT_METHOD and (gap != 0 or residual != 0):
            raise fail(location, "an exact fit passes through every value: the residual must be 0")
        # float coefficients of a least-squares fit: agree to rounding, relative to the largest term
        scale = max([1.0, abs(float(value)), *(abs(float(term)) for term in terms)])
        if method == LEAST_SQUARES_METHOD and abs(float(gap) - residual) > 1e-9 * scale:
            raise fail(location, "must be the value minus the fitted polynomial at this size")


def _check_axis_fit(fit: Any, report: dict[str, Any], metric: str, axis: str, where: str) -> None:
    axes, points = report["axes"], report["points"]
    indices = _series(axes, points, axis)
    sizes = [points[i]["sizes"][axis] for i in indices]
    statuses = [points[i][metric]["status"] for i in indices]
    values = [points[i][metric]["known_value"] for i in indices]
    method = EXACT_METHOD if metric in COUNT_METRICS else LEAST_SQUARES_METHOD
    _check_fit(fit, where, method, sizes, values, statuses, indices)
    at = {name: values_[-1] for name, values_ in axes.items() if name != axis}
    if fit.get("at") != at:
        raise fail(child(where, "at"), f"must be {at} (the other axes at their largest sizes)")
    for key in _PARTS:
        parts = require_object(fit, key, where)
        names = sorted({n for i in indices for n in points[i].get(key, {}).get(metric, {})})
        if sorted(parts) != names:
            raise fail(child(where, key), "must hold one fit per part named by the points of the series")
        for name in names:
            series = [
                None if v is None else points[i][key][metric].get(name, 0)
                for i, v in zip(indices, values, strict=True)
            ]
            _check_fit(parts[name], child(child(where, key), name), method, sizes, series, statuses, indices)


def validate_scaling_report(report: Any, where: str = "report") -> None:
    """Check a saved ``ScalingReport`` (schema 1) completely; raise ``ValueError`` naming the spot."""
    root = report_root(report, where, "a scaling report", SCALING_REPORT)
    metrics = _check_context(require_object(report, "context", root), child(root, "context"))
    axes = require_object(report, "axes", root)
    _check_axes(axes, child(root, "axes"))
    points = require_list(report, "points", root)
    combos = [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values())]
    if len(points) != len(combos):
        raise fail(child(root, "points"), f"must list the {len(combos)} points of the grid of axes")
    for index, (point, expected) in enumerate(zip(points, combos, strict=True)):
        _check_point(point, expected, index, metrics, child(child(root, "points"), index))
    fits = require_object(report, "fits", root)
    if sorted(fits) != sorted(metrics):
        raise fail(child(root, "fits"), "must have one entry per requested metric")
    for metric in metrics:
        by_axis = require_object(fits, metric, child(root, "fits"))
        if sorted(by_axis) != sorted(axes):
            raise fail(child(child(root, "fits"), metric), "must have one fit per axis")
        for axis in axes:
            location = child(child(child(root, "fits"), metric), axis)
            _check_axis_fit(by_axis[axis], report, metric, axis, location)
    check_diagnostics(require_list(report, "diagnostics", root), child(root, "diagnostics"))
