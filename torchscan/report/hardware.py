"""Hardware facts the caller states: their check and the labels of the figures derived from them.

training-and-hardware.md 3. TorchScan has no device table and never guesses a peak: a ``hardware``
mapping comes from the caller (``measure_workload(hardware=...)``, ``crawl_module(hardware=...)``,
``torchscan latency|scan --hardware FILE.json``) and is checked here, once, by the same function
that the report validators use on a saved ``context.hardware``. This module never imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, cast

from torchscan.report.schema import HardwareFacts, MetricResult, Number, Status, in_float_range, metric_result

NAME_KEY = "name"
MAX_NAME = 100  # characters of a stated device name
PEAK_KEY = "peak_flops_per_second"
BANDWIDTH_KEY = "memory_bandwidth_bytes_per_second"
HARDWARE_KEYS = (NAME_KEY, PEAK_KEY, BANDWIDTH_KEY)
RATE_KEYS = (PEAK_KEY, BANDWIDTH_KEY)

# Figures that exist only when the caller stated hardware facts, with the unit each must carry.
WORKLOAD_FIGURES = {
    "achieved_flops_per_second": "FLOPs/s",
    "model_flops_utilization": "ratio",
    "hardware_flops_utilization": "ratio",
}
ANALYSIS_FIGURES = {"arithmetic_intensity": "FLOPs/byte", "roofline_seconds": "seconds"}
ROOFLINE_METHOD = "roofline_model"


class Labels:
    """The unit, scope and method of one derived figure, applied to each result built for it."""

    def __init__(self, unit: str, scope: str, method: str) -> None:
        self.unit, self.scope, self.method = unit, scope, method

    def __call__(self, status: Status, value: Number | None = None) -> MetricResult:
        """``metric_result(status, value)`` under these labels."""
        return metric_result(status, value, unit=self.unit, scope=self.scope, method=self.method)


def check_hardware(hardware: object, name: str = "hardware") -> HardwareFacts:
    """Check a stated ``hardware`` mapping and return a plain copy with only its known keys.

    Not a mapping, a non-string ``name`` or a rate that is not a number (a bool included) is a
    ``TypeError``; an unknown or missing key, or a rate that is not finite and > 0, is a
    ``ValueError``. Every message names the offending key, as ``hardware['peak_flops_per_second']``.
    """
    if not isinstance(hardware, Mapping):
        raise TypeError(f"{name} must be a mapping, got {type(hardware).__name__}")
    unknown = sorted(ascii(key)[:MAX_NAME] for key in hardware if key not in HARDWARE_KEYS)
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise ValueError(f"{name} has unknown keys {shown}; allowed: {', '.join(HARDWARE_KEYS)}")
    for key in (NAME_KEY, PEAK_KEY):
        if key not in hardware:
            raise ValueError(f"{name} is missing the key {key!r}")
    if not isinstance(hardware[NAME_KEY], str):
        raise TypeError(f"{name}[{NAME_KEY!r}] must be a str, got {type(hardware[NAME_KEY]).__name__}")
    stated = hardware[NAME_KEY]
    # The name is copied into reports verbatim: keep it printable, short, and free of paths' kin.
    if not stated or len(stated) > MAX_NAME or not stated.isprintable():
        raise ValueError(
            f"{name}[{NAME_KEY!r}] must be 1 to {MAX_NAME} printable characters, got {ascii(stated)[:80]}"
        )
    checked: dict[str, Any] = {NAME_KEY: stated}
    for key in RATE_KEYS:
        if key not in hardware:
            continue  # only the bandwidth is optional; the peak was required above
        value = hardware[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"{name}[{key!r}] must be a number, got {type(value).__name__}")
        # in_float_range first: math.isfinite(10**400) would raise OverflowError instead of refusing
        if not (in_float_range(value) and math.isfinite(float(value)) and value > 0):
            raise ValueError(f"{name}[{key!r}] must be a finite number > 0, got {value!r:.40}")
        checked[key] = value
    return cast(HardwareFacts, checked)


# --- saved reports (called by report/validate/__init__.py, which names the location) -----------------


def check_saved_hardware(context: Mapping[str, Any], where: str) -> bool:
    """Check ``context.hardware`` of a saved report when present; return whether it is present.

    ``where`` is the location of the context itself (``context``, ``report.before.context``).

    Every failure is a ``ValueError`` starting with the location, like the other validators'.
    """
    if "hardware" not in context:
        return False
    try:
        check_hardware(context["hardware"], name="hardware")
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}.hardware: {error}") from None
    return True


def check_saved_figures(
    metrics: Mapping[str, Any], figures: Mapping[str, str], stated: bool, where: str
) -> None:
    """Hardware figures in ``metrics`` need stated facts, their own unit and (roofline) method.

    ``metrics`` has already passed the MetricResult checks; this adds only the hardware rules.
    """
    for name, unit in figures.items():
        if name not in metrics:
            continue
        location = f"{where}.{name}"
        if not stated:
            raise ValueError(f"{location}: a hardware figure needs context.hardware (the stated facts)")
        result = metrics[name]
        if result["unit"] != unit:
            raise ValueError(f"{location}.unit: must be {unit}")
        if name == "roofline_seconds" and result["method"] != ROOFLINE_METHOD:
            raise ValueError(f"{location}.method: must be {ROOFLINE_METHOD}")
