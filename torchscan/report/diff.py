"""``metric_diff``: the difference of one metric between two reports (analysis.md 9); no torch import.

Shared by ``compare_reports`` and ``compare_benchmarks`` so both apply exactly the same rule.
"""

from __future__ import annotations

from typing import cast

from torchscan.report.diagnostics import diagnostic
from torchscan.report.schema import MetricDiff, MetricResult, Number, Status, in_float_range

# Stable code of the one diagnostic a MetricDiff can carry: both sides are complete and comparable,
# but their difference (e.g. 1.7e308 - (-1.7e308)) is beyond the float range, so no delta exists.
DELTA_OUT_OF_RANGE = "delta_out_of_range"


def checked_delta(before: Number, after: Number) -> Number | None:
    """``after - before``, or ``None`` when the difference is not a finite, float-representable number."""
    delta = after - before
    return delta if in_float_range(delta) else None


def metric_diff(before: MetricResult | None, after: MetricResult | None, metric: str = "") -> MetricDiff:
    """Compare two MetricResults; either may be ``None`` when a report lacks the metric.

    ``delta = after.value - before.value`` only when both are complete and share ``unit``, ``scope``
    and ``method`` (``status "complete"``). Otherwise ``delta`` is ``None`` and ``status`` is
    ``"partial"`` if either side is partial, else ``"unavailable"``. A missing delta means "not
    comparable", never "no change". ``before``/``after`` are copies, so the result shares no mutable
    object with the inputs.

    A difference beyond the float range (it would be ``inf``, which is not JSON) is ``unavailable``
    and the entry gets a ``diagnostics`` list with one ``delta_out_of_range`` entry for ``metric``.
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
        delta = checked_delta(cast(float, before["value"]), cast(float, after["value"]))
        if delta is None:
            message = "The difference of the two complete values is beyond the float range: no delta."
            return {
                "status": "unavailable",
                "delta": None,
                "before": kept_before,
                "after": kept_after,
                "diagnostics": [diagnostic(DELTA_OUT_OF_RANGE, message, metric=metric or "delta")],
            }
        return {"status": "complete", "delta": delta, "before": kept_before, "after": kept_after}
    sides = [side for side in (before, after) if side is not None]
    status: Status = "partial" if any(side["status"] == "partial" for side in sides) else "unavailable"
    return {"status": status, "delta": None, "before": kept_before, "after": kept_after}
