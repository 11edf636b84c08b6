"""``render_report``: offline HTML/SVG evidence for saved reports (render.md 1).

A view over a report that already exists: it never runs a model, re-measures, touches files or the
network, and never imports torch. The same arguments always give byte-identical output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.report.validate import (
    check_text,
    report_kind,
    validate_analysis_report,
    validate_benchmark_comparison,
    validate_benchmark_report,
)
from torchscan.views.default_view import most_complete_view
from torchscan.views.geometry import VIEWS

FORMATS = ("html", "svg")


def _check_options(format: Any, metric: Any, title: Any) -> None:
    if not isinstance(format, str) or format not in FORMATS:
        raise ValueError(f"format must be 'html' or 'svg', got {format!r:.60}")
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
    with the peak marked, or an HTML page embedding it with the categories at the peak, per-phase
    peaks and the top module calls by saved activations; ``before=`` another MemoryReport adds
    per-category deltas to the HTML page (``metric`` does not apply).
    A ``ScalingReport`` of ``measure_scaling`` → an SVG of log-log panels (each metric against each
    axis, a line per top operator), or an HTML page embedding it with the fits, the per-operator and
    per-module-type fits and the points (no ``before=``, no ``metric=``).

    Everything is validated first (``ValueError`` naming the location of a problem). The output
    loads nothing from outside the document, escapes every report string, and is byte-identical for
    equal arguments. It shows recorded evidence only: an unknown value is never drawn as zero, a
    lower bound never as a full value, and FLOPs say nothing about latency or memory.
    """
    _check_options(format, metric, title)
    kind = report_kind(report)
    if kind == "generation":  # generation.md 3: per-step FLOPs and bytes against context length
        return _render_generation(report, format, before, metric, title)
    if kind == "scaling":  # attention-and-scaling.md 2: log-log plots of each metric against each axis
        return _render_scaling(report, format, before, metric, title)
    if kind == "memory" or (before is not None and report_kind(before) == "memory"):
        from torchscan.views.memory_render import render_memory_report

        return render_memory_report(report, before, format=format, title=title)
    if kind != "analysis":
        if format != "html":
            raise ValueError(f"format {format!r} is not available for a {kind.replace('_', ' ')}; use 'html'")
        if before is not None:
            raise ValueError(
                "before= is only for analysis reports; compare benchmarks with compare_benchmarks"
            )
        if kind == "merged":  # distributed.md 4: per-rank bars of executed FLOPs and latency
            from torchscan.report.validate_merged import validate_merged_report
            from torchscan.views.merged_html import render_merged

            validate_merged_report(report)
            return render_merged(report, title=title)
        from torchscan.views.benchmark_html import render_benchmark, render_benchmark_comparison

        if kind == "benchmark":
            validate_benchmark_report(report)
            return render_benchmark(report, title=title)
        validate_benchmark_comparison(report)
        return render_benchmark_comparison(report, title=title)
    validate_analysis_report(report)
    diff: Mapping[str, Any] | None = None
    gate: list[str] = []
    if before is not None:
        validate_analysis_report(before, "before")
        from torchscan.views.comparison import checked_diff, gate_reasons

        gate = gate_reasons(before, report)
        diff = checked_diff(before, report, gate)
    if format == "svg":
        from torchscan.views.svg import render_svg

        # A snapshot keeps the historical default so saved SVGs stay comparable across versions.
        metric = metric or "module_flops"
        return render_svg(report, before, diff, gate, title=title, metric=metric)
    from torchscan.views.html import render_explorer

    if metric is None:
        metric = most_complete_view(report)
    return render_explorer(report, before, diff, gate, title=title, metric=metric)


def _render_generation(report: Any, format: str, before: Any, metric: Any, title: str) -> str:
    from torchscan.report.validate_generation import validate_generation_report
    from torchscan.views.generation_html import render_generation
    from torchscan.views.generation_svg import generation_svg

    if before is not None:
        raise ValueError("before= is only for analysis reports, not for a generation report")
    if metric is not None:
        raise ValueError("metric= selects a view of an analysis report; a generation report has one view")
    validate_generation_report(report)
    if format == "svg":
        return generation_svg(report)
    return render_generation(report, title=title)


def _render_scaling(report: Any, format: str, before: Any, metric: Any, title: str) -> str:
    from torchscan.report.validate_scaling import validate_scaling_report
    from torchscan.views.scaling_html import render_scaling
    from torchscan.views.scaling_svg import scaling_svg

    if before is not None:
        raise ValueError("before= is only for analysis and memory reports, not for a scaling report")
    if metric is not None:
        raise ValueError("metric= selects a view of an analysis report; a scaling report shows every metric")
    validate_scaling_report(report)
    if format == "svg":
        return scaling_svg(report)
    return render_scaling(report, title=title)
