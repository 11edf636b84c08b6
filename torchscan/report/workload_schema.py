"""Wire types of the workload reports (workloads.md): profile, benchmark and their comparison.

Declared once, beside :mod:`torchscan.report.schema` (whose shared types they use). Never imports
torch.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from torchscan.report.schema import (
    Diagnostic,
    DistributedContext,
    FlopReport,
    HardwareFacts,
    MetricDiff,
    MetricResult,
    Number,
    ValueMeta,
    WireShape,
)

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
    """How a profile was taken: torch version, device, method, operator grouping and limit."""

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


class NotMeasured(TypedDict):
    """The empty ``measurement`` of a ``measure_workload`` report that did not time the workload."""


class PeakMemory(TypedDict):
    """``measure_peak_memory``'s result (workloads.md 3), kept as a BenchmarkReport's ``memory``.

    CPU: ``metric`` ``pytorch_tensor_bytes`` (the profiler's memory timeline); CUDA/MPS:
    ``pytorch_reserved_bytes`` (allocator counters) plus ``allocated_peak_bytes``. Not process RSS,
    not total device memory.
    """

    device: str
    metric: Literal["pytorch_tensor_bytes", "pytorch_reserved_bytes"]
    baseline_bytes: int
    peak_bytes: int
    delta_bytes: int
    allocated_peak_bytes: NotRequired[int]


class BenchmarkReport(TypedDict):
    """Warmed block-average latency and throughput of one workload (workloads.md 5.4).

    ``measurement`` is empty (``{}``) when ``measure_workload`` did not time the workload.
    """

    schema_version: int
    context: BenchmarkContext
    inputs: ValueMeta
    totals: dict[str, MetricResult]
    measurement: Annotated[
        BenchmarkMeasurement | dict[str, Any], WireShape("Measurement", BenchmarkMeasurement, NotMeasured)
    ]
    profile: NotRequired[ProfileReport]
    operator_flops: NotRequired[FlopReport]
    memory: NotRequired[Annotated[dict[str, Any], WireShape("PeakMemoryResult", PeakMemory)]]
    # A MemoryReport (report/memory_schema.py, which imports this module) when "memory_ledger" was asked.
    memory_ledger: NotRequired[Annotated[dict[str, Any], WireShape("MemoryLedger", "MemoryReport")]]
    diagnostics: NotRequired[list[Diagnostic]]


class ContextChange(TypedDict):
    """One context key whose value differs between two benchmark runs."""

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
