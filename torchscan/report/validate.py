"""Load and check saved reports before anything reads them (render.md 1.3, workloads.md 6.2).

Rendering and comparison both call these validators, so a report that one accepts the other
accepts too. Every failure is a ``ValueError`` whose message starts with the exact location of the
problem, e.g. ``layers[3].metrics.macs.status``. No ``TypeError``, ``KeyError`` or
``RecursionError`` escapes. This module never imports torch.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from torchscan.report.diff import checked_delta
from torchscan.report.hardware import (
    ANALYSIS_FIGURES,
    WORKLOAD_FIGURES,
    check_saved_figures,
    check_saved_hardware,
)
from torchscan.report.schema import COMPUTE_FIELDS, STATUSES, in_float_range

MAX_DEPTH = 200
# Costs that views sum over module calls; a negative value would make a subtotal meaningless.
# Other metrics (e.g. effective padding) may legitimately be negative.
ADDITIVE_METRICS = frozenset(COMPUTE_FIELDS)
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


def _fail(where: str, message: str) -> ValueError:
    return ValueError(f"{where or 'report'}: {message}")


def _child(where: str, key: object) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    text = str(key)
    if text.isidentifier():
        return f"{where}.{text}" if where else text
    return f"{where}[{text!a}]"


def is_number(value: object) -> bool:
    """True for a finite int or float that ``float()`` can represent; a bool is not a number here."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return in_float_range(value)


