"""The pure half of ``measure_scaling``: argument checks, the grid, and measured points -> fits.

Nothing here runs a model or imports torch: :func:`check_sizes` and :func:`check_metrics` refuse bad
arguments (the command line calls them before it loads a model), :func:`grid` lists the points, and
:func:`build_fits` turns measured points into ``fits`` and their diagnostics
(attention-and-scaling.md 2).
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.measure.scaling_fit import fit_series
from torchscan.report.diagnostics import diagnostic
from torchscan.report.names import has_control
from torchscan.report.scaling_schema import (
    BREAKDOWN_METRICS,
    COUNT_METRICS,
    METRICS,
    AxisFit,
    PolynomialFit,
)
from torchscan.report.schema import Diagnostic
from torchscan.runtime.arguments import ArgumentTypeError, check_names

MIN_SIZES = 2  # an exponent needs two sizes; an exact polynomial of degree d needs d + 2
MAX_AXIS_NAME = 60


def _axis_name(name: object) -> str:
    if not isinstance(name, str):
        raise ArgumentTypeError(f"sizes keys must be axis names (str), got {type(name).__name__}")
    if not name.isidentifier() or len(name) > MAX_AXIS_NAME or has_control(name):
        raise ValueError(
            f"sizes axis name {name[:MAX_AXIS_NAME]!r} must be a Python identifier of at most "
            f"{MAX_AXIS_NAME} characters (a grid passes the sizes to build as keyword arguments)"
        )
    return name


def check_sizes(sizes: object) -> dict[str, list[int]]:
    """``sizes`` as ``{axis: [n, ...]}``, or ``TypeError``/``ValueError`` naming the axis and position.

    One axis or several (a grid); each axis lists at least two ints > 0 (never bools), strictly
    increasing.
    """
    if not isinstance(sizes, Mapping):
        raise ArgumentTypeError(
            f"sizes must be a mapping of axis name to sizes, e.g. {{'seq': [64, 128, 256]}}, "
            f"got {type(sizes).__name__}"
        )
    if not sizes:
        raise ValueError("sizes is empty: give at least one axis, e.g. {'seq': [64, 128, 256]}")
    axes: dict[str, list[int]] = {}
    for key, values in sizes.items():
        name = _axis_name(key)
        if isinstance(values, str | bytes) or not isinstance(values, Sequence):
            raise ArgumentTypeError(f"sizes[{name!r}] must be a list of ints, got {type(values).__name__}")
        if len(values) < MIN_SIZES:
            raise ValueError(
                f"sizes[{name!r}] has {len(values)} size(s); give at least {MIN_SIZES} (an exponent "
                "needs two, an exact polynomial of degree d needs d + 2)"
            )
        checked: list[int] = []
        for position, value in enumerate(values):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                kind = type(value).__name__
                raise ArgumentTypeError(
                    f"sizes[{name!r}][{position}] must be an int > 0, got {kind} {value!r:.40}"
                )
            if value <= 0:
                raise ValueError(f"sizes[{name!r}][{position}] must be an int > 0, got {int(value)}")
            if checked and value <= checked[-1]:
                raise ValueError(
                    f"sizes[{name!r}] must be strictly increasing: {int(value)} at position {position} "
                    f"follows {checked[-1]}"
                )
            checked.append(int(value))
        axes[name] = checked
    return axes


def check_metrics(metrics: object) -> list[str]:
    """The requested metrics in report order; ``TypeError``/``ValueError`` for anything else."""
    names = check_names("metrics", metrics, METRICS)
    if not names:
        raise ValueError(f"metrics is empty; allowed: {', '.join(METRICS)}")
    if len(set(names)) != len(names):
        raise ValueError("metrics names a metric twice")
    return [name for name in METRICS if name in names]


def grid(axes: Mapping[str, Sequence[int]]) -> list[dict[str, int]]:
    """Every combination of sizes, the last axis varying fastest."""
    names = list(axes)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*axes.values())]


def size_text(sizes: Mapping[str, int]) -> str:
    """``seq=512`` or ``seq=512, batch=4``: how messages name a point."""
    return ", ".join(f"{name}={value}" for name, value in sizes.items())


def series(axes: Mapping[str, Sequence[int]], points: Sequence[Mapping[str, Any]], axis: str) -> list[int]:
    """Indices of the points along ``axis`` with every other axis at its largest size, by size."""
    at = {name: values[-1] for name, values in axes.items() if name != axis}
    chosen = [p for p in points if all(p["sizes"][name] == value for name, value in at.items())]
    return [p["index"] for p in sorted(chosen, key=lambda p: p["sizes"][axis])]


def _known(point: Mapping[str, Any], metric: str) -> Any:
    result = point.get(metric)
    return None if not isinstance(result, dict) else result["known_value"]


def _parts(points: Sequence[Mapping[str, Any]], metric: str, key: str) -> dict[str, list[int | None]]:
    """Per part (operator or module type): its value at each point, 0 where a measured point lacks it."""
    names = sorted({name for p in points for name in p.get(key, {}).get(metric, {})})
    return {
        name: [
            None if _known(p, metric) is None else p.get(key, {}).get(metric, {}).get(name, 0) for p in points
        ]
        for name in names
    }


def _axis_fit(
    axes: Mapping[str, Sequence[int]],
    points: Sequence[Mapping[str, Any]],
    metric: str,
    axis: str,
    degree_hint: int | None,
) -> AxisFit:
    chosen = [points[i] for i in series(axes, points, axis)]
    xs = [p["sizes"][axis] for p in chosen]
    indices = [p["index"] for p in chosen]
    partial = any(isinstance(p.get(metric), dict) and p[metric]["status"] == "partial" for p in chosen)
    squares = None if metric in COUNT_METRICS else (1 if degree_hint is None else degree_hint)

    def fit(ys: list[Any]) -> PolynomialFit:
        return fit_series(xs, ys, indices, partial=partial, least_squares_degree=squares)

    total = fit([_known(p, metric) for p in chosen])
    breakdown: dict[str, dict[str, PolynomialFit]] = {"by_operator": {}, "by_module_type": {}}
    if metric in BREAKDOWN_METRICS:
        for key in breakdown:
            breakdown[key] = {name: fit(ys) for name, ys in _parts(chosen, metric, key).items()}
    at = {name: values[-1] for name, values in axes.items() if name != axis}
    return {**total, "at": at, **breakdown}  # type: ignore[typeddict-item]


def _fit_notes(fit: AxisFit, metric: str, axis: str, points: Sequence[Mapping[str, Any]]) -> list[Diagnostic]:
    where = f"{metric} along {axis}"
    notes: list[Diagnostic] = []
    missing = [points[i] for i in fit["points"] if _known(points[i], metric) is None]
    used = len(fit["points"]) - len(missing)
    if missing:
        named = "; ".join(size_text(p["sizes"]) for p in missing)
        notes.append(
            diagnostic(
                "scaling_fit_fewer_points",
                f"{where} uses {used} of {len(fit['points'])} points: no value at {named}",
                metric=metric,
            )
        )
    if fit["status"] == "unavailable":
        notes.append(
            diagnostic(
                "scaling_fit_unavailable",
                f"{where}: {used} value(s); a fit and an exponent need at least two",
                metric=metric,
            )
        )
        return notes
    if fit["status"] == "partial":
        notes.append(
            diagnostic(
                "scaling_fit_partial",
                f"{where} is fitted to lower bounds (partial points): it describes how the counted part "
                "grows, and the uncounted work may grow differently",
                metric=metric,
            )
        )
    if fit["degree"] is None:
        notes.append(
            diagnostic(
                "scaling_not_polynomial",
                f"{where}: the {used} values fit no polynomial of degree {used - 2} or lower, so none is "
                f"recorded (a polynomial of degree {used - 1} passes through any {used} points and would "
                "confirm nothing); measure more sizes, or read the exponent",
                metric=metric,
            )
        )
    return notes


def build_fits(
    axes: Mapping[str, Sequence[int]], points: Sequence[Mapping[str, Any]], metrics: Sequence[str]
) -> tuple[dict[str, dict[str, AxisFit]], list[Diagnostic]]:
    """``fits[metric][axis]`` and the diagnostics that explain them (pure; the points are measured).

    Latency is fitted by least squares with the degree of the exact operator-FLOPs fit along the
    same axis when there is one (the work the time is spent on), else degree 1, never above the
    number of values less one.
    """
    fits: dict[str, dict[str, AxisFit]] = {}
    notes: list[Diagnostic] = []
    for metric in metrics:
        fits[metric] = {}
        for axis in axes:
            hint = None
            if metric == "latency" and "flops" in fits:
                hint = fits["flops"][axis]["degree"]
            fit = _axis_fit(axes, points, metric, axis, hint)
            fits[metric][axis] = fit
            notes.extend(_fit_notes(fit, metric, axis, points))
    return fits, notes
