"""Load and check saved reports before anything reads them (render.md 1.3, workloads.md 6.2).

Rendering and comparison both call these validators, so a report that one accepts the other
accepts too. Every failure is a ``ValueError`` whose message starts with the exact location of the
problem, e.g. ``layers[3].metrics.macs.status``. No ``TypeError``, ``KeyError`` or
``RecursionError`` escapes. This package never imports torch.

The room of report validation: this package checks analysis reports and validates any saved report
by its kind; the checks of the other kinds are its modules: ``core`` (the building blocks),
``operators`` (FlopReports), ``benchmark`` (benchmark and profile reports, comparisons), ``merged``
(distributed parts, merged reports), ``generation``, ``memory``, ``scaling``, ``steps``, ``tokens``
and ``values`` (value metadata). Their public names are re-exported here (``__all__``), the import
path callers have always used. It imports only the report package's schemas, never torch, analysis,
measure, process, views or cli.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from torchscan.report.hardware import ANALYSIS_FIGURES, check_saved_figures, check_saved_hardware
from torchscan.report.schema import COMPUTE_FIELDS
from torchscan.report.validate.benchmark import (
    COMPATIBLE_CONTEXT_KEYS,
    TIMING_TOTALS,
    benchmark_metric_diff,
    context_changes,
    latency_change_label,
    validate_benchmark_comparison,
    validate_benchmark_report,
    validate_profile_report,
)
from torchscan.report.validate.core import (
    MAX_DEPTH,
    check_diagnostic,
    check_diagnostics,
    check_json_tree,
    check_metric_result,
    check_text,
    child,
    fail,
    is_count,
    is_number,
    report_root,
    require_list,
    require_object,
    require_string,
)
from torchscan.report.validate.generation import validate_generation_report
from torchscan.report.validate.memory import validate_memory_report
from torchscan.report.validate.merged import check_context_distributed
from torchscan.report.validate.operators import check_phases, validate_flop_report, validate_operator_report
from torchscan.report.validate.scaling import validate_scaling_report
from torchscan.report.validate.tokens import check_token_dependencies
from torchscan.report.validate.values import check_call_io, check_value_meta

__all__ = [
    "ADDITIVE_METRICS",
    "COMPATIBLE_CONTEXT_KEYS",
    "MAX_DEPTH",
    "TIMING_TOTALS",
    "benchmark_metric_diff",
    "check_diagnostic",
    "check_diagnostics",
    "check_json_tree",
    "check_metric_result",
    "check_phases",
    "check_text",
    "context_changes",
    "flop_shaped",
    "is_count",
    "is_number",
    "latency_change_label",
    "load_report",
    "report_kind",
    "validate_analysis_report",
    "validate_benchmark_comparison",
    "validate_benchmark_report",
    "validate_generation_report",
    "validate_memory_report",
    "validate_operator_report",
    "validate_report",
    "validate_scaling_report",
]

# Costs that views sum over module calls; a negative value would make a subtotal meaningless.
# Other metrics (e.g. effective padding) may legitimately be negative.
ADDITIVE_METRICS = frozenset(COMPUTE_FIELDS)


def _check_layer(layer: Any, where: str) -> tuple[str, int]:
    if not isinstance(layer, dict):
        raise fail(where, "must be a layer object")
    path = require_string(layer, "path", where)
    require_string(layer, "name", where)
    require_string(layer, "type", where)
    if path and any(part == "" for part in path.split(".")):
        raise fail(child(where, "path"), "empty module component in a dotted path")
    for key in ("depth", "call_index"):
        if not is_count(layer.get(key)):
            raise fail(child(where, key), "must be a nonnegative integer")
    check_call_io(require_object(layer, "input", where), child(where, "input"))
    check_value_meta(require_object(layer, "output", where), child(where, "output"))
    for key, fields in (("parameters", ("trainable", "frozen", "bytes")), ("buffers", ("elements", "bytes"))):
        stats = require_object(layer, key, where)
        for field in fields:
            if not is_count(stats.get(field)):
                raise fail(child(child(where, key), field), "must be a nonnegative integer")
        if not isinstance(stats.get("shared"), bool):
            raise fail(child(child(where, key), "shared"), "shared must be a boolean")
    metrics = require_object(layer, "metrics", where)
    for name, result in metrics.items():
        check_metric_result(result, child(child(where, "metrics"), name), additive=name in ADDITIVE_METRICS)
    if "token_dependencies" in layer:  # optional (extensions-and-transformers.md 16.1)
        check_token_dependencies(layer["token_dependencies"], child(where, "token_dependencies"))
    if "called" in layer and layer["called"] is not False:  # views-3.md 1: present only as False
        raise fail(child(where, "called"), "must be false when present (absent means the module ran)")
    if "attribution" in layer:
        shares = require_object(layer, "attribution", where)
        for name, result in shares.items():
            location = child(child(where, "attribution"), name)
            if name not in COMPUTE_FIELDS:
                raise fail(location, f"attribution keys must be among {', '.join(COMPUTE_FIELDS)}")
            check_metric_result(result, location, additive=True)
            if result["status"] != "complete":
                raise fail(location, "an attributed share must be complete")
    return path, layer["call_index"]


def _check_ownership(layers: list[dict[str, Any]], calls: set[tuple[str, int]], root: str) -> None:
    for index, layer in enumerate(layers):
        where = child(child(root, "layers"), index)
        if "metric_ownership" in layer:
            ownership = require_object(layer, "metric_ownership", where)
            for field, scope in ownership.items():
                if scope not in ("module_call", "subtree"):
                    raise fail(
                        child(child(where, "metric_ownership"), field), "must be module_call or subtree"
                    )
        if "metric_owners" not in layer:
            continue
        owners = require_object(layer, "metric_owners", where)
        for field, owner in owners.items():
            location = child(child(where, "metric_owners"), field)
            if not isinstance(owner, dict):
                raise fail(location, "must be an object with path and call_index")
            path = require_string(owner, "path", location)
            if not is_count(owner.get("call_index")):
                raise fail(child(location, "call_index"), "must be a nonnegative integer")
            if (path, owner["call_index"]) not in calls:
                raise fail(location, "metric owner names no layer call of this report")
            if field in layer["metrics"]:
                raise fail(location, "a covered call carries no value of its own for that metric")
    _check_attribution(layers, root)


def _check_attribution(layers: list[dict[str, Any]], root: str) -> None:
    """views-3.md 1: shares sit on an owner's row or rows it covers, and sum to its inclusive value."""
    index_of = {(layer["path"], layer["call_index"]): i for i, layer in enumerate(layers)}
    sums: dict[tuple[int, str], float] = {}
    for index, layer in enumerate(layers):
        for field, share in layer.get("attribution", {}).items():
            location = child(child(child(child(root, "layers"), index), "attribution"), field)
            owner = layer.get("metric_owners", {}).get(field)
            if owner is not None:
                key = (index_of[(owner["path"], owner["call_index"])], field)
            elif layer.get("metric_ownership", {}).get(field) == "subtree":
                key = (index, field)
            else:
                raise fail(location, "a share needs an inclusive owner (metric_owners or subtree ownership)")
            sums[key] = sums.get(key, 0) + share["value"]
    for (index, field), total in sums.items():
        result = layers[index]["metrics"].get(field)
        location = child(child(child(child(root, "layers"), index), "metrics"), field)
        if result is None or result["status"] != "complete" or result["value"] != total:
            raise fail(location, "the attributed shares must sum to the owner's complete inclusive value")


