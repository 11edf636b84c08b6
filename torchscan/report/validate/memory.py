"""Checks of a saved ``MemoryReport`` (memory.md 2): the storage ledger of ``measure_memory``.

Every failure is a ``ValueError`` whose message starts with the exact location of the problem
(``at_peak.by_category.gradients.scope``). Built from the shared blocks of
:mod:`torchscan.report.validate.core`. This module never imports torch.
"""

from __future__ import annotations

from typing import Any

from torchscan.report.memory_schema import (
    CATEGORIES,
    LEDGER_DEVICES,
    MAX_TIMELINE_POINTS,
    MEMORY_REPORT,
    METHOD,
    PHASES,
    SCOPE_AT_PEAK,
    SCOPE_CALL,
    SCOPE_PHASE,
    SCOPE_START,
    SCOPE_WORKLOAD,
)
from torchscan.report.validate.core import (
    check_diagnostics,
    check_metric_result,
    child,
    fail,
    is_count,
    report_root,
    require_list,
    require_object,
    require_string,
)
from torchscan.report.validate.merged import check_context_distributed


def _check_bytes(result: Any, where: str, scope: str) -> None:
    """A ledger MetricResult: bytes, the given scope, the ledger's method, never negative."""
    check_metric_result(result, where, additive=True)
    if result["unit"] != "bytes":
        raise fail(child(where, "unit"), "must be 'bytes'")
    if result["scope"] != scope:
        raise fail(child(where, "scope"), f"must be {scope!r}")
    if result["method"] != METHOD:
        raise fail(child(where, "method"), f"must be {METHOD!r}")


def _check_exact_keys(mapping: dict[str, Any], expected: tuple[str, ...], where: str) -> None:
    if sorted(mapping) != sorted(expected):
        raise fail(where, f"must have exactly the keys {', '.join(expected)}")


def _check_call_ref(ref: Any, where: str) -> tuple[str, int]:
    if not isinstance(ref, dict):
        raise fail(where, "must be an object with path and call_index")
    path = require_string(ref, "path", where)
    if not is_count(ref.get("call_index")):
        raise fail(child(where, "call_index"), "must be a nonnegative integer")
    return path, ref["call_index"]


def _check_context(report: dict[str, Any], root: str) -> None:
    where = child(root, "context")
    context = require_object(report, "context", root)
    for key in ("torch_version", "device"):
        require_string(context, key, where)
    if context.get("ledger_device") not in LEDGER_DEVICES:
        raise fail(child(where, "ledger_device"), f"must be one of {', '.join(LEDGER_DEVICES)}")
    if context.get("method") != METHOD:
        raise fail(child(where, "method"), f"must be {METHOD!r}")
    dtypes = require_list(context, "dtypes", where)
    if not all(isinstance(name, str) for name in dtypes) or dtypes != sorted(set(dtypes)):
        raise fail(child(where, "dtypes"), "must be a sorted list of distinct strings")
    check_context_distributed(context, where)


def _check_peak(report: dict[str, Any], root: str) -> None:
    peak: Any = report.get("peak")
    _check_bytes(peak, child(root, "peak"), SCOPE_WORKLOAD)
    baseline: Any = report.get("baseline")
    _check_bytes(baseline, child(root, "baseline"), SCOPE_START)
    where = child(root, "at_peak")
    at_peak = require_object(report, "at_peak", root)
    categories = require_object(at_peak, "by_category", where)
    _check_exact_keys(categories, CATEGORIES, child(where, "by_category"))
    for name in CATEGORIES:
        _check_bytes(categories[name], child(child(where, "by_category"), name), SCOPE_AT_PEAK)
    if at_peak.get("phase") is not None and at_peak.get("phase") not in PHASES:
        raise fail(child(where, "phase"), f"must be null or one of {', '.join(PHASES)}")
    if "phase" not in at_peak or "module" not in at_peak:
        raise fail(where, "must have the keys phase and module (null when none)")
    if at_peak["module"] is not None:
        _check_call_ref(at_peak["module"], child(where, "module"))
    if peak["known_value"] is None:
        return
    # The peak is the sum of its categories: partial categories make a partial peak, never a bigger one.
    known = [categories[name]["known_value"] for name in CATEGORIES]
    if None in known or sum(known) != peak["known_value"]:
        raise fail(child(where, "by_category"), "known values must sum exactly to peak.known_value")
    if peak["status"] == "complete" and any(categories[name]["status"] != "complete" for name in CATEGORIES):
        raise fail(child(where, "by_category"), "a complete peak needs complete categories")
    if baseline["known_value"] is not None and baseline["known_value"] > peak["known_value"]:
        raise fail(child(root, "baseline"), "cannot exceed the peak (the peak includes the baseline)")


