"""Every wire type of TorchScan, declared once.

Reports are plain JSON trees (``json.dumps`` works on them directly). This module declares their
shapes as ``TypedDict``s, the schema version, and :func:`metric_result`, the single constructor of
every :class:`MetricResult`. It must never import torch: views and validators depend on it.
"""

from __future__ import annotations

import math
from typing import Any, Literal, NotRequired, TypedDict

SCHEMA_VERSION = 1

Status = Literal["complete", "partial", "unavailable"]
Severity = Literal["warning", "error"]
Number = int | float

STATUSES: tuple[Status, ...] = ("complete", "partial", "unavailable")
METRIC_RESULT_KEYS = ("status", "value", "known_value", "unit", "scope", "method")

# Labels shared by several producers; spelled once so they cannot drift apart.
MODULE_FORMULA_METHOD = "torchscan_module_formula"
OPERATOR_METHOD = "torch.utils.flop_counter.FlopCounterMode"
COUNTING_CONVENTION = "torchscan_flops_v1"
NOT_REQUESTED = "not_requested"
NOT_APPLICABLE = "not_applicable"
COMPUTE_FIELDS = ("module_flops", "macs", "dmas")
SPATIAL_FIELDS = ("receptive_field", "effective_stride", "effective_padding")
ESTIMATE_FIELDS = COMPUTE_FIELDS + SPATIAL_FIELDS
FIELD_UNITS = {
    "module_flops": "FLOPs",
    "macs": "MACs",
    "dmas": "DMAs",
    "receptive_field": "elements",
    "effective_stride": "elements",
    "effective_padding": "elements",
}


class MetricResult(TypedDict):
    """One measured number with its status; build it only with :func:`metric_result`.

    ``complete``: ``value == known_value``. ``partial``: ``value`` is ``None`` and ``known_value``
    is a lower bound only (never extrapolated). ``unavailable``: nothing was measured.
    """

    status: Status
    value: Number | None
    known_value: Number | None
    unit: str
    scope: str
    method: str


class Diagnostic(TypedDict):
    """Why a result is incomplete: a stable ``code`` for programs, a ``message`` for people."""

    code: str
    severity: Severity
    metric: str
    message: str
    path: NotRequired[str]
    operator: NotRequired[str]


def _check_number(name: str, number: object) -> Number:
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise TypeError(f"MetricResult {name} must be an int or float, got {type(number).__name__}")
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"MetricResult {name} must be finite, got {number!r}")
    if number < 0:
        raise ValueError(f"MetricResult {name} must be >= 0, got {number!r}")
    return number


def metric_result(
    status: Status,
    value: Number | None = None,
    *,
    unit: str,
    scope: str,
    method: str,
) -> MetricResult:
    """Build a :class:`MetricResult`, enforcing the status invariants.

    ``value`` is the complete value for ``complete``, the known lower bound for ``partial``, and
    must be ``None`` for ``unavailable``. A partial result's ``value`` key is always ``None``: its
    number lives in ``known_value`` and is never a coverage estimate.
    """
    for label, text in (("unit", unit), ("scope", scope), ("method", method)):
        if not isinstance(text, str) or not text:
            raise ValueError(f"MetricResult {label} must be a non-empty string")
    if status == "complete":
        number = _check_number("value", value)
        return {
            "status": "complete",
            "value": number,
            "known_value": number,
            "unit": unit,
            "scope": scope,
            "method": method,
        }
    if status == "partial":
        known = _check_number("known_value", value)
        return {
            "status": "partial",
            "value": None,
            "known_value": known,
            "unit": unit,
            "scope": scope,
            "method": method,
        }
    if status == "unavailable":
        if value is not None:
            raise ValueError("an unavailable MetricResult carries no value")
        return {
            "status": "unavailable",
            "value": None,
            "known_value": None,
            "unit": unit,
            "scope": scope,
            "method": method,
        }
    raise ValueError(f"unknown MetricResult status {status!r}")


# --- value metadata (analysis.md 5.4) -------------------------------------------------------

# Metadata is a recursive tree of small dicts keyed by ``kind``; its variants are documented in
# analysis.md 5.4. A single open TypedDict would misstate the shape, so it is an alias.
ValueMeta = dict[str, Any]


class CallIO(TypedDict):
    """Metadata of one call's arguments."""

    args: list[ValueMeta]
    kwargs: dict[str, ValueMeta]


class InputsMeta(TypedDict):
    """How the analysed forward call got its inputs, and their metadata."""

    source: Literal["generated", "provided"]
    args: list[ValueMeta]
    kwargs: dict[str, ValueMeta]


