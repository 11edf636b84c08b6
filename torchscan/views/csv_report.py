"""The same data in CSV (views-3.md 3): one table per report kind, for spreadsheets and dashboards.

Reads validated reports only (no torch). Every document has a header row, ``\\n`` line ends, plain
integers (no thousands separators, no SI prefixes, no e-notation for integers) and statuses as
words; an unknown number is an empty cell, never 0. A partial value is written as its known lower
bound beside the status ``partial``. Text taken from a model or a caller (paths, type and operator
names, reasons) that a spreadsheet would read as a formula (a leading ``=``, ``+``, ``-``, ``@``,
tab or carriage return) is prefixed with ``'``; numbers are never altered.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from torchscan.views.analysis.row_values import is_called, is_covered, own_result
from torchscan.views.analysis.table_rows import RowModel

# The additive metrics of a layer row: module formulas (own share or recorded value) and operator
# FLOPs (own frame, inclusive as recorded).
ANALYSIS_METRICS = ("module_flops", "macs", "dmas", "operator_flops")
ANALYSIS_COLUMNS = (
    "path",
    "call_index",
    "type",
    "depth",
    "params_own",
    "params_incl",
    "trainable",
    *(f"{metric}_own" for metric in ANALYSIS_METRICS),
    *(f"{metric}_incl" for metric in ANALYSIS_METRICS),
    *(f"{metric}_status" for metric in ANALYSIS_METRICS),
    *(f"{metric}_incl_status" for metric in ANALYSIS_METRICS),
    "called",
)
FLOP_COLUMNS = ("group", "name", "flops", "bytes", "status", "calls", "reason")
MEMORY_CATEGORIES = (
    "parameters",
    "buffers",
    "gradients",
    "optimizer_state",
    "activations",
    "temporaries",
    "inputs",
)
MEMORY_CALL_FIGURES = ("activations_saved", "allocated", "peak_inside")
MEMORY_COLUMNS = (
    "group",
    "event",
    "phase",
    "path",
    "call_index",
    "module_type",
    *MEMORY_CATEGORIES,
    "live_total",
    *MEMORY_CALL_FIGURES,
    *(f"{name}_status" for name in MEMORY_CALL_FIGURES),
)
BENCHMARK_COLUMNS = ("group", "name", "value", "status", "unit", "scope", "method")
# Statuses beyond a MetricResult's three: a share the owner's estimate covers without attributing
# it, a module that never ran, a count taken by a formula, an ignored or uncounted operator.
COVERED, NOT_CALLED = "covered", "not_called"
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _text(value: str) -> str:
    return "'" + value if value.startswith(_FORMULA_START) else value


def _document(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if cell is None else cell for cell in row])
    return out.getvalue()


def _number(result: Mapping[str, Any] | None) -> Any:
    """A result's number for a cell: the value, a partial's known lower bound, else empty."""
    if result is None or result["status"] == "unavailable":
        return None
    return result["known_value"]


def _sum(results: Sequence[Mapping[str, Any]]) -> tuple[Any, str]:
    """Sum results the way totals do: complete only when every part is; empty when none is known."""
    if not results:
        return None, ""
    known = [r["known_value"] for r in results if r["known_value"] is not None]
    status = "complete" if all(r["status"] == "complete" for r in results) else "partial"
    return (sum(known), status) if known else (None, "unavailable")


# --- AnalysisReport -------------------------------------------------------------------------------


def _own(layer: Mapping[str, Any], metric: str) -> tuple[Any, str]:
    """A row's own value of ``metric`` and its status word."""
    name = "operator_flops_self" if metric == "operator_flops" else metric
    result = own_result(layer, name)
    if result is not None:
        return _number(result), result["status"]
    if is_covered(layer, metric):
        return None, COVERED
    return None, "" if is_called(layer) else NOT_CALLED


