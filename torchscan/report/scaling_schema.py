"""Wire types of the ScalingReport (attention-and-scaling.md 2), declared once; never imports torch.

A ScalingReport is what ``measure_scaling`` returns: one workload measured at several sizes along
one axis or a grid of axes, the measured points, and per metric and axis a fit of the values
against the size, in total and (for operator FLOPs and operator bytes) per operator and per module
type. Counts get an exact polynomial in rational arithmetic where they are polynomial in the size;
latency gets a least-squares polynomial, labelled as a fit. Views and the validator read it
without torch.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from torchscan.report.schema import Diagnostic, MetricResult, Number, Status

SCALING_REPORT = "scaling"
"""``report_type`` of a ScalingReport."""
METRICS = ("flops", "operator_bytes", "memory_peak", "latency")
"""Every metric ``measure_scaling`` can measure, in report order."""
METRIC_UNITS = {"flops": "FLOPs", "operator_bytes": "bytes", "memory_peak": "bytes", "latency": "seconds"}
COUNT_METRICS = ("flops", "operator_bytes", "memory_peak")
"""Metrics whose values are deterministic counts: fitted exactly (:data:`EXACT_METHOD`)."""
BREAKDOWN_METRICS = ("flops", "operator_bytes")
"""Metrics with additive parts: per-point maps and fits ``by_operator`` and ``by_module_type``."""
EXACT_METHOD = "exact_rational_interpolation"
"""Fit method of counts: the unique lowest-degree polynomial through every point, in exact rationals."""
LEAST_SQUARES_METHOD = "least_squares"
"""Fit method of latency: least squares in exact rationals over noisy medians; never exact."""
FIT_METHODS = (EXACT_METHOD, LEAST_SQUARES_METHOD)
LATENCY_IQR = "latency_iqr"
"""The point key holding the spread of the latency blocks beside ``latency``."""
BUILD_ERROR = "build"
"""The ``errors`` key of a point whose ``build(size)`` raised (no metric could be measured)."""
CONTEXT_KEYS = (
    "torchscan_version",
    "torch_version",
    "python_version",
    "device",
    "metrics",
    "workload",
    "model_type",
)

WorkloadKind = Literal["callable", "module"]


class ScalingContext(TypedDict):
    """Value-free description of the sweep (no tensor values, no paths, no reprs).

    ``device`` is the ``device=`` argument as a device name (``None`` when not given); ``workload``
    says whether ``build`` returned zero-argument callables or ``(model, args, kwargs)`` tuples;
    ``model_type`` is the model's class name for the tuple form at the first size, else ``None``.
    """

    torchscan_version: str
    torch_version: str
    python_version: str
    device: str | None
    metrics: list[str]
    workload: WorkloadKind
    model_type: str | None


class ScalingPoint(TypedDict):
    """One measured size: its position, the size on every axis, and one result per requested metric.

    ``by_operator`` and ``by_module_type`` map each breakdown metric that was requested to the known
    per-operator (``aten.mm``) or per-module-type (class name, inclusive of its children) values of
    this point; they are empty maps for a metric that could not be measured here. ``latency_iqr``
    exists with ``latency``. ``errors`` names, per metric (or ``"build"``), the exception type that
    left it unavailable; the diagnostics carry the sanitized messages.
    """

    index: int
    sizes: dict[str, int]
    flops: NotRequired[MetricResult]
    operator_bytes: NotRequired[MetricResult]
    memory_peak: NotRequired[MetricResult]
    latency: NotRequired[MetricResult]
    latency_iqr: NotRequired[MetricResult]
    by_operator: NotRequired[dict[str, dict[str, int]]]
    by_module_type: NotRequired[dict[str, dict[str, int]]]
    errors: NotRequired[dict[str, str]]


class PolynomialFit(TypedDict):
    """How one series of values grows along one axis.

    ``points`` are the indices (into ``ScalingReport.points``) of the series, in increasing size;
    ``residuals`` has one entry per point: ``value - fit(size)``, ``None`` where the point has no
    value or no polynomial was fitted.

    ``status``: ``complete`` when every value used is complete; ``partial`` when some are lower
    bounds (the fit then describes how the *counted part* grows, not the full cost);
    ``unavailable`` when fewer than two values exist.

    ``method`` :data:`EXACT_METHOD`: ``degree``, ``coefficients`` (lowest order first),
    ``numerators`` and ``denominator`` (the exact rationals: ``coefficients[i] ==
    numerators[i] / denominator``) give the lowest-degree polynomial through every value, recorded
    only when at least one value beyond ``degree + 1`` confirms it; otherwise all four are absent
    or ``None``. ``method`` :data:`LEAST_SQUARES_METHOD`: ``coefficients`` are floats minimising the
    squared residuals; a fit, never exact. ``exponent`` is the log-log slope between the two largest
    sizes with positive values (``None`` when there are none).
    """

    status: Status
    method: str
    degree: int | None
    coefficients: list[Number] | None
    numerators: NotRequired[list[int]]
    denominator: NotRequired[int]
    residuals: list[Number | None]
    exponent: float | None
    points: list[int]


class AxisFit(PolynomialFit):
    """The fit of one metric along one axis, in total and per part.

    ``at`` holds the other axes' sizes of the series (each at its largest size; empty for one axis).
    ``by_operator`` and ``by_module_type`` hold one fit per operator and per module type for the
    breakdown metrics (operator FLOPs, operator bytes); they are empty for ``memory_peak`` and
    ``latency``, which are not sums of parts. Module types nest: a type's values include the work
    of its children, so fits of different types must never be added.
    """

    at: dict[str, int]
    by_operator: dict[str, PolynomialFit]
    by_module_type: dict[str, PolynomialFit]


class ScalingReport(TypedDict):
    """Result of ``measure_scaling`` (attention-and-scaling.md 2, ``schema_version`` 1).

    ``axes`` maps each axis name to its sizes (strictly increasing ints > 0); ``points`` lists every
    combination (the last axis varies fastest); ``fits[metric][axis]`` is an :class:`AxisFit`.
    """

    schema_version: int
    report_type: Literal["scaling"]
    context: ScalingContext
    axes: dict[str, list[int]]
    points: list[ScalingPoint]
    fits: dict[str, dict[str, AxisFit]]
    diagnostics: list[Diagnostic]
