"""``compare_reports``: a pure diff of two AnalysisReports (analysis.md 9). Runs no model."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, overload

from torchscan.report.diff import metric_diff
from torchscan.report.schema import SCHEMA_VERSION, LayerChange, LayerEntry, ReportDiff
from torchscan.report.validate import report_kind, validate_analysis_report

if TYPE_CHECKING:
    from torchscan.report.memory_diff import MemoryDiff
    from torchscan.report.memory_schema import MemoryReport


def _index(report: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(layer["path"], layer["call_index"]): layer for layer in report["layers"]}


def _entry(layer: dict[str, Any]) -> LayerEntry:
    entry: LayerEntry = {
        "path": layer["path"],
        "call_index": layer["call_index"],
        "metrics": copy.deepcopy(layer["metrics"]),
    }
    if "token_dependencies" in layer:  # extensions-and-transformers.md 16.1: snapshots keep it
        entry["token_dependencies"] = copy.deepcopy(layer["token_dependencies"])
    return entry


@overload
def compare_reports(before: MemoryReport, after: MemoryReport) -> MemoryDiff: ...


@overload
def compare_reports(before: Any, after: Any) -> ReportDiff: ...


def compare_reports(before: Any, after: Any) -> ReportDiff | MemoryDiff:
    """Compare two analysis reports, or two MemoryReports; deltas only where both sides are complete.

    Both arguments must be valid schema-version-1 AnalysisReports (``ValueError`` otherwise, naming
    the problem's location). Layers match by ``(path, call_index)``; unchanged layers are omitted.
    A ``None`` delta means "unknown", never zero. Inputs are not mutated.

    Two MemoryReports of ``measure_memory`` give a ``MemoryDiff`` instead
    (:func:`torchscan.report.memory_diff.compare_memory_reports`): peak, baseline, per-category
    deltas at the peak and per-phase peaks, so a before/after of activation checkpointing or
    freezing shows as ``activations`` or ``gradients`` deltas. A MemoryReport is never compared
    with another kind of report (``ValueError``).
    """
    kinds = (report_kind(before), report_kind(after))
    if "memory" in kinds:
        if kinds != ("memory", "memory"):
            raise ValueError(
                "compare_reports compares two MemoryReports or two AnalysisReports, not one of each "
                f"(before is {kinds[0]}, after is {kinds[1]})"
            )
        from torchscan.report.memory_diff import compare_memory_reports

        return compare_memory_reports(before, after)
    validate_analysis_report(before, "before")
    validate_analysis_report(after, "after")
    totals = {
        name: metric_diff(before["totals"].get(name), after["totals"].get(name), name)
        for name in sorted(set(before["totals"]) | set(after["totals"]))
    }
    old, new = _index(before), _index(after)
    added = [_entry(new[key]) for key in new if key not in old]
    removed = [_entry(old[key]) for key in old if key not in new]
    changed: list[LayerChange] = []
    for key, layer in new.items():
        if key not in old:
            continue
        previous = old[key]
        metrics = {
            name: metric_diff(previous["metrics"].get(name), layer["metrics"].get(name), name)
            for name in sorted(set(previous["metrics"]) | set(layer["metrics"]))
            if previous["metrics"].get(name) != layer["metrics"].get(name)
        }
        tokens_before = previous.get("token_dependencies")
        tokens_after = layer.get("token_dependencies")
        if not metrics and tokens_before == tokens_after:
            continue
        change: LayerChange = {"path": key[0], "call_index": key[1], "metrics": metrics}
        if tokens_before != tokens_after:
            change["token_dependencies"] = {
                "before": copy.deepcopy(tokens_before),
                "after": copy.deepcopy(tokens_after),
            }
        changed.append(change)
    return {
        "schema_version": SCHEMA_VERSION,
        "totals": totals,
        "layers": {"added": added, "removed": removed, "changed": changed},
    }
