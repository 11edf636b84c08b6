"""``metric_diff``: the difference of one metric between two reports (analysis.md 9); no torch import.

Shared by ``compare_reports`` and ``compare_benchmarks`` so both apply exactly the same rule.
"""

from __future__ import annotations

from typing import cast

from torchscan.report.schema import MetricDiff, MetricResult, Status


def metric_diff(before: MetricResult | None, after: MetricResult | None) -> MetricDiff:
    """Compare two MetricResults; either may be ``None`` when a report lacks the metric.

    ``delta = after.value - before.value`` only when both are complete and share ``unit``, ``scope``
    and ``method`` (``status "complete"``). Otherwise ``delta`` is ``None`` and ``status`` is
    ``"partial"`` if either side is partial, else ``"unavailable"``. A missing delta means "not
    comparable", never "no change". ``before``/``after`` are copies, so the result shares no mutable
    object with the inputs.
    """
    kept_before = None if before is None else cast(MetricResult, dict(before))
    kept_after = None if after is None else cast(MetricResult, dict(after))
    if (
        before is not None
        and after is not None
        and before["status"] == "complete"
        and after["status"] == "complete"
        and before["unit"] == after["unit"]
        and before["scope"] == after["scope"]
        and before["method"] == after["method"]
    ):
        delta = cast(float, after["value"]) - cast(float, before["value"])
        return {"status": "complete", "delta": delta, "before": kept_before, "after": kept_after}
    sides = [side for side in (before, after) if side is not None]
    status: Status = "partial" if any(side["status"] == "partial" for side in sides) else "unavailable"
    return {"status": status, "delta": None, "before": kept_before, "after": kept_after}
