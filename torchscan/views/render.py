"""``render_report``: offline HTML/SVG evidence for saved reports (render.md 1).

A view over a report that already exists: it never runs a model, re-measures, touches files or the
network, and never imports torch. The same arguments always give byte-identical output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.report.validate import check_text, report_kind, validate_analysis_report
from torchscan.views.analysis.default_view import most_complete_view
from torchscan.views.analysis.geometry import VIEWS
from torchscan.views.page_kinds import unknown_kind_message

FORMATS = ("html", "svg", "csv")


def _check_options(format: Any, metric: Any, title: Any) -> None:
    if not isinstance(format, str) or format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(map(repr, FORMATS))}, got {format!r:.60}")
    if metric is not None and (not isinstance(metric, str) or metric not in VIEWS):
        raise ValueError(f"metric must be one of {', '.join(VIEWS)}, got {metric!r:.60}")
    if not isinstance(title, str):
        raise ValueError(f"title must be a str, got {type(title).__name__}")
    check_text(title, "title")


def render_report(
    report: Any,
    *,
    format: str = "html",
    before: Any = None,
    title: str = "TorchScan analysis",
    metric: str | None = None,
) -> str:
    """Render a saved report as one self-contained document and return it as text.

    ``AnalysisReport`` → an interactive HTML module cost explorer (``format="html"``) or a static
    SVG snapshot of the ``metric`` view (``format="svg"``); with ``before=`` another AnalysisReport,
    both show a before/after comparison through ``compare_reports``. ``BenchmarkReport``,
    ``BenchmarkComparison`` and a merged report of ``merge_reports`` (per-rank bars of executed FLOPs
    and latency) → an HTML page (no SVG, no ``before=``). A ``GenerationReport`` of
    ``measure_generation`` → an SVG of per-step FLOPs and bytes against context length, or an HTML
    page embedding it with the step table (no ``before=``, no ``metric=``). ``metric=None`` (the
    default) opens the most complete compute view of ``report`` in HTML (see
    ``most_complete_view``) and the Module FLOPs view in SVG.
    A ``MemoryReport`` of ``measure_memory`` → an SVG stacked-area timeline of live bytes by category
    with the peak marked, or an HTML page embedding it (zoom and hover) with the categories at the
    peak, per-phase peaks, a per-module view and the top module calls by the bytes they created
    themselves; ``before=`` another MemoryReport draws both timelines on one bytes axis (HTML and
    SVG) and adds per-category deltas to the HTML page (``metric`` does not apply).
    A ``FlopReport`` of ``measure_flops`` → a page of operators, phases and inclusive module labels
    with their shares of the total, or its SVG figure; a ``ProfileReport`` of ``profile_workload`` →
    a page of operators by self time, or its SVG figure (no ``before=``, no ``metric=``).
    ``title`` is the title of every kind's page and figure. A report of no known kind is refused
    with a ``ValueError`` that names the kinds that render.
    A ``ScalingReport`` of ``measure_scaling`` → an SVG of log-log panels (each metric against each
    axis, a line per top operator), or an HTML page embedding it with the fits, the per-operator and
    per-module-type fits and the points (no ``before=``, no ``metric=``).

    ``format="csv"`` (views-3.md 3) → one CSV table of an analysis (a row per layer call), FLOP (a
    row per operator, phase and module), memory (timeline points and module calls) or benchmark
    report (no ``before=``, no ``metric=``); other kinds have no table.

    Everything is validated first (``ValueError`` naming the location of a problem). The output
    loads nothing from outside the document, escapes every report string, and is byte-identical for
    equal arguments. It shows recorded evidence only: an unknown value is never drawn as zero, a
    lower bound never as a full value, and FLOPs say nothing about latency or memory.
    """
    _check_options(format, metric, title)
    kind = report_kind(report)
    if before is not None and kind != "memory" and report_kind(before) == "memory":
        kind = "memory"  # the memory page names the mismatch
    if format == "csv":  # views-3.md 3: the same data as one table, for spreadsheets and dashboards
        from torchscan.views.csv_report import render_csv

        return render_csv(kind, report, before=before, metric=metric)
    if kind != "analysis":
        from torchscan.views.page_kinds import render_page

        return render_page(kind, report, format=format, before=before, metric=metric, title=title)
    if not isinstance(report, Mapping) or "layers" not in report:
        raise ValueError(unknown_kind_message(report))
    validate_analysis_report(report)
    diff: Mapping[str, Any] | None = None
    gate: list[str] = []
    if before is not None:
        validate_analysis_report(before, "before")
        from torchscan.views.comparison.gate import checked_diff, gate_reasons

        gate = gate_reasons(before, report)
        diff = checked_diff(before, report, gate)
    if format == "svg":
        from torchscan.views.analysis.snapshot import render_svg

        # A snapshot keeps the historical default so saved SVGs stay comparable across versions.
        metric = metric or "module_flops"
        return render_svg(report, before, diff, gate, title=title, metric=metric)
    from torchscan.views.analysis.explorer import render_explorer

    if metric is None:
        metric = most_complete_view(report)
    return render_explorer(report, before, diff, gate, title=title, metric=metric)
