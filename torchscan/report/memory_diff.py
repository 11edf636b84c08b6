"""Comparison of two MemoryReports (memory.md 4): per-category deltas at the peak, peak and baseline.

Pure and torch-free like :func:`torchscan.report.compare.compare_reports`, which dispatches here
when both of its arguments are MemoryReports. Every figure is a :class:`MetricDiff` built by the one
shared rule of :func:`torchscan.report.diff.metric_diff`: a delta exists only when both sides are
complete with equal unit, scope and method; a lower bound (partial) on either side leaves the delta
unknown (``None``), never a number. A before/after of activation checkpointing or of freezing a
layer therefore reads directly as the ``activations`` or ``gradients`` delta at the peak.

The measurement contexts are not required to match (the same program on CPU and on the meta
device, or in float32 and bfloat16, is a legitimate comparison): every difference is listed in
``context_changes`` so a reader sees what else changed.
"""

from __future__ import annotations

import copy
from typing import Any, Final, Literal, TypedDict

from torchscan.report.diff import metric_diff
from torchscan.report.memory_schema import CATEGORIES, PHASES, ModuleCallRef, PhaseName
from torchscan.report.schema import MetricDiff
from torchscan.report.validate.memory import validate_memory_report
from torchscan.report.workload_schema import ContextChange

MEMORY_COMPARISON: Final = "memory_comparison"
"""``report_type`` of a MemoryDiff."""
COMPARED_CONTEXT = ("device", "ledger_device", "dtypes", "torch_version")


class PeakPlace(TypedDict):
    """Where one side's peak happened: its phase and innermost module call (copied from ``at_peak``)."""

    phase: PhaseName | None
    module: ModuleCallRef | None


class PeakPlaces(TypedDict):
    """The peak's place before and after."""

    before: PeakPlace
    after: PeakPlace


class MemoryDiff(TypedDict):
    """Result of ``compare_reports`` on two MemoryReports."""

    schema_version: int
    report_type: Literal["memory_comparison"]
    peak: MetricDiff
    baseline: MetricDiff
    at_peak: dict[str, MetricDiff]  # one per category, in CATEGORIES order
    by_phase: dict[str, MetricDiff]  # one per phase, in PHASES order
    where: PeakPlaces
    context_changes: dict[str, ContextChange]


def _place(report: dict[str, Any]) -> PeakPlace:
    at_peak = report["at_peak"]
    return {"phase": at_peak["phase"], "module": copy.deepcopy(at_peak["module"])}


def compare_memory_reports(before: Any, after: Any) -> MemoryDiff:
    """Compare two MemoryReports (validated first: ``ValueError`` naming the location of a problem).

    Deltas are ``after - before`` in bytes. Inputs are not mutated and share nothing with the result.
    """
    validate_memory_report(before, "before")
    validate_memory_report(after, "after")
    changes: dict[str, ContextChange] = {
        key: {"before": copy.deepcopy(before["context"][key]), "after": copy.deepcopy(after["context"][key])}
        for key in COMPARED_CONTEXT
        if before["context"][key] != after["context"][key]
    }
    return {
        "schema_version": 1,
        "report_type": MEMORY_COMPARISON,
        "peak": metric_diff(before["peak"], after["peak"], "peak"),
        "baseline": metric_diff(before["baseline"], after["baseline"], "baseline"),
        "at_peak": {
            name: metric_diff(
                before["at_peak"]["by_category"][name], after["at_peak"]["by_category"][name], name
            )
            for name in CATEGORIES
        },
        "by_phase": {
            name: metric_diff(before["by_phase"][name], after["by_phase"][name], name) for name in PHASES
        },
        "where": {"before": _place(before), "after": _place(after)},
        "context_changes": changes,
    }
