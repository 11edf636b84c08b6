"""Every wire type of TorchScan, declared once.

Reports are plain JSON trees (``json.dumps`` works on them directly). This module declares their
shapes as ``TypedDict``s, the schema version, and :func:`metric_result`, the single constructor of
every :class:`MetricResult`. It must never import torch: views and validators depend on it.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Literal, NotRequired, TypedDict

SCHEMA_VERSION = 1

Status = Literal["complete", "partial", "unavailable"]
Severity = Literal["warning", "error"]
Number = int | float

STATUSES: tuple[Status, ...] = ("complete", "partial", "unavailable")
METRIC_RESULT_KEYS = ("status", "value", "known_value", "unit", "scope", "method")
# The largest magnitude a report number may have: every number must survive ``float()`` (views,
# JSON consumers and deltas convert), and an int beyond this one would raise OverflowError there.
MAX_NUMBER = int(sys.float_info.max)
_UNSET: Any = object()  # tells "known_value not given" apart from an explicit None

# Labels shared by several producers; spelled once so they cannot drift apart.
MODULE_FORMULA_METHOD = "torchscan_module_formula"
OPERATOR_METHOD = "torch.utils.flop_counter.FlopCounterMode"
COUNTING_CONVENTION = "torchscan_flops_v1"
NOT_REQUESTED = "not_requested"
NOT_APPLICABLE = "not_applicable"
COMMUNICATION_METHOD = "torchscan_collective_bytes"
MERGED_REPORT = "merged"
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
    # Full dotted class path of the module concerned (``transformers.pytorch_utils.Conv1D``), so a
    # person can write the ``custom_modules=`` key that resolves it; sanitized like caller text.
    class_path: NotRequired[str]


def in_float_range(number: Number) -> bool:
    """True when ``number`` is finite and ``float(number)`` cannot overflow (no bool check)."""
    if isinstance(number, float):
        return math.isfinite(number)
    return -MAX_NUMBER <= number <= MAX_NUMBER


def _check_number(name: str, number: object, signed: bool = False) -> Number:
    if type(number) is int and (0 <= number <= MAX_NUMBER or (signed and -MAX_NUMBER <= number <= 0)):
        return number  # the common case, checked cheaply
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise TypeError(f"MetricResult {name} must be an int or float, got {type(number).__name__}")
    if not in_float_range(number):
        shown = f"{number!r}" if isinstance(number, float) else "an int beyond the float range"
        raise ValueError(f"MetricResult {name} must be finite, got {shown}")
    if number < 0 and not signed:
        raise ValueError(f"MetricResult {name} must be >= 0, got {number!r}")
    return number


def metric_result(
    status: Status,
    value: Number | None = None,
    *,
    unit: str,
    scope: str,
    method: str,
    signed: bool = False,
    known_value: Number | None = _UNSET,
) -> MetricResult:
    """Build a :class:`MetricResult`, enforcing the status invariants.

    ``value`` is the complete value for ``complete``, the known lower bound for ``partial``, and
    must be ``None`` for ``unavailable``. A partial result's ``value`` key is always ``None``: its
    number lives in ``known_value`` and is never a coverage estimate.

    ``known_value=`` may spell the lower bound explicitly, as the stored result does:
    ``metric_result("partial", known_value=7, ...)`` (``value`` then stays ``None``). A complete
    result accepts it only equal to ``value``; an unavailable one rejects any number.

    Numbers must be finite and ``>= 0``, except with ``signed=True``, reserved for the spatial
    fields (receptive field, effective stride/padding), whose documented conventions are signed:
    a transposed convolution's field is ``-k`` and adaptive pooling's padding can be negative.
    """
    if not (type(unit) is str and unit and type(scope) is str and scope and type(method) is str and method):
        for label, text in (("unit", unit), ("scope", scope), ("method", method)):
            if not isinstance(text, str) or not text:
                raise ValueError(f"MetricResult {label} must be a non-empty string")
    if known_value is not _UNSET:
        value = _merge_known_value(status, value, known_value)
    if status == "complete":
        number = _check_number("value", value, signed)
        return {
            "status": "complete",
            "value": number,
            "known_value": number,
            "unit": unit,
            "scope": scope,
            "method": method,
        }
    if status == "partial":
        known = _check_number("known_value", value, signed)
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


def _merge_known_value(status: object, value: Number | None, known_value: Number | None) -> Number | None:
    """The single number ``metric_result`` stores, once ``known_value=`` agrees with ``value``."""
    if status == "partial":
        if value is not None:
            raise ValueError("a partial MetricResult has value None; pass its lower bound as known_value")
        return known_value
    if status == "complete":
        if isinstance(known_value, bool) or known_value is None or known_value != value:
            raise ValueError("a complete MetricResult needs known_value == value (or known_value omitted)")
        return value
    if status == "unavailable" and known_value is not None:
        raise ValueError("an unavailable MetricResult carries no known_value")
    return value


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


class MeshDimension(TypedDict):
    name: str
    size: int


class DistributedContext(TypedDict):
    """``context.distributed`` (distributed.md 2): present only when a process group is initialized."""

    backend: str
    world_size: int
    rank: int
    mesh: list[MeshDimension] | None


class FlopContext(TypedDict):
    torch_version: str
    method: str
    counting_convention: str
    distributed: NotRequired[DistributedContext]


class CollectiveCalls(TypedDict):
    calls: int
    bytes: int


class Communication(TypedDict):
    """Bytes each rank handed to collectives (distributed.md 3): not wire traffic."""

    total_bytes: MetricResult
    by_operator: dict[str, CollectiveCalls]


class IgnoredOperator(TypedDict):
    calls: int
    reason: str


class FlopPhases(TypedDict):
    """``by_phase`` (training-and-hardware.md 1): unit FLOPs, scope ``workload_phase``, the total's
    method; the four known values sum exactly to the total's."""

    forward: MetricResult
    backward: MetricResult
    optimizer: MetricResult
    recompute: MetricResult


