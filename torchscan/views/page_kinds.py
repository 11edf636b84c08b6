"""Which page renders which report kind (views-3.md 4): one table, kind -> page function.

``render_report`` classifies a report (:func:`torchscan.report.validate.report_kind`) and hands
every kind but the analysis explorer to :func:`render_page`. Each page function validates its
report, refuses the options that do not apply to it (``before=``, ``metric=``, an SVG it does not
have) with a ``ValueError`` saying so, and returns the document. A report of no known kind is
refused with the list of kinds that render. Pages are imported when used, so importing
``render_report`` stays light. Never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

ACCEPTED_KINDS = (
    ("analysis", "AnalysisReport (crawl_module)"),
    ("flop", "FlopReport (measure_flops)"),
    ("profile", "ProfileReport (profile_workload)"),
    ("benchmark", "BenchmarkReport (measure_latency, measure_workload)"),
    ("benchmark_comparison", "BenchmarkComparison (compare_benchmarks)"),
    ("merged", "merged report (merge_reports)"),
    ("generation", "GenerationReport (measure_generation)"),
    ("memory", "MemoryReport (measure_memory)"),
    ("scaling", "ScalingReport (measure_scaling)"),
)


def unknown_kind_message(report: Any) -> str:
    """The refusal of a report no page renders: what it is, and every kind that renders."""
    what = (
        f"an object with keys {', '.join(sorted(map(str, report))[:6])}"
        if isinstance(report, Mapping)
        else f"a {type(report).__name__}"
    )
    kinds = "; ".join(label for _, label in ACCEPTED_KINDS)
    return f"report is not a report kind render_report accepts (got {what:.120}); accepted kinds: {kinds}"


def _no_before(kind: str, before: Any) -> None:
    if before is not None:
        raise ValueError(
            f"before= is only for analysis and memory reports, not for a {kind.replace('_', ' ')} report"
            + ("; compare benchmarks with compare_benchmarks" if kind.startswith("benchmark") else "")
        )


def _no_metric(kind: str, metric: Any) -> None:
    if metric is not None:
        raise ValueError(f"metric= selects a view of an analysis report; a {kind} report has one view")


def _html_only(kind: str, format: str) -> None:
    if format != "html":
        raise ValueError(f"format {format!r} is not available for a {kind.replace('_', ' ')}; use 'html'")


def _flop(report: Any, *, format: str, before: Any, metric: Any, title: str) -> str:
    from torchscan.report.validate.operators import validate_flop_report
    from torchscan.views.flops.flop_page import flop_svg, render_flop_page

    _no_before("flop", before)
    _no_metric("flop", metric)
    validate_flop_report(report)
    return flop_svg(report, title=title) if format == "svg" else render_flop_page(report, title=title)


def _profile(report: Any, *, format: str, before: Any, metric: Any, title: str) -> str:
    from torchscan.report.validate.benchmark import validate_profile_report
    from torchscan.views.flops.profile_page import profile_svg, render_profile_page

    _no_before("profile", before)
    _no_metric("profile", metric)
    validate_profile_report(report)
    return profile_svg(report, title=title) if format == "svg" else render_profile_page(report, title=title)


def _benchmark(report: Any, *, format: str, before: Any, metric: Any, title: str) -> str:
    from torchscan.report.validate import validate_benchmark_report
    from torchscan.views.benchmark.page import render_benchmark

    _html_only("benchmark", format)
    _no_before("benchmark", before)
    validate_benchmark_report(report)  # metric= is ignored: a benchmark page has one view (render.md 1.2)
    return render_benchmark(report, title=title)


def _benchmark_comparison(report: Any, *, format: str, before: Any, metric: Any, title: str) -> str:
    from torchscan.report.validate import validate_benchmark_comparison
    from torchscan.views.benchmark.page import render_benchmark_comparison

    _html_only("benchmark_comparison", format)
    _no_before("benchmark_comparison", before)
    validate_benchmark_comparison(report)
    return render_benchmark_comparison(report, title=title)


def _merged(report: Any, *, format: str, before: Any, metric: Any, title: str) -> str:
    from torchscan.report.validate.merged import validate_merged_report
    from torchscan.views.merged.page import render_merged

    _html_only("merged", format)
    _no_before("merged", before)
    validate_merged_report(report)
    return render_merged(report, title=title)


def _generation(report: Any, *, format: str, before: Any, metric: Any, title: str) -> str:
    from torchscan.report.validate.generation import validate_generation_report
    from torchscan.views.generation.figure import generation_svg
    from torchscan.views.generation.page import render_generation

    _no_before("generation", before)
    _no_metric("generation", metric)
    validate_generation_report(report)
    return generation_svg(report, title=title) if format == "svg" else render_generation(report, title=title)


def _memory(report: Any, *, format: str, before: Any, metric: Any, title: str) -> str:
    from torchscan.views.memory.render import render_memory_report

    return render_memory_report(report, before, format=format, title=title)  # metric does not apply


def _scaling(report: Any, *, format: str, before: Any, metric: Any, title: str) -> str:
    from torchscan.report.validate.scaling import validate_scaling_report
    from torchscan.views.scaling.figure import scaling_svg
    from torchscan.views.scaling.page import render_scaling

    _no_before("scaling", before)
    _no_metric("scaling", metric)
    validate_scaling_report(report)
    return scaling_svg(report, title=title) if format == "svg" else render_scaling(report, title=title)


PageFunction = Callable[..., str]
PAGES: dict[str, PageFunction] = {
    "flop": _flop,
    "profile": _profile,
    "benchmark": _benchmark,
    "benchmark_comparison": _benchmark_comparison,
    "merged": _merged,
    "generation": _generation,
    "memory": _memory,
    "scaling": _scaling,
}
"""Every report kind but ``analysis`` (rendered by ``render_report`` itself), to its page function."""


def render_page(kind: str, report: Any, *, format: str, before: Any, metric: Any, title: str) -> str:
    """The document of ``report`` (already classified as ``kind``) in ``format``."""
    page = PAGES.get(kind)
    if page is None:
        raise ValueError(unknown_kind_message(report))
    return page(report, format=format, before=before, metric=metric, title=title)
