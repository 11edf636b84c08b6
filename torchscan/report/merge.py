"""``merge_reports``: one report from the per-rank reports of one distributed job (distributed.md 4).

Pure and torch-free, like ``compare_reports``: it reads validated reports and builds a new dict.
Executed work and communication bytes are summed over ranks; the logical total is taken once (every
rank must agree on it); latency is the slowest rank's (a step ends when the slowest rank ends);
memory is the maximum over ranks (processes do not pool memory), never a sum.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from torchscan.report.diagnostics import diagnostic
from torchscan.report.schema import (
    NOT_APPLICABLE,
    SCHEMA_VERSION,
    Diagnostic,
    MergedReport,
    MetricResult,
    RankTotals,
    metric_result,
)
from torchscan.report.validate import (
    report_kind,
    validate_analysis_report,
    validate_benchmark_report,
)
from torchscan.report.validate.operators import validate_flop_report

SUM_SCOPE = "sum_over_ranks"
MAX_SCOPE = "max_over_ranks"
IMBALANCE_METHOD = "max_over_mean"
MAXIMUM_TOTALS = ("latency", "peak_memory", "process_peak_rss")
MAX_RANGES = 16  # runs of missing ranks named in the missing_ranks message; the rest are counted


def _kind(report: Any, index: int) -> str:
    """``flop``, ``analysis`` or ``benchmark``; anything else is refused."""
    where = f"reports[{index}]"
    if not isinstance(report, dict):
        raise ValueError(f"{where} is not a report (got {type(report).__name__})")
    kind = report_kind(report)
    if kind == "benchmark":
        validate_benchmark_report(report, where)
        return kind
    if "layers" in report:
        validate_analysis_report(report, where)
        return "analysis"
    if kind == "flop":
        validate_flop_report(report, where)
        return "flop"
    raise ValueError(f"{where} is not a FlopReport, AnalysisReport or BenchmarkReport")


def _flop_part(report: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The operator FLOP report inside a report of ``kind`` (``None`` when it has none)."""
    if kind == "flop":
        return report
    return report.get("operator_flops")


def _distributed(report: dict[str, Any], kind: str, index: int) -> dict[str, Any]:
    context = report["context"].get("distributed")
    if context is None and kind == "analysis" and isinstance(report.get("operator_flops"), dict):
        context = report["operator_flops"]["context"].get("distributed")
    if context is None:
        raise ValueError(
            f"reports[{index}] has no context.distributed: it was not produced inside an initialized "
            "torch.distributed process group"
        )
    return context


def _rank_totals(report: dict[str, Any], kind: str) -> dict[str, MetricResult]:
    """One rank's totals as merged: its own totals, plus logical FLOPs and communication bytes."""
    totals: dict[str, MetricResult] = {} if kind == "flop" else copy.deepcopy(report["totals"])
    flops = _flop_part(report, kind)
    if flops is not None:
        totals["operator_flops"] = copy.deepcopy(flops["total"])
        if "logical_total" in flops:
            totals["logical_operator_flops"] = copy.deepcopy(flops["logical_total"])
        if "communication" in flops:
            totals["communication_bytes"] = copy.deepcopy(flops["communication"]["total_bytes"])
    return totals


def _rank_diagnostics(report: dict[str, Any], rank: int) -> list[Diagnostic]:
    """One rank's diagnostics, each tagged with its ``rank`` (truth rule 2: they explain its gaps).

    Analysis and benchmark reports already hold their operator report's diagnostics at the top.
    """
    tagged: list[Diagnostic] = []
    for entry in report.get("diagnostics", ()):
        copied: Diagnostic = copy.deepcopy(entry)
        copied["rank"] = rank
        tagged.append(copied)
    return tagged


def _ranges(ranks: list[int], world_size: int) -> tuple[int, list[str]]:
    """The ranks of ``range(world_size)`` absent from sorted ``ranks``: their count and, at most
    ``MAX_RANGES``, their runs (``"2"``, ``"5-9"``).

    Walks the gaps between the given ranks, so time and memory follow the number of reports, never
    ``world_size`` (a stated world size of 10**12 must not allocate a set of that size).
    """
    runs: list[str] = []
    gaps = 0
    previous = -1
    for rank in [*ranks, world_size]:
        if rank > previous + 1:
            gaps += 1
            if len(runs) < MAX_RANGES:
                first, last = previous + 1, rank - 1
                runs.append(str(first) if first == last else f"{first}-{last}")
        previous = rank
    if gaps > len(runs):
        runs.append(f"and {gaps - len(runs)} more ranges")
    return world_size - len(ranks), runs