def _check_operator_report(report: dict[str, Any], totals: dict[str, Any], root: str) -> None:
    where = child(root, "operator_flops")
    flops = require_object(report, "operator_flops", root)
    validate_operator_report(flops, where)
    if "operator_flops" in totals and totals["operator_flops"] != flops["total"]:
        raise fail(child(child(root, "totals"), "operator_flops"), "must match operator_flops.total")


def validate_analysis_report(report: Any, where: str = "report") -> None:
    """Check a saved ``AnalysisReport`` (schema 1) completely; raise ``ValueError`` naming the spot.

    A standalone FlopReport, a ReportDiff, a benchmark report or any unknown ``schema_version``
    is rejected: the layers, totals and operator report must all be present and valid.
    """
    root = report_root(report, where, "an analysis report")
    context = require_object(report, "context", root)
    inputs = require_object(report, "inputs", root)
    if inputs.get("source") not in ("generated", "provided"):
        raise fail(child(child(root, "inputs"), "source"), "must be 'generated' or 'provided'")
    check_call_io(inputs, child(root, "inputs"))
    for key in ("devices", "dtypes"):
        if key in context and not (
            isinstance(context[key], list) and all(isinstance(item, str) for item in context[key])
        ):
            raise fail(child(child(root, "context"), key), f"context.{key} must be a list of strings")
    check_context_distributed(context, child(root, "context"))
    layers = require_list(report, "layers", root)
    diagnostics = require_list(report, "diagnostics", root)
    totals = require_object(report, "totals", root)
    for name, result in totals.items():
        check_metric_result(result, child(child(root, "totals"), name), additive=name in ADDITIVE_METRICS)
    calls: set[tuple[str, int]] = set()
    for index, layer in enumerate(layers):
        identity = _check_layer(layer, child(child(root, "layers"), index))
        if identity in calls:
            location = child(child(root, "layers"), index)
            raise fail(location, f"duplicate layer call {identity[0]!r:.80} #{identity[1]}")
        calls.add(identity)
    _check_ownership(layers, calls, root)
    stated = check_saved_hardware(context, child(root, "context"))  # training-and-hardware.md 3
    check_saved_figures(totals, ANALYSIS_FIGURES, stated, child(root, "totals"))
    for index, layer in enumerate(layers):
        check_saved_figures(
            layer["metrics"], ANALYSIS_FIGURES, stated, f"{child(root, 'layers')}[{index}].metrics"
        )
    check_diagnostics(diagnostics, child(root, "diagnostics"))
    _check_operator_report(report, totals, root)