def _check_phases(report: dict[str, Any], root: str) -> None:
    where = child(root, "by_phase")
    phases = require_object(report, "by_phase", root)
    _check_exact_keys(phases, PHASES, where)
    peak = report["peak"]["known_value"]
    for name in PHASES:
        _check_bytes(phases[name], child(where, name), SCOPE_PHASE)
        value = phases[name]["known_value"]
        if peak is not None and value is not None and value > peak:
            raise fail(child(child(where, name), "known_value"), "a phase's peak cannot exceed the peak")


def _check_modules(report: dict[str, Any], root: str) -> None:
    where = child(root, "by_module")
    seen: set[tuple[str, int]] = set()
    for index, entry in enumerate(require_list(report, "by_module", root)):
        location = child(where, index)
        identity = _check_call_ref(entry, location)
        if identity in seen:
            raise fail(location, f"duplicate module call {identity[0]!r:.80} #{identity[1]}")
        seen.add(identity)
        require_string(entry, "module_type", location)
        for key in ("activations_saved", "allocated", "peak_inside"):
            _check_bytes(entry.get(key), child(location, key), SCOPE_CALL)


def _check_timeline(report: dict[str, Any], root: str) -> None:
    where = child(root, "timeline")
    timeline = require_list(report, "timeline", root)
    events: Any = report.get("timeline_events")
    if not is_count(events):
        raise fail(child(root, "timeline_events"), "must be a nonnegative integer")
    if len(timeline) > MAX_TIMELINE_POINTS:
        raise fail(where, f"has more than {MAX_TIMELINE_POINTS} points")
    previous: Any = -1
    for index, point in enumerate(timeline):
        location = child(where, index)
        if not isinstance(point, dict):
            raise fail(location, "must be an object with event, phase and by_category")
        _check_exact_keys(point, ("event", "phase", "by_category"), location)
        event: Any = point.get("event")
        if not is_count(event) or event <= previous or event > events:
            raise fail(child(location, "event"), "events must increase and not exceed timeline_events")
        previous = event
        if point.get("phase") is not None and point.get("phase") not in PHASES:
            raise fail(child(location, "phase"), f"must be null or one of {', '.join(PHASES)}")
        categories = require_object(point, "by_category", location)
        _check_exact_keys(categories, CATEGORIES, child(location, "by_category"))
        for name in CATEGORIES:
            if not is_count(categories[name]):
                raise fail(child(child(location, "by_category"), name), "must be a nonnegative integer")


def _check_allocator(report: dict[str, Any], root: str) -> None:
    where = child(root, "allocator")
    for name, result in require_object(report, "allocator", root).items():
        check_metric_result(result, child(where, name), additive=True)
        if result["method"] == METHOD:
            raise fail(child(child(where, name), "method"), "an allocator figure has its own method")


def validate_memory_report(report: Any, where: str = "report") -> None:
    """Check a saved ``MemoryReport`` (schema 1) completely; raise ``ValueError`` naming the spot."""
    root = report_root(report, where, "a memory report", MEMORY_REPORT)
    _check_context(report, root)
    _check_peak(report, root)
    _check_phases(report, root)
    _check_modules(report, root)
    _check_timeline(report, root)
    _check_allocator(report, root)
    check_diagnostics(require_list(report, "diagnostics", root), child(root, "diagnostics"))
