"""Checks of benchmark reports and their comparisons (workloads.md 6.2, 6.5-6.8).

``benchmark_metric_diff``, ``latency_change_label`` and ``context_changes`` are the pure rules a
comparison is recomputed with, shared by ``measure/compare.py`` and the validator so that a stored
comparison is accepted exactly when it says what those rules say. Every failure is a ``ValueError``
naming the location. This module never imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from torchscan.report.diff import checked_delta
from torchscan.report.hardware import WORKLOAD_FIGURES, check_saved_figures, check_saved_hardware
from torchscan.report.validate.core import (
    check_diagnostics,
    check_json_tree,
    check_metric_result,
    child,
    fail,
    is_count,
    is_number,
    require_list,
    require_object,
    require_string,
)
from torchscan.report.validate.memory import validate_memory_report
from torchscan.report.validate.merged import check_context_distributed, check_distributed_parts
from torchscan.report.validate.operators import check_phases

TIMING_TOTALS = ("first_call_latency", "latency", "latency_iqr", "throughput")
COMPATIBLE_CONTEXT_KEYS = (
    "device",
    "device_name",
    "processor",
    "machine",
    "platform",
    "torch_version",
    "torchscan_version",
    "python_version",
    "cuda_version",
    "work_units",
    "work_unit",
    "inputs_source",
)


def _check_profile(profile: Any, context: dict[str, Any], where: str) -> None:
    """A BenchmarkReport's ``profile``: a valid ProfileReport on the timing report's device and torch."""
    check_profile_report(profile, where)
    profile_context = profile["context"]
    for key in ("device", "torch_version"):
        if profile_context.get(key) != context.get(key):
            location = child(child(where, "context"), key)
            raise fail(location, f"profile {key} differs from the timing report")


def check_profile_report(profile: Any, where: str) -> None:
    """Check one ProfileReport object (standalone or inside a BenchmarkReport)."""
    if not isinstance(profile, dict):
        raise fail(where, "must be a ProfileReport object")
    version = profile.get("schema_version")
    if type(version) is not int or version != 1:
        raise fail(child(where, "schema_version"), "profile schema_version must be the integer 1")
    require_object(profile, "context", where)
    check_diagnostics(require_list(profile, "diagnostics", where), child(where, "diagnostics"))
    for index, row in enumerate(require_list(profile, "operators", where)):
        location = child(child(where, "operators"), index)
        if not isinstance(row, dict):
            raise fail(location, "must be an operator row object")
        require_string(row, "operator", location)
        require_list(row, "input_shapes", location)
        if not is_count(row.get("calls")):
            raise fail(child(location, "calls"), "must be a nonnegative integer")
        if not is_number(row.get("cpu_self_seconds")):
            raise fail(child(location, "cpu_self_seconds"), "must be a finite number")
        device_time = row.get("device_self_seconds", "missing")
        if device_time is not None and not is_number(device_time):
            raise fail(child(location, "device_self_seconds"), "must be a finite number or null")
        net = row.get("cpu_net_bytes")
        if isinstance(net, bool) or not isinstance(net, int):
            raise fail(child(location, "cpu_net_bytes"), "must be an integer")


def validate_profile_report(report: Any, where: str = "report") -> None:
    """Check a saved standalone ``ProfileReport`` (``profile_workload``; workloads.md 4).

    Beyond :func:`check_profile_report`: the context's keys a page reads (``device``,
    ``torch_version``, ``method`` strings; ``operator_groups``, ``limit`` counts;
    ``device_time_supported`` a boolean), every string valid text, the tree JSON-only.
    """
    if not isinstance(report, dict):
        raise fail(where, f"a ProfileReport must be an object, got {type(report).__name__}")
    root = "" if where == "report" else where
    check_json_tree(report, root)
    check_profile_report(report, root)
    context = report["context"]
    location = child(root, "context")
    for key in ("device", "torch_version", "method"):
        require_string(context, key, location)
    for key in ("operator_groups", "limit"):
        if not is_count(context.get(key)):
            raise fail(child(location, key), "must be a nonnegative integer")
    if not isinstance(context.get("device_time_supported"), bool):
        raise fail(child(location, "device_time_supported"), "must be a boolean")


def validate_benchmark_report(report: Any, where: str = "report") -> None:
    """Check a saved ``BenchmarkReport`` (workloads.md 6.2, plus its optional profile)."""
    if not isinstance(report, dict):
        raise fail(where, f"a benchmark report must be an object, got {type(report).__name__}")
    check_json_tree(report, where)
    version = report.get("schema_version")
    if type(version) is not int or version != 1:
        raise fail(f"{where}.schema_version", f"unsupported schema_version {version!r:.40}; expected 1")
    context = require_object(report, "context", where)
    check_context_distributed(context, f"{where}.context")
    require_object(report, "inputs", where)
    require_object(report, "measurement", where)
    totals = require_object(report, "totals", where)
    for name, result in totals.items():
        check_metric_result(result, child(f"{where}.totals", name))
    check_saved_figures(
        totals, WORKLOAD_FIGURES, check_saved_hardware(context, f"{where}.context"), f"{where}.totals"
    )
    missing = [name for name in TIMING_TOTALS if name not in totals]
    if missing:
        raise fail(f"{where}.totals", f"timing metrics are missing: {', '.join(missing)}")
    for name in TIMING_TOTALS:
        result = totals[name]
        unit = f"{context.get('work_unit')}/s" if name == "throughput" else "seconds"
        if result["unit"] != unit:
            raise fail(f"{where}.totals.{name}.unit", f"Invalid benchmark timing unit: {name}")
        if result["status"] == "complete":
            value = result["value"]
            if value < 0 or (value == 0 and name != "latency_iqr"):
                raise fail(f"{where}.totals.{name}.value", f"Invalid benchmark timing value: {name}")
    if "diagnostics" in report:
        check_diagnostics(require_list(report, "diagnostics", where), f"{where}.diagnostics")
    if "operator_flops" in report:
        flops = require_object(report, "operator_flops", where)
        check_metric_result(flops.get("total"), f"{where}.operator_flops.total")
        check_phases(flops, f"{where}.operator_flops")
        if "context" in flops:
            require_object(flops, "context", f"{where}.operator_flops")
        # logical_total, communication, context.distributed: merge_reports reads them (distributed.md 2-3)
        check_distributed_parts(flops, f"{where}.operator_flops")
    if "memory" in report:
        require_object(report, "memory", where)
    if "memory_ledger" in report:  # measure_workload(metrics=[..., "memory_ledger"]), memory.md
        validate_memory_report(require_object(report, "memory_ledger", where), f"{where}.memory_ledger")
    if "profile" in report:
        _check_profile(report["profile"], context, f"{where}.profile")


def benchmark_metric_diff(before: Any, after: Any, *, check_passed: bool) -> dict[str, Any]:
    """Recompute one ``MetricDiff`` of a benchmark comparison (workloads.md 6.5), purely."""
    delta = None
    if (
        check_passed
        and isinstance(before, dict)
        and isinstance(after, dict)
        and before["status"] == after["status"] == "complete"
        and all(before[key] == after[key] for key in ("unit", "scope", "method"))
    ):
        delta = checked_delta(before["value"], after["value"])
        if delta is None:
            return {"status": "unavailable", "delta": None, "before": before, "after": after}
    if delta is not None:
        status = "complete"
    elif check_passed and any(isinstance(s, dict) and s["status"] == "partial" for s in (before, after)):
        status = "partial"
    else:
        status = "unavailable"
    return {"status": status, "delta": delta, "before": before, "after": after}


def latency_change_label(totals: Mapping[str, Any]) -> str:
    """Recompute ``latency_change`` from comparison totals (workloads.md 6.6); descriptive only."""
    latency = totals.get("latency") or {}
    iqr = totals.get("latency_iqr") or {}
    delta = latency.get("delta")
    sides = [iqr.get("before"), iqr.get("after")]
    if delta is None or not all(isinstance(s, dict) and s["status"] == "complete" for s in sides):
        return "unavailable"
    spread = max(side["value"] for side in sides if isinstance(side, dict))
    if abs(delta) <= spread:
        return "within_variability"
    return "faster" if delta < 0 else "slower"


def context_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """Every context key whose value differs (absent reads as ``None``), in sorted order."""
    changes: dict[str, Any] = {}
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            changes[key] = {"before": before.get(key), "after": after.get(key)}
    return changes


def _same_number(left: Any, right: Any) -> bool:
    if left is None or right is None:
        return left is right
    return is_number(left) and is_number(right) and math.isclose(left, right, rel_tol=1e-9, abs_tol=1e-15)


def validate_benchmark_comparison(comparison: Any, where: str = "report") -> None:
    """Re-validate a saved ``BenchmarkComparison`` against its two stored runs (workloads.md 6.8).

    The output check is never rerun: the recorded status is trusted, but every delta, the latency
    label and the context changes must agree with what the two reports and that status imply.
    """
    if not isinstance(comparison, dict):
        raise fail(where, "a benchmark comparison must be an object")
    check_json_tree(comparison, where)
    version = comparison.get("schema_version")
    if type(version) is not int or version != 1:
        raise fail(f"{where}.schema_version", f"unsupported schema_version {version!r:.40}; expected 1")
    if comparison.get("report_type") != "benchmark_comparison":
        raise fail(f"{where}.report_type", "must be benchmark_comparison")
    before, after = comparison.get("before"), comparison.get("after")
    validate_benchmark_report(before, f"{where}.before")
    validate_benchmark_report(after, f"{where}.after")
    assert isinstance(before, dict) and isinstance(after, dict)
    for key in COMPATIBLE_CONTEXT_KEYS:
        if key not in before["context"] or key not in after["context"]:
            raise fail(f"{where}.context", f"Benchmark contexts differ or are missing: {key}.")
        if before["context"][key] != after["context"][key]:
            raise fail(f"{where}.context", f"Benchmark contexts differ or are missing: {key}.")
    if before["context"]["inputs_source"] != "caller_supplied" or before["inputs"] != after["inputs"]:
        raise fail(f"{where}.inputs", "comparisons need equal caller-supplied input metadata")
    check = comparison.get("output_check")
    if check not in ("passed", "failed"):
        raise fail(f"{where}.output_check", "must be passed or failed")
    totals = require_object(comparison, "totals", where)
    names = sorted(set(before["totals"]) | set(after["totals"]))
    if sorted(totals) != names:
        raise fail(f"{where}.totals", "deltas do not cover exactly the metrics of both reports")
    for name in names:
        expected = benchmark_metric_diff(
            before["totals"].get(name), after["totals"].get(name), check_passed=check == "passed"
        )
        stored = totals[name]
        if not isinstance(stored, dict) or (
            stored.get("status") != expected["status"]
            or not _same_number(stored.get("delta"), expected["delta"])
            or stored.get("before") != expected["before"]
            or stored.get("after") != expected["after"]
        ):
            raise fail(f"{where}.totals.{name}", "stored deltas disagree with the two reports")
        if "diagnostics" in stored:  # only an overflowing delta carries one (report/diff.py)
            location = f"{where}.totals.{name}.diagnostics"
            check_diagnostics(require_list(stored, "diagnostics", where), location)
    if comparison.get("latency_change") != latency_change_label(totals):
        raise fail(f"{where}.latency_change", "Latency change label disagrees with the stored deltas")
    if comparison.get("context_changes") != context_changes(before["context"], after["context"]):
        raise fail(f"{where}.context_changes", "context_changes disagree with the two contexts")
