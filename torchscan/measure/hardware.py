"""Hardware facts the caller states, and the pure figures derived from them (training-and-hardware.md 3).

TorchScan has no device table and never guesses a peak: every figure here divides only by numbers
the caller passed in ``hardware=``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from torchscan.report.diagnostics import diagnostic
from torchscan.report.schema import Diagnostic, MetricResult, metric_result

REQUIRED_KEYS = ("name", "peak_flops_per_second")
OPTIONAL_KEYS = ("memory_bandwidth_bytes_per_second",)
RATE_KEYS = ("peak_flops_per_second", "memory_bandwidth_bytes_per_second")
THROUGHPUT_SCOPE = "warmed_block_average"
UTILIZATION_METHOD = "operator_flops_over_block_average_latency"


def validate_hardware(hardware: object) -> dict[str, Any] | None:
    """Check a ``hardware=`` mapping and return a plain copy (``None`` stays ``None``).

    Not a mapping, a non-string name or a bool rate is a ``TypeError``; unknown or missing keys and
    rates that are not finite and positive are a ``ValueError`` naming the key.
    """
    if hardware is None:
        return None
    if not isinstance(hardware, Mapping):
        raise TypeError(f"hardware must be a mapping, got {type(hardware).__name__}")
    unknown = sorted(str(key) for key in hardware if key not in REQUIRED_KEYS + OPTIONAL_KEYS)
    if unknown:
        raise ValueError(f"hardware has unknown keys {unknown}; allowed: {', '.join(REQUIRED_KEYS + OPTIONAL_KEYS)}")
    for key in REQUIRED_KEYS:
        if key not in hardware:
            raise ValueError(f"hardware is missing the key {key!r}")
    if not isinstance(hardware["name"], str):
        raise TypeError(f"hardware['name'] must be a str, got {type(hardware['name']).__name__}")
    checked: dict[str, Any] = {"name": hardware["name"]}
    for key in RATE_KEYS:
        if key not in hardware:
            continue
        value = hardware[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"hardware[{key!r}] must be a number, got {type(value).__name__}")
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"hardware[{key!r}] must be finite and > 0, got {value!r}")
        checked[key] = value
    return checked


def _number(result: MetricResult) -> float | None:
    return result["known_value"]


def achieved_flops_per_second(flops: MetricResult, latency: MetricResult) -> MetricResult:
    """Operator FLOPs per call ÷ block-average latency; a lower bound when the FLOPs are partial."""
    labels = {"unit": "FLOPs/s", "scope": THROUGHPUT_SCOPE, "method": UTILIZATION_METHOD}
    if flops["status"] == "unavailable" or latency["status"] != "complete" or not latency["value"]:
        return metric_result("unavailable", **labels)
    value = _number(flops) / latency["value"]  # type: ignore[operator]
    return metric_result("partial" if flops["status"] == "partial" else "complete", value, **labels)


def utilization(
    flops: MetricResult, latency: MetricResult, peak: float, metric: str
) -> tuple[MetricResult, list[Diagnostic]]:
    """``flops`` ÷ latency ÷ ``peak`` (unit ``ratio``); above 1 keeps its value and warns."""
    labels = {"unit": "ratio", "scope": THROUGHPUT_SCOPE, "method": UTILIZATION_METHOD}
    if flops["status"] == "unavailable" or latency["status"] != "complete" or not latency["value"]:
        return metric_result("unavailable", **labels), []
    value = _number(flops) / latency["value"] / peak  # type: ignore[operator]
    status = "partial" if flops["status"] == "partial" else "complete"
    notes: list[Diagnostic] = []
    if value > 1:
        notes.append(
            diagnostic(
                "utilization_above_peak",
                f"{metric} is {value:.3g} > 1: the stated peak or the FLOP count is wrong",
                metric=metric,
            )
        )
    return metric_result(status, value, **labels), notes


def model_flops(flops: MetricResult, report: Mapping[str, Any]) -> MetricResult | None:
    """Operator FLOPs minus recompute, or ``None`` when the FlopReport has no ``by_phase``."""
    recompute = report.get("by_phase", {}).get("recompute")
    if recompute is None:
        return None
    labels = {"unit": "FLOPs", "scope": flops["scope"], "method": flops["method"]}
    if flops["status"] == "unavailable" or recompute["status"] == "unavailable":
        return metric_result("unavailable", **labels)
    # a partial recompute would make the subtraction an unknown amount: not a lower bound
    if recompute["status"] != "complete":
        return metric_result("unavailable", **labels)
    value = flops["known_value"] - recompute["value"]
    return metric_result(flops["status"], max(value, 0), **labels)
