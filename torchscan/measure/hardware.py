"""Utilization figures of a measured workload, from the caller's stated peak (training-and-hardware.md 3).

TorchScan has no device table and never guesses a peak: every figure here divides only by numbers
the caller passed in ``hardware=``. The figures are pure functions of MetricResults already in the
report (operator FLOPs, their phases, block-average latency) and of the stated peak.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from torchscan.report.diagnostics import diagnostic
from torchscan.report.hardware import Labels, check_hardware
from torchscan.report.schema import Diagnostic, HardwareFacts, MetricResult, Status

THROUGHPUT_SCOPE = "warmed_block_average"
ACHIEVED_METHOD = "operator_flops_over_block_average_latency"
UTILIZATION_METHOD = "achieved_flops_over_stated_peak"
# Model FLOPs are the work the model needs: every phase except the forward that checkpointing re-runs.
MODEL_PHASES = ("forward", "backward", "optimizer")


def validate_hardware(hardware: object) -> HardwareFacts | None:
    """Check a ``hardware=`` argument (``None`` stays ``None``) and return a plain copy.

    See :func:`torchscan.report.hardware.check_hardware` for the errors, which name the key.
    """
    return None if hardware is None else check_hardware(hardware)


def _rate(flops: MetricResult, latency: MetricResult, divisor: float, labels: Labels) -> MetricResult | None:
    """``flops ÷ latency ÷ divisor`` with the FLOPs' status, or ``None`` when it cannot be formed."""
    if flops["status"] == "unavailable" or latency["status"] != "complete" or not latency["value"]:
        return None
    value = float(flops["known_value"]) / latency["value"] / divisor  # type: ignore[arg-type]
    if not math.isfinite(value):  # FLOPs near the float limit over a tiny latency: no number to report
        return None
    status: Status = "partial" if flops["status"] == "partial" else "complete"
    return labels(status, value)


def achieved_flops_per_second(flops: MetricResult, latency: MetricResult) -> MetricResult:
    """Operator FLOPs of one call ÷ block-average latency (unit ``FLOPs/s``).

    ``partial`` (a lower bound) when the FLOPs are partial; ``unavailable`` when the FLOPs or a
    complete latency are missing. Not a peak, not a kernel rate: one call's counted work over the
    warmed block-average time of that call, including everything else the call waited on.
    """
    labels = Labels("FLOPs/s", THROUGHPUT_SCOPE, ACHIEVED_METHOD)
    return _rate(flops, latency, 1, labels) or labels("unavailable")


def utilization(
    flops: MetricResult, latency: MetricResult, peak: float, metric: str
) -> tuple[MetricResult, list[Diagnostic]]:
    """``flops`` ÷ latency ÷ ``peak`` (unit ``ratio``); above 1 keeps its value and warns.

    A value above 1 means the stated peak or the FLOP count is wrong (``utilization_above_peak``);
    it is never clipped. A partial count gives a lower bound, so a known value above 1 warns too.
    """
    labels = Labels("ratio", THROUGHPUT_SCOPE, UTILIZATION_METHOD)
    result = _rate(flops, latency, peak, labels)
    if result is None:
        formed = flops["status"] != "unavailable" and latency["status"] == "complete" and latency["value"]
        if not formed:
            return labels("unavailable"), []
        # Formed but beyond the float range: a stated peak as small as 5e-324 FLOP/s does that.
        note = diagnostic(
            "utilization_out_of_range",
            f"{metric} under the stated peak exceeds the float range (the stated peak is extremely "
            "small): it is unavailable, not infinite",
            metric=metric,
        )
        return labels("unavailable"), [note]
    value = result["known_value"]
    assert value is not None
    if value <= 1:
        return result, []
    note = diagnostic(
        "utilization_above_peak",
        f"{metric} is {value:.3g} > 1: the stated peak or the FLOP count is wrong",
        metric=metric,
    )
    return result, [note]


def model_flops(flops: MetricResult, report: Mapping[str, Any]) -> MetricResult | None:
    """Operator FLOPs minus recompute, i.e. forward + backward + optimizer; ``None`` without ``by_phase``.

    The phases sum exactly to the total (training-and-hardware.md 1), so subtracting recompute is
    adding the other three: their known values give a lower bound even when recompute is partial.
    """
    phases = report.get("by_phase")
    if not isinstance(phases, Mapping):
        return None
    labels = Labels("FLOPs", flops["scope"], flops["method"])
    parts = [phases[name] for name in MODEL_PHASES]
    if flops["status"] == "unavailable" or any(part["status"] == "unavailable" for part in parts):
        return labels("unavailable")
    known = sum(part["known_value"] for part in parts)
    complete = all(part["status"] == "complete" for part in parts)
    return labels("complete" if complete else "partial", known)