def analysis_csv(report: Mapping[str, Any]) -> str:
    """One row per layer row of an AnalysisReport, in forward (report) order.

    ``*_own`` is the row's own value (a module-formula metric's attribution share first, views-3.md
    1); ``*_incl`` sums the own values of the row's call and every call it made (operator FLOPs: the
    recorded inclusive count); ``*_status`` is the own value's status and ``*_incl_status`` the
    inclusive one's. An empty status means the row records no value of its own (a container whose
    work is its children's), ``covered`` that an ancestor's inclusive estimate holds it without a
    share, ``not_called`` that the module never ran. ``trainable`` counts the row's own trainable
    parameter elements (``params_own`` minus frozen ones); ``called`` is ``false`` for a module
    that never ran as a module call.
    """
    layers = report["layers"]
    subtrees = {row.layers[0]: row.subtree for row in RowModel(layers, False).rows(1 << 30)}
    rows = []
    for index, layer in enumerate(layers):
        subtree = subtrees.get(index, [index])
        params = layer["parameters"]
        own = [_own(layer, metric) for metric in ANALYSIS_METRICS]
        inclusive = []
        for metric in ANALYSIS_METRICS:
            if metric == "operator_flops":
                result = layer["metrics"].get("operator_flops")
                inclusive.append((_number(result), result["status"] if result else own[-1][1]))
                continue
            parts = [r for i in subtree if (r := own_result(layers[i], metric)) is not None]
            value, status = _sum(parts)
            inclusive.append((value, status or own[ANALYSIS_METRICS.index(metric)][1]))
        rows.append(
            [
                _text(layer["path"]),
                layer["call_index"],
                _text(layer["type"]),
                layer["depth"],
                params["trainable"] + params["frozen"],
                sum(
                    layers[i]["parameters"]["trainable"] + layers[i]["parameters"]["frozen"] for i in subtree
                ),
                params["trainable"],
                *(value for value, _ in own),
                *(value for value, _ in inclusive),
                *(status for _, status in own),
                *(status for _, status in inclusive),
                "true" if is_called(layer) else "false",
            ]
        )
    return _document(ANALYSIS_COLUMNS, rows)


# --- FlopReport -----------------------------------------------------------------------------------


def flop_csv(report: Mapping[str, Any]) -> str:
    """A FlopReport: the total, its phases and steps, then operators, modules, ignored and uncounted.

    ``group`` says what a row is: ``total``, ``phase``, ``step`` (generation.md 1), ``operator``
    (counted FLOPs per operator; they sum to the total's known value), ``module`` (the counter's
    *inclusive* FLOPs per module label: never summed), ``ignored`` (zero-FLOP operators with their
    calls and reason) and ``uncounted`` (operators without a formula, named by the diagnostics: their
    FLOPs are unknown). ``bytes`` holds operator bytes where they were measured.
    """
    total = report["total"]
    bytes_total = report.get("operator_bytes")
    rows: list[list[Any]] = [["total", "", _number(total), _number(bytes_total), total["status"], None, None]]
    for name, result in report["by_phase"].items():
        rows.append(["phase", name, _number(result), None, result["status"], None, None])
    for step in report.get("by_step", ()):
        flops, moved = step["flops"], step["operator_bytes"]
        rows.append(["step", step["index"], _number(flops), _number(moved), flops["status"], None, None])
    operator_bytes = report.get("by_operator_bytes", {})
    for name, count in sorted(report["by_operator"].items(), key=lambda item: (-item[1], item[0])):
        rows.append(["operator", _text(name), count, operator_bytes.get(name), "counted", None, None])
    for name, count in sorted(report["by_module"].items(), key=lambda item: (-item[1], item[0])):
        rows.append(["module", _text(name), count, None, "inclusive", None, None])
    for name, entry in sorted(report["ignored_operators"].items()):
        rows.append(["ignored", _text(name), 0, None, "ignored", entry["calls"], _text(entry["reason"])])
    uncounted = sorted(
        {
            d["operator"]
            for d in report["diagnostics"]
            if d["code"] == "uncounted_operator" and "operator" in d
        }
    )
    rows += [["uncounted", _text(name), None, None, "uncounted", None, None] for name in uncounted]
    return _document(FLOP_COLUMNS, rows)


# --- MemoryReport ---------------------------------------------------------------------------------


def memory_csv(report: Mapping[str, Any]) -> str:
    """A MemoryReport: one ``timeline`` row per kept point, then one ``module`` row per module call.

    Timeline rows hold live bytes per category and their sum (``live_total``); module rows hold the
    call's saved activations, allocated bytes and the peak inside it, each with its status.
    """
    rows: list[list[Any]] = []
    blank_calls = [None] * (2 * len(MEMORY_CALL_FIGURES))
    for point in report["timeline"]:
        categories = [point["by_category"][name] for name in MEMORY_CATEGORIES]
        rows.append(
            [
                "timeline",
                point["event"],
                point["phase"],
                None,
                None,
                None,
                *categories,
                sum(categories),
                *blank_calls,
            ]
        )
    for call in report["by_module"]:
        figures = [call[name] for name in MEMORY_CALL_FIGURES]
        rows.append(
            [
                "module",
                None,
                None,
                _text(call["path"]),
                call["call_index"],
                _text(call["module_type"]),
                *([None] * (len(MEMORY_CATEGORIES) + 1)),
                *(_number(result) for result in figures),
                *(result["status"] for result in figures),
            ]
        )
    return _document(MEMORY_COLUMNS, rows)


