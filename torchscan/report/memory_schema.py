"""The wire types of ``measure_memory`` (memory.md 2): the storage ledger's ``MemoryReport``.

Declared beside :mod:`torchscan.report.schema` (which holds every other wire type) because the
memory report is a separate report kind with its own validator. Units are bytes (ints). This module
never imports torch: views and validators depend on it.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from torchscan.report.schema import Diagnostic, DistributedContext, MetricResult

MEMORY_REPORT = "memory"
"""``report_type`` of a MemoryReport."""
METHOD = "torchscan_storage_ledger"
"""Method label of every ledger figure (never of the allocator's own figures)."""
CATEGORIES = ("parameters", "buffers", "gradients", "optimizer_state", "activations", "temporaries", "inputs")
"""The ledger's storage categories, in report order."""
PHASES = ("forward", "backward", "optimizer", "recompute")
"""``by_phase`` keys, the same as :data:`torchscan.analysis.dispatch.phases.PHASES`."""
LEDGER_DEVICES = ("cpu", "cuda", "mps", "meta", "fake")
"""Kinds of tensors a ledger can have observed (``context.ledger_device``)."""
MAX_TIMELINE_POINTS = 2000
"""The most points a timeline keeps (evenly decimated, the peak always kept)."""

# Scopes of the ledger's figures, spelled once for producer and validator.
SCOPE_WORKLOAD = "workload"
SCOPE_START = "workload_start"
SCOPE_AT_PEAK = "at_peak"
SCOPE_PHASE = "workload_phase"
SCOPE_CALL = "module_call"
# The allocator's own figures (memory.md 3), each under its own method, never the ledger's.
CUDA_ALLOCATED_METHOD = "torch.cuda.max_memory_allocated"
CUDA_RESERVED_METHOD = "torch.cuda.max_memory_reserved"
CPU_PROFILER_METHOD = "torch.profiler.memory_timeline"
"""Method of ``allocator.profiler_peak_delta`` (CPU, ``allocator=True``): the profiler's tracked tensor
bytes, peak minus what it saw resident before the call, as ``measure_peak_memory`` measures them."""
# ``allocator_ledger_gap`` (report/codes.py) names a difference of more than 1 % or 64 KiB between the
# ledger's peak − baseline and the allocator's own figure of the same call.
ALLOCATOR_GAP_BYTES = 64 * 1024
ALLOCATOR_GAP_SHARE = 0.01

LedgerDevice = Literal["cpu", "cuda", "mps", "meta", "fake"]
PhaseName = Literal["forward", "backward", "optimizer", "recompute"]


class MemoryContext(TypedDict):
    """Where and how a MemoryReport was measured."""

    torch_version: str
    device: str  # where the workload's tensors lived, e.g. "cpu", "cuda:0", "meta"; "mixed" if several
    ledger_device: LedgerDevice
    dtypes: list[str]  # sorted dtype names of the storages seen, e.g. ["float32"]
    method: str  # METHOD
    distributed: NotRequired[DistributedContext]


class MemoryCategories(TypedDict):
    """Live bytes per category at one moment (each a MetricResult, unit bytes)."""

    parameters: MetricResult
    buffers: MetricResult
    gradients: MetricResult
    optimizer_state: MetricResult
    activations: MetricResult
    temporaries: MetricResult
    inputs: MetricResult


class ModuleCallRef(TypedDict):
    """One module call: its report path ("" is the root) and its call index (from 0)."""

    path: str
    call_index: int


class MemoryAtPeak(TypedDict):
    """What the peak was made of, in which phase and inside which innermost module call."""

    by_category: MemoryCategories
    phase: PhaseName | None
    module: ModuleCallRef | None


class MemoryPhases(TypedDict):
    """Peak live bytes within each phase (scope ``workload_phase``); a phase that never ran is unavailable."""

    forward: MetricResult
    backward: MetricResult
    optimizer: MetricResult
    recompute: MetricResult


class MemoryModuleCall(TypedDict):
    """One module call of ``by_module`` (call order)."""

    path: str
    call_index: int
    module_type: str
    activations_saved: MetricResult  # bytes of storages created in the call and saved for backward
    allocated: MetricResult  # bytes of storages created in the call
    peak_inside: MetricResult  # live bytes (all categories) at the highest point inside the call


class TimelineCategories(TypedDict):
    """Live bytes per category at one timeline point (plain ints)."""

    parameters: int
    buffers: int
    gradients: int
    optimizer_state: int
    activations: int
    temporaries: int
    inputs: int


class TimelinePoint(TypedDict):
    """One ledger event kept on the timeline."""

    event: int
    phase: PhaseName | None
    by_category: TimelineCategories


class MemoryReport(TypedDict):
    """The storage ledger of one workload call (memory.md 2, ``schema_version`` 1).

    Live-storage bytes only: not allocator-reserved memory, not process RSS, not what fits a device.
    """

    schema_version: int
    report_type: Literal["memory"]
    context: MemoryContext
    peak: MetricResult
    baseline: MetricResult
    at_peak: MemoryAtPeak
    by_phase: MemoryPhases
    by_module: list[MemoryModuleCall]
    timeline: list[TimelinePoint]
    timeline_events: int
    allocator: dict[str, MetricResult]
    diagnostics: list[Diagnostic]