def _labels(results: list[MetricResult], name: str, diagnostics: list[Diagnostic]) -> tuple[str, str] | None:
    """The shared ``(unit, method)`` of one metric over ranks; ``None`` (with a diagnostic) if mixed."""
    labels = {(r["unit"], r["method"]) for r in results}
    if len(labels) == 1:
        return labels.pop()
    diagnostics.append(
        diagnostic("mixed_rank_labels", f"Ranks report {name} with different units or methods.", metric=name)
    )
    return None


def _combine(
    name: str, results: list[MetricResult], missing: bool, scope: str, diagnostics: list[Diagnostic]
) -> MetricResult:
    """Sum (``sum_over_ranks``) or maximum (``max_over_ranks``) of one metric over the ranks present.

    Complete only when every rank is present and complete; a partial or missing rank leaves a lower
    bound (the sum or maximum of the known values); nothing known leaves it unavailable.
    """
    labels = _labels(results, name, diagnostics)
    if labels is None:
        return metric_result("unavailable", unit=results[0]["unit"], scope=scope, method=NOT_APPLICABLE)
    unit, method = labels
    known = [r["known_value"] for r in results if r["known_value"] is not None]
    if not known:
        return metric_result("unavailable", unit=unit, scope=scope, method=method)
    value = sum(known) if scope == SUM_SCOPE else max(known)
    complete = not missing and all(r["status"] == "complete" for r in results)
    return metric_result("complete" if complete else "partial", value, unit=unit, scope=scope, method=method)


def _logical(results: list[MetricResult | None], diagnostics: list[Diagnostic]) -> MetricResult | None:
    """The logical total, taken once: every rank must report the same one."""
    present = [r for r in results if r is not None]
    if not present:
        return None
    first = present[0]
    same = len(present) == len(results) and all(
        (r["status"], r["known_value"], r["unit"], r["method"])
        == (first["status"], first["known_value"], first["unit"], first["method"])
        for r in present
    )
    if same:
        return copy.deepcopy(first)  # scope global: the logical work is the job's, counted once
    diagnostics.append(
        diagnostic(
            "logical_total_mismatch",
            "Ranks disagree on the logical total of the job (or only some ranks report one); "
            "no single logical total can be given.",
            metric="logical_operator_flops",
        )
    )
    return metric_result("unavailable", unit="FLOPs", scope="global", method=first["method"])


def _imbalance(name: str, results: list[MetricResult], missing: bool) -> MetricResult:
    """max ÷ mean over ranks; only from complete values of every rank (a ratio of bounds is no bound)."""
    if missing or not results or any(r["status"] != "complete" for r in results):
        return metric_result("unavailable", unit="ratio", scope="over_ranks", method=IMBALANCE_METHOD)
    values: list[Any] = [r["value"] for r in results]
    mean = sum(values) / len(values)
    if mean <= 0:
        return metric_result("unavailable", unit="ratio", scope="over_ranks", method=IMBALANCE_METHOD)
    ratio = max(values) / mean
    return metric_result("complete", ratio, unit="ratio", scope="over_ranks", method=IMBALANCE_METHOD)


def _check_same_job(reports: Sequence[dict[str, Any]], kinds: list[str]) -> tuple[int, list[int]]:
    """The job's world size and the ranks given; refuses mixtures and duplicates."""
    if len(set(kinds)) > 1:
        mixed = ", ".join(sorted(set(kinds)))
        raise ValueError(f"reports mix report types ({mixed}); merge one type at a time")
    contexts = [_distributed(report, kinds[i], i) for i, report in enumerate(reports)]
    sizes = sorted({c["world_size"] for c in contexts})
    if len(sizes) > 1:
        raise ValueError(f"reports mix world sizes {sizes}: they are not the ranks of one job")
    ranks = [c["rank"] for c in contexts]
    duplicates = sorted({rank for rank in ranks if ranks.count(rank) > 1})
    if duplicates:
        raise ValueError(f"duplicate ranks {duplicates}: each rank must be merged exactly once")
    if kinds[0] == "benchmark":
        units = {report["context"].get("work_unit") for report in reports}
        if len(units) > 1:
            raise ValueError("benchmark reports mix work units: they do not time the same workload")
    if kinds[0] == "analysis" and len({report["context"].get("model_type") for report in reports}) > 1:
        raise ValueError("analysis reports mix model types: they do not describe the same model")
    conventions = set()
    for report in reports:
        flops = _flop_part(report, kinds[0])
        if flops is not None:
            context = flops.get("context", {})
            conventions.add((context.get("method"), context.get("counting_convention")))
    if len(conventions) > 1:
        raise ValueError("reports mix FLOP counting methods or conventions: their counts do not add up")
    return sizes[0], ranks