class FlopReport(TypedDict):
    """Operator FLOPs of one workload call (``measure_flops`` or the same forward of an analysis)."""

    schema_version: int
    context: FlopContext
    total: MetricResult
    by_phase: FlopPhases
    by_module: dict[str, int]
    by_operator: dict[str, int]
    ignored_operators: dict[str, IgnoredOperator]
    diagnostics: list[Diagnostic]
    # distributed.md 2-3: logical_total only when a DTensor operator was seen; communication when a
    # collective ran or a process group is initialized
    logical_total: NotRequired[MetricResult]
    communication: NotRequired[Communication]


# --- hardware facts the caller states (training-and-hardware.md 3) ---------------------------


class HardwareFacts(TypedDict):
    """``context.hardware``: a copy of the caller's stated facts; TorchScan has no device table."""

    name: str
    peak_flops_per_second: Number
    memory_bandwidth_bytes_per_second: NotRequired[Number]


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
    hardware: NotRequired[HardwareFacts]
    distributed: NotRequired[DistributedContext]


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
    diagnostics: NotRequired[list[Diagnostic]]  # only ``delta_out_of_range`` (report/diff.py)


class LayerEntry(TypedDict):
    path: str
    call_index: int
    metrics: dict[str, MetricResult]
    token_dependencies: NotRequired[dict[str, Any]]


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

LatencyChange = Literal["faster", "slower", "within_variability", "unavailable"]
ProfileStatus = Literal["not_requested", "unavailable", "partial", "complete"]


class ProfileRow(TypedDict):
    """One grouped profiler event; self times overlap and are never summed into a latency."""

    operator: str
    calls: int
    input_shapes: list[Any]
    cpu_self_seconds: float
    device_self_seconds: float | None
    cpu_net_bytes: int


class ProfileContext(TypedDict):
    torch_version: str
    device: str
    method: str
    operator_groups: int
    limit: int
    device_time_supported: bool


class ProfileReport(TypedDict):
    """Hot operators of one instrumented call; diagnostic evidence, never timing."""

    schema_version: int
    context: ProfileContext
    operators: list[ProfileRow]
    diagnostics: list[Diagnostic]


class BenchmarkContext(TypedDict):
    """The 17 keys ``measure_latency`` records, plus ``profile_status`` (and ``hardware`` when stated)
    from ``measure_workload``."""

    torchscan_version: str
    torch_version: str
    python_version: str
    platform: str
    machine: str
    processor: str
    device: str
    device_name: str
    num_threads: int
    num_interop_threads: int
    cuda_version: str | None
    inputs_source: Literal["caller_supplied", "not_provided"]
    work_units: Number
    work_unit: str
    warmup: int
    min_run_time: Number
    min_repeats: int
    profile_status: NotRequired[ProfileStatus]
    hardware: NotRequired[HardwareFacts]
    distributed: NotRequired[DistributedContext]


class BenchmarkMeasurement(TypedDict):
    """Raw block durations (each covering ``number_per_run`` calls), not per-call values."""

    number_per_run: int
    raw_times_seconds: list[float]
    measured_calls: int
    agreed_across_ranks: NotRequired[int]  # the world size, when counts were agreed across ranks


class BenchmarkReport(TypedDict):
    """Warmed block-average latency and throughput of one workload (workloads.md 5.4).

    ``measurement`` is empty (``{}``) when ``measure_workload`` did not time the workload.
    """

    schema_version: int
    context: BenchmarkContext
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
    """Checked before/after comparison of two benchmark reports: exactly eight keys (workloads.md 6.8)."""

    schema_version: int
    report_type: Literal["benchmark_comparison"]
    before: BenchmarkReport
    after: BenchmarkReport
    totals: dict[str, MetricDiff]
    output_check: Literal["passed", "failed"]
    latency_change: LatencyChange
    context_changes: dict[str, ContextChange]


# --- merged per-rank reports (distributed.md 4) -----------------------------------------------


class RankTotals(TypedDict):
    """One rank's totals, unchanged from its report."""

    rank: int
    totals: dict[str, MetricResult]


class MergedReport(TypedDict):
    """Result of ``merge_reports``: the ranks of one job, merged by the rules of distributed.md 4."""

    schema_version: int
    report_type: Literal["merged"]
    merged_type: Literal["flop", "analysis", "benchmark"]
    ranks: list[int]
    world_size: int
    totals: dict[str, MetricResult]
    imbalance: dict[str, MetricResult]
    per_rank: list[RankTotals]
    diagnostics: list[Diagnostic]