# --- BenchmarkReport ------------------------------------------------------------------------------

# Context keys a dashboard groups runs by (workloads.md 5.4); the rest stays in the JSON report.
BENCHMARK_CONTEXT = (
    "device",
    "device_name",
    "torch_version",
    "torchscan_version",
    "python_version",
    "platform",
    "machine",
    "num_threads",
    "work_units",
    "work_unit",
    "warmup",
    "min_repeats",
)


def _result_row(group: str, name: str, result: Mapping[str, Any]) -> list[Any]:
    return [group, name, _number(result), result["status"], result["unit"], result["scope"], result["method"]]


def benchmark_csv(report: Mapping[str, Any]) -> str:
    """A BenchmarkReport as a dashboard reads it: ``total`` rows (latency, throughput, peaks...),
    the operator FLOPs when measured, each raw ``block`` duration (``scope`` says how many calls a
    block covers: not a per-call time), the profile's ``operator`` self times when present, and the
    ``context`` keys runs are grouped by (:data:`BENCHMARK_CONTEXT`).
    """
    rows = [_result_row("total", name, result) for name, result in report["totals"].items()]
    flops = report.get("operator_flops")
    if flops is not None and "operator_flops" not in report["totals"]:
        rows.append(_result_row("total", "operator_flops", flops["total"]))
    measurement = report["measurement"]
    per_block = measurement.get("number_per_run")
    timer = report["totals"]["latency"]["method"] if "latency" in report["totals"] else ""
    for index, seconds in enumerate(measurement.get("raw_times_seconds", ())):
        rows.append(["block", index, seconds, "complete", "seconds", f"block of {per_block} calls", timer])
    for row in report.get("profile", {}).get("operators", ()):
        rows.append(
            [
                "operator",
                _text(row["operator"]),
                row["cpu_self_seconds"],
                "complete",
                "seconds",
                "cpu_self",
                "profiler",
            ]
        )
    context = report["context"]
    for key in BENCHMARK_CONTEXT:
        if key in context and context[key] is not None:
            value = context[key]
            rows.append(
                ["context", key, _text(value) if isinstance(value, str) else value, None, None, None, None]
            )
    return _document(BENCHMARK_COLUMNS, rows)


def _validate_memory(report: Any) -> None:
    from torchscan.report.validate.memory import validate_memory_report

    validate_memory_report(report)


def _validate_flop(report: Any) -> None:
    from torchscan.report.validate.operators import validate_flop_report

    validate_flop_report(report)


def _validate_analysis(report: Any) -> None:
    from torchscan.report.validate import validate_analysis_report

    validate_analysis_report(report)


def _validate_benchmark(report: Any) -> None:
    from torchscan.report.validate import validate_benchmark_report

    validate_benchmark_report(report)


CSV_TABLES: dict[str, tuple[Callable[[Any], None], Callable[[Any], str]]] = {
    "analysis": (_validate_analysis, analysis_csv),
    "flop": (_validate_flop, flop_csv),
    "memory": (_validate_memory, memory_csv),
    "benchmark": (_validate_benchmark, benchmark_csv),
}
"""Report kind -> (its validator, its CSV table): the kinds that have a table (views-3.md 3)."""


def render_csv(kind: str, report: Any, *, before: Any = None, metric: Any = None) -> str:
    """The CSV table of a validated report of ``kind``; ``ValueError`` for a kind without one, or for
    ``before=``/``metric=`` (a table holds one whole report)."""
    if kind not in CSV_TABLES:
        accepted = ", ".join(CSV_TABLES)
        raise ValueError(
            f"format 'csv' is not available for a {kind.replace('_', ' ')} report; use 'html' or 'svg' "
            f"(CSV tables: {accepted} reports)"
        )
    if before is not None:
        raise ValueError("before= is not available for CSV: a CSV table holds one report")
    if metric is not None:
        raise ValueError("metric= selects a view of HTML or SVG; a CSV table holds every metric")
    validate, table = CSV_TABLES[kind]
    validate(report)
    return table(report)