# --- operator FLOPs (formulas.md B.3) -------------------------------------------------------


class FlopContext(TypedDict):
    torch_version: str
    method: str
    counting_convention: str


class IgnoredOperator(TypedDict):
    calls: int
    reason: str


class FlopReport(TypedDict):
    """Operator FLOPs of one workload call (``measure_flops`` or the same forward of an analysis)."""

    schema_version: int
    context: FlopContext
    total: MetricResult
    by_module: dict[str, int]
    by_operator: dict[str, int]
    ignored_operators: dict[str, IgnoredOperator]
    diagnostics: list[Diagnostic]


# --- analysis report (analysis.md 5) --------------------------------------------------------


class AnalysisContext(TypedDict):
    torchscan_version: str
    torch_version: str
    python_version: str
    model_type: str
    execution_mode: str
    training_before: bool
    devices: list[str]
    dtypes: list[str]
    analysis_mode: NotRequired[Literal["full", "structure"]]


class ParameterStats(TypedDict):
    trainable: int
    frozen: int
    bytes: int
    shared: bool


class BufferStats(TypedDict):
    elements: int
    bytes: int
    shared: bool


class CallRef(TypedDict):
    path: str
    call_index: int


class LayerReport(TypedDict):
    """One module call, identified by ``(path, call_index)``."""

    path: str
    call_index: int
    name: str
    depth: int
    type: str
    input: CallIO
    output: ValueMeta
    parameters: ParameterStats
    buffers: BufferStats
    metrics: dict[str, MetricResult]
    metric_ownership: NotRequired[dict[str, Literal["module_call", "subtree"]]]
    metric_owners: NotRequired[dict[str, CallRef]]
    token_dependencies: NotRequired[dict[str, Any]]


class AnalysisReport(TypedDict):
    """Result of ``crawl_module``/``summary``: one observed forward call."""

    schema_version: int
    context: AnalysisContext
    inputs: InputsMeta
    layers: list[LayerReport]
    totals: dict[str, MetricResult]
    operator_flops: FlopReport
    diagnostics: list[Diagnostic]


class MetricDiff(TypedDict):
    """Difference of one metric; ``delta`` only for complete, same-label sides."""

    status: Status
    delta: Number | None
    before: MetricResult | None
    after: MetricResult | None


class LayerEntry(TypedDict):
    path: str
    call_index: int
    metrics: dict[str, MetricResult]


class LayerChange(TypedDict):
    path: str
    call_index: int
    metrics: dict[str, MetricDiff]
    token_dependencies: NotRequired[dict[str, Any]]


class LayerDiffs(TypedDict):
    added: list[LayerEntry]
    removed: list[LayerEntry]
    changed: list[LayerChange]


class ReportDiff(TypedDict):
    """Result of ``compare_reports``."""

    schema_version: int
    totals: dict[str, MetricDiff]
    layers: LayerDiffs


# --- workloads (workloads.md) ---------------------------------------------------------------


class ProfileRow(TypedDict):
    operator: str
    calls: int
    input_shapes: list[Any]
    cpu_self_seconds: float
    device_self_seconds: float | None
    cpu_net_bytes: int


class ProfileReport(TypedDict):
    """Hot operators of one instrumented call; diagnostic evidence, never timing."""

    schema_version: int
    context: dict[str, Any]
    operators: list[ProfileRow]
    diagnostics: list[Diagnostic]


class BenchmarkMeasurement(TypedDict):
    number_per_run: int
    raw_times_seconds: list[float]
    measured_calls: int


class BenchmarkReport(TypedDict):
    """Warmed block-average latency and throughput of one workload (workloads.md 5.4)."""

    schema_version: int
    context: dict[str, Any]
    inputs: ValueMeta
    totals: dict[str, MetricResult]
    measurement: BenchmarkMeasurement | dict[str, Any]
    profile: NotRequired[ProfileReport]
    operator_flops: NotRequired[FlopReport]
    memory: NotRequired[dict[str, Any]]
    diagnostics: NotRequired[list[Diagnostic]]


class ContextChange(TypedDict):
    before: Any
    after: Any


class BenchmarkComparison(TypedDict):
    """Checked before/after comparison of two benchmark reports (workloads.md 6)."""

    schema_version: int
    report_type: Literal["benchmark_comparison"]
    output_check: Literal["passed", "failed"]
    totals: dict[str, MetricDiff]
    latency_change: str
    context_changes: dict[str, ContextChange]
    before: BenchmarkReport
    after: BenchmarkReport