def report_kind(report: Any) -> str:
    """Classify a report as ``analysis``, ``benchmark``, ``benchmark_comparison``, ``merged``,
    ``generation``, ``memory``, ``scaling``, ``flop`` or ``profile``.

    (render.md 1.1; ``merged``: distributed.md 4; ``generation``: generation.md 2; ``memory``: memory.md 2;
    ``scaling``: attention-and-scaling.md 2; ``flop`` (``measure_flops``) and ``profile``
    (``profile_workload``): views-3.md 4.) Anything else is classified ``analysis``, whose
    validation then names what is wrong.
    """
    if isinstance(report, Mapping):
        if report.get("report_type") in ("benchmark_comparison", "merged", "generation", "memory", "scaling"):
            return str(report["report_type"])
        if "layers" not in report:
            if isinstance(report.get("measurement"), Mapping):
                return "benchmark"
            if "by_operator" in report and "total" in report:
                return "flop"
            if isinstance(report.get("operators"), list) and "total" not in report:
                return "profile"
    return "analysis"


def flop_shaped(report: Any) -> bool:
    """Whether a report :func:`report_kind` calls ``analysis`` is a standalone FlopReport instead
    (``measure_flops``: a total and per-operator counts, no layers)."""
    return (
        isinstance(report, Mapping)
        and "layers" not in report
        and "by_operator" in report
        and "total" in report
    )


def validate_report(report: Any) -> str:
    """Validate any saved report by its kind and return that kind."""
    kind = report_kind(report)
    if kind == "benchmark_comparison":
        validate_benchmark_comparison(report)
    elif kind == "merged":
        from torchscan.report.validate.merged import validate_merged_report

        validate_merged_report(report)
    elif kind == "generation":
        validate_generation_report(report)
    elif kind == "memory":
        validate_memory_report(report)
    elif kind == "scaling":
        validate_scaling_report(report)
    elif kind == "benchmark":
        validate_benchmark_report(report)
    elif kind == "flop":
        validate_flop_report(report)
    elif kind == "profile":
        validate_profile_report(report)
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