def merge_reports(reports: Sequence[Any]) -> MergedReport:
    """Merge the per-rank reports of one ``torch.distributed`` job into one ``merged`` report.

    ``reports``: FlopReports, AnalysisReports or BenchmarkReports (one type), each made inside an
    initialized process group (``context.distributed``), every rank at most once, one world size.

    ``totals.operator_flops`` is the executed work summed over ranks; ``logical_operator_flops`` the
    job's logical work (taken once, ranks must agree); ``communication_bytes`` the bytes ranks handed
    to collectives, summed — not wire traffic. Benchmark ``latency`` is the slowest rank's block
    average, ``peak_memory``/``process_peak_rss`` the largest rank's (scope ``max_over_ranks``):
    memory never pools across processes, so it is never summed. A missing rank makes those totals
    partial (lower bounds) with a ``missing_ranks`` diagnostic that names them as capped runs
    (``[2, 5-9]``), so its cost follows the reports given, not the stated world size. Each rank's own
    diagnostics follow, each with a ``rank`` key. ``imbalance`` is max ÷ mean over ranks.
    ``per_rank`` keeps each rank's totals unchanged. The inputs are not modified.

    Raises ``TypeError`` when ``reports`` is not a list or tuple, and ``ValueError`` naming the
    problem for an empty list, a non-report, mixed types or world sizes, duplicate ranks, or a
    report without ``context.distributed``.
    """
    if not isinstance(reports, list | tuple):
        raise TypeError(f"reports must be a list or tuple of reports, got {type(reports).__name__}")
    if not reports:
        raise ValueError("reports is empty: give the reports of the ranks to merge")
    kinds = [_kind(report, index) for index, report in enumerate(reports)]
    world_size, ranks = _check_same_job(reports, kinds)
    kind = kinds[0]
    order = sorted(range(len(reports)), key=lambda i: ranks[i])
    per_rank: list[RankTotals] = [{"rank": ranks[i], "totals": _rank_totals(reports[i], kind)} for i in order]
    count, absent = _ranges(sorted(ranks), world_size)
    missing = count > 0
    diagnostics: list[Diagnostic] = []
    if missing:
        diagnostics.append(
            diagnostic(
                "missing_ranks",
                f"Reports of {count} rank(s) are missing: ranks [{', '.join(absent)}] (world size "
                f"{world_size}): summed and maximum totals are lower bounds.",
                metric="totals",
            )
        )
    for i in order:  # each rank's own diagnostics, with its rank: merging hides none of them
        diagnostics.extend(_rank_diagnostics(reports[i], ranks[i]))
    totals: dict[str, MetricResult] = {}
    imbalance: dict[str, MetricResult] = {}
    rank_totals = [entry["totals"] for entry in per_rank]

    def gathered(name: str) -> list[MetricResult] | None:
        values = [t.get(name) for t in rank_totals]
        return values if all(v is not None for v in values) else None  # type: ignore[return-value]

    executed = gathered("operator_flops")
    if executed is not None:
        totals["operator_flops"] = _combine("operator_flops", executed, missing, SUM_SCOPE, diagnostics)
        imbalance["operator_flops"] = _imbalance("operator_flops", executed, missing)
    logical = _logical([t.get("logical_operator_flops") for t in rank_totals], diagnostics)
    if logical is not None:
        totals["logical_operator_flops"] = logical
    communication = gathered("communication_bytes")
    if communication is not None:
        totals["communication_bytes"] = _combine(
            "communication_bytes", communication, missing, SUM_SCOPE, diagnostics
        )
    if kind == "benchmark":
        for name in MAXIMUM_TOTALS:
            results = gathered(name)
            if results is not None:
                totals[name] = _combine(name, results, missing, MAX_SCOPE, diagnostics)
        latency = gathered("latency")
        if latency is not None:
            imbalance["latency"] = _imbalance("latency", latency, missing)
    return {
        "schema_version": SCHEMA_VERSION,
        "report_type": "merged",
        "merged_type": kind,  # type: ignore[typeddict-item]
        "ranks": sorted(ranks),
        "world_size": world_size,
        "totals": totals,
        "imbalance": imbalance,
        "per_rank": per_rank,
        "diagnostics": diagnostics,
    }