def is_count(value: object) -> bool:
    """True for a non-negative ``int`` that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_text(text: str, where: str) -> None:
    """Reject strings that are not valid XML 1.0 text (control characters, surrogates, U+FFFE/F)."""
    for char in text:
        code = ord(char)
        if (code < 0x20 and char not in "\t\n\r") or 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF):
            raise _fail(where, f"invalid text: code point U+{code:04X} is not allowed")


def check_json_tree(value: Any, where: str = "report") -> None:
    """Check that ``value`` is a finite, acyclic JSON tree of valid text (render.md 1.3)."""
    active: set[int] = set()
    stack: list[tuple[Any, str, int, bool]] = [(value, where, 0, False)]
    while stack:
        item, location, depth, leaving = stack.pop()
        if leaving:
            active.discard(id(item))
            continue
        if depth > MAX_DEPTH:
            raise _fail(location, "nesting is too deep; a report must be an acyclic tree of bounded depth")
        if isinstance(item, str):
            check_text(item, location)
        elif item is None or isinstance(item, bool) or is_number(item):
            continue
        elif isinstance(item, dict | list):
            if id(item) in active:
                raise _fail(location, "refers back to itself; a report must be acyclic")
            active.add(id(item))
            stack.append((item, location, depth, True))
            if isinstance(item, dict):
                entries = list(item.items())
                for key, _ in entries:
                    if not isinstance(key, str):
                        raise _fail(location, f"object key {key!r:.40} must be a string")
                    check_text(key, _child(location, "<key>"))
                for key, child in reversed(entries):
                    stack.append((child, _child(location, key), depth + 1, False))
            else:
                for index in range(len(item) - 1, -1, -1):
                    stack.append((item[index], _child(location, index), depth + 1, False))
        else:
            what = "a number beyond the float range" if isinstance(item, int | float) else type(item).__name__
            raise _fail(
                location,
                f"expected a JSON value (string, finite number, bool, null, list or object), got {what}",
            )


def _object(parent: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise _fail(_child(where, key), "must be an object")
    return value


def _list(parent: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = parent.get(key)
    if not isinstance(value, list):
        raise _fail(_child(where, key), f"{key} must be a list")
    return value


def _string(parent: Mapping[str, Any], key: str, where: str) -> str:
    value = parent.get(key)
    if not isinstance(value, str):
        raise _fail(_child(where, key), "must be a string")
    return value


def check_metric_result(result: Any, where: str, *, additive: bool = False) -> None:
    """Check one MetricResult's labels and status invariants (analysis.md 5.2).

    With ``additive`` a negative known value is rejected: per-call costs are summed in views.
    """
    if not isinstance(result, dict):
        raise _fail(where, "must be a MetricResult object")
    for key in ("unit", "scope", "method"):
        _string(result, key, where)
    status = result.get("status")
    if status not in STATUSES:
        raise _fail(_child(where, "status"), f"invalid status {status!r:.40}")
    for key in ("value", "known_value"):
        if key not in result:
            raise _fail(_child(where, key), "is missing (MetricResult invariant)")
    value, known = result["value"], result["known_value"]
    if status == "complete":
        for key, number in (("value", value), ("known_value", known)):
            if not is_number(number):
                raise _fail(_child(where, key), "a complete result needs a finite number")
        if value != known:
            raise _fail(where, "complete result breaks the invariant value == known_value")
    elif status == "partial":
        if value is not None:
            raise _fail(_child(where, "value"), "partial result breaks the invariant value is None")
        if not is_number(known):
            raise _fail(_child(where, "known_value"), "a partial result needs a finite number")
    elif value is not None or known is not None:
        raise _fail(where, "unavailable result breaks the invariant value and known_value are None")
    if additive and known is not None and known < 0:
        raise _fail(_child(where, "known_value"), "negative additive cost")


def check_diagnostic(entry: Any, where: str) -> None:
    """Check one Diagnostic (analysis.md 5.3)."""
    if not isinstance(entry, dict):
        raise _fail(where, "must be a Diagnostic object")
    for key in ("code", "metric", "message"):
        _string(entry, key, where)
    if entry.get("severity") not in ("warning", "error"):
        raise _fail(_child(where, "severity"), "invalid severity")
    for key in ("path", "operator", "class_path"):
        if key in entry and not isinstance(entry[key], str):
            raise _fail(_child(where, key), "must be a string")


def check_diagnostics(entries: list[Any], where: str) -> None:
    """Check every Diagnostic of a list."""
    for index, entry in enumerate(entries):
        check_diagnostic(entry, _child(where, index))


def _check_layer(layer: Any, where: str) -> tuple[str, int]:
    if not isinstance(layer, dict):
        raise _fail(where, "must be a layer object")
    path = _string(layer, "path", where)
    _string(layer, "name", where)
    _string(layer, "type", where)
    if path and any(part == "" for part in path.split(".")):
        raise _fail(_child(where, "path"), "empty module component in a dotted path")
    for key in ("depth", "call_index"):
        if not is_count(layer.get(key)):
            raise _fail(_child(where, key), "must be a nonnegative integer")
    _object(layer, "input", where)
    _object(layer, "output", where)
    for key, fields in (("parameters", ("trainable", "frozen", "bytes")), ("buffers", ("elements", "bytes"))):
        stats = _object(layer, key, where)
        for field in fields:
            if not is_count(stats.get(field)):
                raise _fail(_child(_child(where, key), field), "must be a nonnegative integer")
        if not isinstance(stats.get("shared"), bool):
            raise _fail(_child(_child(where, key), "shared"), "shared must be a boolean")
    metrics = _object(layer, "metrics", where)
    for name, result in metrics.items():
        check_metric_result(result, _child(_child(where, "metrics"), name), additive=name in ADDITIVE_METRICS)
    return path, layer["call_index"]


def _check_ownership(layers: list[dict[str, Any]], calls: set[tuple[str, int]], root: str) -> None:
    for index, layer in enumerate(layers):
        where = _child(_child(root, "layers"), index)
        if "metric_ownership" in layer:
            ownership = _object(layer, "metric_ownership", where)
            for field, scope in ownership.items():
                if scope not in ("module_call", "subtree"):
                    raise _fail(
                        _child(_child(where, "metric_ownership"), field), "must be module_call or subtree"
                    )
        if "metric_owners" not in layer:
            continue
        owners = _object(layer, "metric_owners", where)
        for field, owner in owners.items():
            location = _child(_child(where, "metric_owners"), field)
            if not isinstance(owner, dict):
                raise _fail(location, "must be an object with path and call_index")
            path = _string(owner, "path", location)
            if not is_count(owner.get("call_index")):
                raise _fail(_child(location, "call_index"), "must be a nonnegative integer")
            if (path, owner["call_index"]) not in calls:
                raise _fail(location, "metric owner names no layer call of this report")
            if field in layer["metrics"]:
                raise _fail(location, "a covered call carries no value of its own for that metric")


_PHASES = ("forward", "backward", "optimizer", "recompute")


def check_phases(flops: dict[str, Any], where: str) -> None:
    """``by_phase`` (training-and-hardware.md 1): exactly the four phases, FLOPs results with scope
    ``workload_phase`` and the total's method, whose known values sum exactly to the total's.

    Statuses agree with the total: a complete total has complete phases, a partial total at least one
    partial phase (the phase that held the uncounted operator), an unavailable total no values.
    """
    location = _child(where, "by_phase")
    phases = _object(flops, "by_phase", where)
    if sorted(phases) != sorted(_PHASES):
        raise _fail(location, "must have exactly the keys forward, backward, optimizer, recompute")
    total = flops["total"]
    for name in _PHASES:
        check_metric_result(phases[name], _child(location, name))
        if phases[name]["unit"] != "FLOPs" or phases[name]["scope"] != "workload_phase":
            raise _fail(_child(location, name), "must have unit FLOPs and scope workload_phase")
        if phases[name]["method"] != total["method"]:
            raise _fail(_child(_child(location, name), "method"), "must equal the total's method")
    known = [phases[name]["known_value"] for name in _PHASES]
    statuses = {phases[name]["status"] for name in _PHASES}
    if total["known_value"] is None:
        if any(value is not None for value in known):
            raise _fail(location, "phases carry no value when the total is unavailable")
        return
    if None in known or sum(known) != total["known_value"]:
        raise _fail(location, "phase known values must sum exactly to total.known_value")
    if (total["status"] == "complete") != (statuses == {"complete"}):
        raise _fail(location, "phases are all complete exactly when the total is complete")


def _check_operator_report(report: dict[str, Any], totals: dict[str, Any], root: str) -> None:
    where = _child(root, "operator_flops")
    flops = _object(report, "operator_flops", root)
    validate_operator_report(flops, where)
    if "operator_flops" in totals and totals["operator_flops"] != flops["total"]:
        raise _fail(_child(_child(root, "totals"), "operator_flops"), "must match operator_flops.total")


def validate_operator_report(flops: dict[str, Any], where: str) -> None:
    """Check one FlopReport object (standalone or inside an analysis), distributed parts included."""
    from torchscan.report.validate_merged import check_distributed_parts

    version = flops.get("schema_version")
    if type(version) is not int or version != 1:
        raise _fail(_child(where, "schema_version"), "operator schema_version must be the integer 1")
    _object(flops, "context", where)
    check_metric_result(flops.get("total"), _child(where, "total"))
    for key in ("by_module", "by_operator"):
        for label, count in _object(flops, key, where).items():
            if not is_count(count):
                raise _fail(_child(_child(where, key), label), "must be a nonnegative integer")
    for label, entry in _object(flops, "ignored_operators", where).items():
        location = _child(_child(where, "ignored_operators"), label)
        if not isinstance(entry, dict):
            raise _fail(location, "must be an object with calls and reason")
        if not is_count(entry.get("calls")):
            raise _fail(_child(location, "calls"), "calls must be a nonnegative integer")
        if not isinstance(entry.get("reason"), str):
            raise _fail(_child(location, "reason"), "reason must be a string")
    check_diagnostics(_list(flops, "diagnostics", where), _child(where, "diagnostics"))
    check_phases(flops, where)
    check_distributed_parts(flops, where)


def _check_distributed_context(context: dict[str, Any], where: str) -> None:
    if "distributed" in context:
        from torchscan.report.validate_merged import check_distributed_context

        check_distributed_context(context["distributed"], _child(where, "distributed"))


def validate_analysis_report(report: Any, where: str = "report") -> None:
    """Check a saved ``AnalysisReport`` (schema 1) completely; raise ``ValueError`` naming the spot.

    A standalone FlopReport, a ReportDiff, a benchmark report or any unknown ``schema_version``
    is rejected: the layers, totals and operator report must all be present and valid.
    """
    if not isinstance(report, dict):
        raise _fail(where, f"an analysis report must be an object, got {type(report).__name__}")
    root = "" if where == "report" else where
    check_json_tree(report, root)
    version = report.get("schema_version")
    if type(version) is not int or version != 1:
        raise _fail(_child(root, "schema_version"), f"unsupported schema_version {version!r:.40}; expected 1")
    context = _object(report, "context", root)
    _object(report, "inputs", root)
    for key in ("devices", "dtypes"):
        if key in context and not (
            isinstance(context[key], list) and all(isinstance(item, str) for item in context[key])
        ):
            raise _fail(_child(_child(root, "context"), key), f"context.{key} must be a list of strings")
    _check_distributed_context(context, _child(root, "context"))
    layers = _list(report, "layers", root)
    diagnostics = _list(report, "diagnostics", root)
    totals = _object(report, "totals", root)
    for name, result in totals.items():
        check_metric_result(result, _child(_child(root, "totals"), name), additive=name in ADDITIVE_METRICS)
    calls: set[tuple[str, int]] = set()
    for index, layer in enumerate(layers):
        identity = _check_layer(layer, _child(_child(root, "layers"), index))
        if identity in calls:
            location = _child(_child(root, "layers"), index)
            raise _fail(location, f"duplicate layer call {identity[0]!r:.80} #{identity[1]}")
        calls.add(identity)
    _check_ownership(layers, calls, root)
    stated = check_saved_hardware(context, _child(root, "context"))  # training-and-hardware.md 3
    check_saved_figures(totals, ANALYSIS_FIGURES, stated, _child(root, "totals"))
    for index, layer in enumerate(layers):
        check_saved_figures(
            layer["metrics"], ANALYSIS_FIGURES, stated, f"{_child(root, 'layers')}[{index}].metrics"
        )
    check_diagnostics(diagnostics, _child(root, "diagnostics"))
    _check_operator_report(report, totals, root)


# --- benchmark reports (workloads.md 6.2) ---------------------------------------------------


def _check_profile(profile: Any, context: dict[str, Any], where: str) -> None:
    if not isinstance(profile, dict):
        raise _fail(where, "must be a ProfileReport object")
    version = profile.get("schema_version")
    if type(version) is not int or version != 1:
        raise _fail(_child(where, "schema_version"), "profile schema_version must be the integer 1")
    profile_context = _object(profile, "context", where)
    for key in ("device", "torch_version"):
        if profile_context.get(key) != context.get(key):
            location = _child(_child(where, "context"), key)
            raise _fail(location, f"profile {key} differs from the timing report")
    check_diagnostics(_list(profile, "diagnostics", where), _child(where, "diagnostics"))
    for index, row in enumerate(_list(profile, "operators", where)):
        location = _child(_child(where, "operators"), index)
        if not isinstance(row, dict):
            raise _fail(location, "must be an operator row object")
        _string(row, "operator", location)
        _list(row, "input_shapes", location)
        if not is_count(row.get("calls")):
            raise _fail(_child(location, "calls"), "must be a nonnegative integer")
        if not is_number(row.get("cpu_self_seconds")):
            raise _fail(_child(location, "cpu_self_seconds"), "must be a finite number")
        device_time = row.get("device_self_seconds", "missing")
        if device_time is not None and not is_number(device_time):
            raise _fail(_child(location, "device_self_seconds"), "must be a finite number or null")
        net = row.get("cpu_net_bytes")
        if isinstance(net, bool) or not isinstance(net, int):
            raise _fail(_child(location, "cpu_net_bytes"), "must be an integer")


def validate_benchmark_report(report: Any, where: str = "report") -> None:
    """Check a saved ``BenchmarkReport`` (workloads.md 6.2, plus its optional profile)."""
    if not isinstance(report, dict):
        raise _fail(where, f"a benchmark report must be an object, got {type(report).__name__}")
    check_json_tree(report, where)
    version = report.get("schema_version")
    if type(version) is not int or version != 1:
        raise _fail(f"{where}.schema_version", f"unsupported schema_version {version!r:.40}; expected 1")
    context = _object(report, "context", where)
    _check_distributed_context(context, f"{where}.context")
    _object(report, "inputs", where)
    _object(report, "measurement", where)
    totals = _object(report, "totals", where)
    for name, result in totals.items():
        check_metric_result(result, _child(f"{where}.totals", name))
    check_saved_figures(
        totals, WORKLOAD_FIGURES, check_saved_hardware(context, f"{where}.context"), f"{where}.totals"
    )
    missing = [name for name in TIMING_TOTALS if name not in totals]
    if missing:
        raise _fail(f"{where}.totals", f"timing metrics are missing: {', '.join(missing)}")
    for name in TIMING_TOTALS:
        result = totals[name]
        unit = f"{context.get('work_unit')}/s" if name == "throughput" else "seconds"
        if result["unit"] != unit:
            raise _fail(f"{where}.totals.{name}.unit", f"Invalid benchmark timing unit: {name}")
        if result["status"] == "complete":
            value = result["value"]
            if value < 0 or (value == 0 and name != "latency_iqr"):
                raise _fail(f"{where}.totals.{name}.value", f"Invalid benchmark timing value: {name}")
    if "diagnostics" in report:
        check_diagnostics(_list(report, "diagnostics", where), f"{where}.diagnostics")
    if "operator_flops" in report:
        flops = _object(report, "operator_flops", where)
        check_metric_result(flops.get("total"), f"{where}.operator_flops.total")
        check_phases(flops, f"{where}.operator_flops")
    if "memory" in report:
        _object(report, "memory", where)
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
        raise _fail(where, "a benchmark comparison must be an object")
    check_json_tree(comparison, where)
    version = comparison.get("schema_version")
    if type(version) is not int or version != 1:
        raise _fail(f"{where}.schema_version", f"unsupported schema_version {version!r:.40}; expected 1")
    if comparison.get("report_type") != "benchmark_comparison":
        raise _fail(f"{where}.report_type", "must be benchmark_comparison")
    before, after = comparison.get("before"), comparison.get("after")
    validate_benchmark_report(before, f"{where}.before")
    validate_benchmark_report(after, f"{where}.after")
    assert isinstance(before, dict) and isinstance(after, dict)
    for key in COMPATIBLE_CONTEXT_KEYS:
        if key not in before["context"] or key not in after["context"]:
            raise _fail(f"{where}.context", f"Benchmark contexts differ or are missing: {key}.")
        if before["context"][key] != after["context"][key]:
            raise _fail(f"{where}.context", f"Benchmark contexts differ or are missing: {key}.")
    if before["context"]["inputs_source"] != "caller_supplied" or before["inputs"] != after["inputs"]:
        raise _fail(f"{where}.inputs", "comparisons need equal caller-supplied input metadata")
    check = comparison.get("output_check")
    if check not in ("passed", "failed"):
        raise _fail(f"{where}.output_check", "must be passed or failed")
    totals = _object(comparison, "totals", where)
    names = sorted(set(before["totals"]) | set(after["totals"]))
    if sorted(totals) != names:
        raise _fail(f"{where}.totals", "deltas do not cover exactly the metrics of both reports")
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
            raise _fail(f"{where}.totals.{name}", "stored deltas disagree with the two reports")
        if "diagnostics" in stored:  # only an overflowing delta carries one (report/diff.py)
            check_diagnostics(_list(stored, "diagnostics", where), f"{where}.totals.{name}.diagnostics")
    if comparison.get("latency_change") != latency_change_label(totals):
        raise _fail(f"{where}.latency_change", "Latency change label disagrees with the stored deltas")
    if comparison.get("context_changes") != context_changes(before["context"], after["context"]):
        raise _fail(f"{where}.context_changes", "context_changes disagree with the two contexts")


def report_kind(report: Any) -> str:
    """Classify a report as ``analysis``, ``benchmark``, ``benchmark_comparison`` or ``merged``.

    (render.md 1.1; ``merged``: distributed.md 4.)
    """
    if isinstance(report, Mapping):
        if report.get("report_type") in ("benchmark_comparison", "merged"):
            return str(report["report_type"])
        if isinstance(report.get("measurement"), Mapping) and "layers" not in report:
            return "benchmark"
    return "analysis"


def validate_report(report: Any) -> str:
    """Validate any saved report by its kind and return that kind."""
    kind = report_kind(report)
    if kind == "benchmark_comparison":
        validate_benchmark_comparison(report)
    elif kind == "merged":
        from torchscan.report.validate_merged import validate_merged_report

        validate_merged_report(report)
    elif kind == "benchmark":
        validate_benchmark_report(report)
    else:
        validate_analysis_report(report)
    return kind


def load_report(text: str) -> dict[str, Any]:
    """Parse saved report JSON text (NaN and infinity refused) and validate it by its kind."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"report: {constant} is not a finite number")

    try:
        data = json.loads(text, parse_constant=refuse)
    except json.JSONDecodeError as error:
        raise ValueError(f"report: not valid JSON ({error})") from None
    validate_report(data)
    return data
