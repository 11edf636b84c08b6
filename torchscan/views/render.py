"""``render_report``: offline HTML/SVG evidence and CSV tables for saved reports (render.md 1, views-3.md 3).

A view over a report that already exists: it never runs a model, re-measures, touches files or the
network, and never imports torch. The same arguments always give byte-identical output.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torchscan.report.validate import (
    check_text,
    flop_shaped,
    report_kind,
    validate_analysis_report,
    validate_benchmark_comparison,
    validate_benchmark_report,
)
from torchscan.report.validate_operators import validate_flop_report
from torchscan.views.csv_report import analysis_csv, benchmark_csv, flop_csv, memory_csv
from torchscan.views.default_view import most_complete_view
from torchscan.views.geometry import VIEWS

FORMATS = ("html", "svg", "csv")


def _check_options(format: Any, metric: Any, title: Any) -> None:
    if not isinstance(format, str) or format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(map(repr, FORMATS))}, got {format!r:.60}")
    if metric is not None and (not isinstance(metric, str) or metric not in VIEWS):
        raise ValueError(f"metric must be one of {', '.join(VIEWS)}, got {metric!r:.60}")
    if not isinstance(title, str):
        raise ValueError(f"title must be a str, got {type(title).__name__}")
    check_text(title, "title")


def render_kind(report: Any) -> str:
    """The kind that picks a renderer: :func:`report_kind`'s, or ``flop`` for a standalone FlopReport."""
    kind = report_kind(report)
    return "flop" if kind == "analysis" and flop_shaped(report) else kind


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

    ``format="csv"`` (views-3.md 3) writes the same data as one CSV table (no ``before=``, no
    ``metric=``; ``title`` does not apply): an AnalysisReport one row per layer row, a FlopReport one
    row per operator, phase and module label, a MemoryReport one row per timeline point and module
    call, a BenchmarkReport its totals, raw blocks and context (``torchscan.views.csv_report``).
    Which kind renders in which format is :data:`RENDERERS`; anything else is a ``ValueError``
    naming the formats the kind accepts.

    Everything is validated first (``ValueError`` naming the location of a problem). The output
    loads nothing from outside the document, escapes every report string, and is byte-identical for
    equal arguments. It shows recorded evidence only: an unknown value is never drawn as zero, a
    lower bound never as a full value, and FLOPs say nothing about latency or memory.
    """
    _check_options(format, metric, title)
    kind = render_kind(report)
    if kind != "memory" and before is not None and report_kind(before) == "memory":
        kind = "memory"  # render_memory_report explains the mismatch
    renderers = RENDERERS[kind]
    if format not in renderers:
        accepted = ", ".join(repr(name) for name in renderers)
        raise ValueError(
            f"format {format!r} is not available for a {kind.replace('_', ' ')} report; use {accepted}"
        )
    return renderers[format](report, before, format, metric, title)


Renderer = Callable[[Any, Any, str, "str | None", str], str]


def _no_before(kind: str, before: Any) -> None:
    if before is not None:
        hint = "compare benchmarks with compare_benchmarks" if "benchmark" in kind else "render one report"
        raise ValueError(f"before= is only for analysis and memory reports, not for a {kind} report; {hint}")


def _analysis(report: Any, before: Any, format: str, metric: str | None, title: str) -> str:
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
        return render_svg(report, before, diff, gate, title=title, metric=metric or "module_flops")
    from torchscan.views.html import render_explorer

    if metric is None:
        metric = most_complete_view(report)
    return render_explorer(report, before, diff, gate, title=title, metric=metric)


def _benchmark(report: Any, before: Any, format: str, metric: str | None, title: str) -> str:
    from torchscan.views.benchmark_html import render_benchmark

    _no_before("benchmark", before)
    validate_benchmark_report(report)
    return render_benchmark(report, title=title)


def _benchmark_comparison(report: Any, before: Any, format: str, metric: str | None, title: str) -> str:
    from torchscan.views.benchmark_html import render_benchmark_comparison

    _no_before("benchmark comparison", before)
    validate_benchmark_comparison(report)
    return render_benchmark_comparison(report, title=title)


def _merged(report: Any, before: Any, format: str, metric: str | None, title: str) -> str:
    # distributed.md 4: per-rank bars of executed FLOPs and latency
    from torchscan.report.validate_merged import validate_merged_report
    from torchscan.views.merged_html import render_merged

    _no_before("merged", before)
    validate_merged_report(report)
    return render_merged(report, title=title)


def _generation(report: Any, before: Any, format: str, metric: str | None, title: str) -> str:
    # generation.md 3: per-step FLOPs and bytes against context length
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


def _scaling(report: Any, before: Any, format: str, metric: str | None, title: str) -> str:
    from torchscan.report.validate_scaling import validate_scaling_report
    from torchscan.views.scaling_html import render_scaling
    from torchscan.views.scaling_svg import scaling_svg

    _no_before("scaling", before)
    if metric is not None:
        raise ValueError("metric= selects a view of an analysis report; a scaling report shows every metric")
    validate_scaling_report(report)
    if format == "svg":
        return scaling_svg(report)
    return render_scaling(report, title=title)


def _memory(report: Any, before: Any, format: str, metric: str | None, title: str) -> str:
    from torchscan.views.memory_render import render_memory_report

    return render_memory_report(report, before, format=format, title=title)


def _csv(validate: Callable[[Any], None], table: Callable[[Any], str], kind: str) -> Renderer:
    """A CSV renderer: one table of the validated report (views-3.md 3)."""

    def render(report: Any, before: Any, format: str, metric: str | None, title: str) -> str:
        if before is not None:
            raise ValueError("before= is not available for CSV: a CSV table holds one report")
        if metric is not None:
            raise ValueError("metric= selects a view of HTML or SVG; a CSV table holds every metric")
        validate(report)
        return table(report)

    render.__name__ = f"render_{kind}_csv"
    return render


def _validate_memory(report: Any) -> None:
    from torchscan.report.validate_memory import validate_memory_report

    validate_memory_report(report)


# Report kind -> format -> renderer. A new page registers here (and ``render_kind`` learns its kind).
RENDERERS: dict[str, dict[str, Renderer]] = {
    "analysis": {
        "html": _analysis,
        "svg": _analysis,
        "csv": _csv(validate_analysis_report, analysis_csv, "analysis"),
    },
    "benchmark": {"html": _benchmark, "csv": _csv(validate_benchmark_report, benchmark_csv, "benchmark")},
    "benchmark_comparison": {"html": _benchmark_comparison},
    "merged": {"html": _merged},
    "generation": {"html": _generation, "svg": _generation},
    "memory": {"html": _memory, "svg": _memory, "csv": _csv(_validate_memory, memory_csv, "memory")},
    "flop": {"csv": _csv(validate_flop_report, flop_csv, "flop")},
    "scaling": {"html": _scaling, "svg": _scaling},
}
