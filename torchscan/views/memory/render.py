"""``render_report`` of a MemoryReport (memory.md 4): checks, then the SVG timeline or the HTML page."""

from __future__ import annotations

from typing import Any

from torchscan.report.validate import report_kind


def render_memory_report(report: Any, before: Any, *, format: str, title: str) -> str:
    """Validate ``report`` (and ``before``) as MemoryReports and render them; ``ValueError`` otherwise.

    ``format="svg"`` draws the timeline of ``report`` (with ``before``, both runs one above the other on
    one bytes axis); ``format="html"`` is the page, with both timelines and the per-category deltas
    when ``before`` is given. A MemoryReport is never mixed with another report kind.
    """
    from torchscan.report.validate.memory import validate_memory_report

    if report_kind(report) != "memory":
        raise ValueError(
            f"before= is a MemoryReport but report is not (its kind is {report_kind(report)}); "
            "render two MemoryReports together"
        )
    if before is not None and report_kind(before) != "memory":
        raise ValueError("before= must be a MemoryReport when report is a MemoryReport")
    if format == "svg":
        from torchscan.views.memory.timeline_svg import comparison_svg, timeline_svg

        if before is None:
            validate_memory_report(report)
            return timeline_svg(report, title=title)
        from torchscan.report.memory_diff import compare_memory_reports

        compare_memory_reports(before, report)  # validates both, as the HTML comparison does
        return comparison_svg(before, report, title=title)
    from torchscan.views.memory.page import render_memory

    if before is None:
        validate_memory_report(report)
        return render_memory(report, title=title)
    from torchscan.report.memory_diff import compare_memory_reports

    diff = compare_memory_reports(before, report)  # validates both
    return render_memory(report, title=title, diff=diff, before=before)
