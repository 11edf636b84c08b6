"""``render_report`` of a MemoryReport (memory.md 4): checks, then the SVG timeline or the HTML page."""

from __future__ import annotations

from typing import Any

from torchscan.report.validate import report_kind


def render_memory_report(report: Any, before: Any, *, format: str, title: str) -> str:
    """Validate ``report`` (and ``before``) as MemoryReports and render them; ``ValueError`` otherwise.

    ``format="svg"`` draws the timeline of ``report`` alone (``before=`` is refused there: one figure
    shows one run); ``format="html"`` is the page, with the per-category deltas when ``before`` is
    given. A MemoryReport is never mixed with another report kind.
    """
    from torchscan.report.validate_memory import validate_memory_report

    if report_kind(report) != "memory":
        raise ValueError(
            f"before= is a MemoryReport but report is not (its kind is {report_kind(report)}); "
            "render two MemoryReports together"
        )
    if before is not None and report_kind(before) != "memory":
        raise ValueError("before= must be a MemoryReport when report is a MemoryReport")
    if format == "svg":
        if before is not None:
            raise ValueError("before= is not available for the SVG of a MemoryReport; use format='html'")
        validate_memory_report(report)
        from torchscan.views.memory_svg import timeline_svg

        return timeline_svg(report, title=title)
    from torchscan.views.memory_html import render_memory

    if before is None:
        validate_memory_report(report)
        return render_memory(report, title=title)
    from torchscan.report.memory_diff import compare_memory_reports

    diff = compare_memory_reports(before, report)  # validates both
    return render_memory(report, title=title, diff=diff, before=before)
