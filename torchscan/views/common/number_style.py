"""The one number style of every rendered page (views-3.md 5): ``164.0 kFLOPs``, ``3.156 KiB``, ``20.93 ms``.

Every page (explorer cards, tiles, rails, rankings, inspector; FLOP, profile, generation, memory,
benchmark and scaling pages; SVG snapshots) words a quantity through :func:`quantity`, so a card
never reads ``164K`` beside a tile reading ``164 kFLOPs``:

- counts of work (FLOPs, MACs, DMAs) and their rates take an SI prefix glued to the unit, with four
  significant digits once scaled (``164.0 kFLOPs``, ``12.79 MFLOPs``, ``1.000 GFLOP/s``); other
  counts (``elements``, ``calls``) take the prefix as a word before the unit (``5.450 k elements``);
- bytes take binary prefixes (``800 B``, ``3.156 KiB``, ``91.36 MiB``);
- time is worded in s, ms, µs or ns (``20.93 ms``);
- a value below the first prefix keeps its digits (``640 FLOPs``, ``0.322 FLOPs/byte``), at most four
  significant ones;
- nothing is ever written in e-notation: beyond the last prefix, ``1.7 × 10³⁰⁸``.

Percentages have one precision on every page: one decimal (``44.3 %``, ``46.0 %``, ``100.0 %``).
Exact values stay available where a page lists evidence (appendix, exact columns, tooltips);
this module only words them. Plain text only: callers escape it. Never imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from torchscan.report.schema import NOT_APPLICABLE
from torchscan.views.common.text import GLUED_UNITS, neutral, scientific

DIGITS = 4
"""Significant digits of a scaled quantity (``164.0 kFLOPs``): the most prose ever shows."""
PERCENT_DECIMALS = 1
"""Decimals of every percentage on every page (``44.3 %``)."""

_SI = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_BINARY = ((1024**5, "PiB"), (1024**4, "TiB"), (1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"))
# Units whose prefix is glued (kFLOPs, GFLOP/s, MB/s); any other unit gets the prefix as a word.
_GLUED = GLUED_UNITS
_TIME = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def _digits(value: float, digits: int = DIGITS) -> str:
    """``value`` with ``digits`` significant digits, trailing zeros kept (``164.0``, ``1.000``)."""
    if value == 0:
        return "0"
    value = float(f"{value:.{digits}g}")  # rounded first: 0.99996 is 1.000, not 1.0000
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:,.{decimals}f}"


def plain(value: float) -> str:
    """A number with no prefix: integers whole with separators, others with at most four
    significant digits and no trailing zeros (``640``, ``0.322``, ``12,346``)."""
    if isinstance(value, bool):
        value = int(value)
    if not math.isfinite(value):
        return "beyond the float range"
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    if not 1e-9 <= abs(value) < 1e15:
        return scientific(value, DIGITS)
    text = _digits(value)
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _scaled(value: float, prefixes: tuple[tuple[float, str], ...]) -> tuple[str, str] | None:
    """``(digits, prefix)`` for the largest prefix ``value`` reaches once rounded, or ``None``.

    Rounding the scaled value first keeps 999,960 from reading ``1,000 k``: it is ``1.000 M``.
    """
    for scale, prefix in prefixes:
        scaled = value / scale
        rounded = abs(float(f"{scaled:.{DIGITS}g}"))
        if rounded >= 1:
            if rounded >= 10_000:  # beyond the last prefix: powers of ten, never 12,345 E
                return None
            return _digits(scaled), prefix
    return None


def duration(seconds: float) -> str:
    """Seconds as people read them: ``20.93 ms``, ``33.51 µs``, ``2.500 s``, ``0 s``."""
    if not math.isfinite(seconds * 1000.0):
        return "beyond the float range"
    if seconds == 0:
        return "0 s"
    for scale, unit in _TIME:
        if abs(float(f"{seconds:.{DIGITS}g}")) >= scale:
            value = seconds / scale
            if abs(value) >= 10_000:
                return f"{plain(round(value))} {unit}"
            return f"{_digits(value)} {unit}"
    return f"{plain(seconds / 1e-9)} ns"


def quantity(value: float, unit: str) -> str:
    """``value`` in ``unit`` in the page style (see the module docstring); ``unit`` is report text."""
    if isinstance(value, bool):
        value = int(value)
    try:
        value = float(value) if not isinstance(value, int) else value
        finite = math.isfinite(float(value))
    except OverflowError:  # an int sum beyond the float range
        finite = False
    if not finite:
        return "beyond the float range"
    if unit == "seconds":
        return duration(float(value))
    if unit == "ratio":
        return share(float(value))
    if unit == "bytes":
        scaled = _scaled(float(value), _BINARY)
        if scaled is not None:
            return f"{scaled[0]} {scaled[1]}"
        if abs(value) >= 1024:
            return f"{scientific(float(value), DIGITS)} B"
        return f"{plain(value)} B"
    label = _GLUED.get(unit)
    scaled = _scaled(float(value), _SI)
    if scaled is not None:
        if label is not None:
            return f"{scaled[0]} {scaled[1]}{label}"
        return f"{scaled[0]} {scaled[1]} {neutral(unit)}".rstrip()
    if abs(value) >= 1e3:  # beyond the last prefix
        return f"{scientific(float(value), DIGITS)} {label or neutral(unit)}".rstrip()
    return f"{plain(value)} {label or neutral(unit)}".rstrip()


def share(ratio: float) -> str:
    """A ratio as a percentage with the one page precision: ``0.44312`` → ``44.3 %``."""
    if not math.isfinite(ratio * 100):
        return "beyond the float range"
    value = round(ratio * 100, PERCENT_DECIMALS)
    smallest = 10.0**-PERCENT_DECIMALS
    # A share that rounds to 0.0 or 100.0 without being it says so: a sliver is not nothing, and
    # 99.99993 % of a map is not all of it.
    if value == 0 and ratio != 0:
        return f"{'> -' if ratio < 0 else '< '}{smallest:.{PERCENT_DECIMALS}f} %"
    if abs(value) == 100 and abs(ratio) != 1:
        bound = f"{100 - smallest:.{PERCENT_DECIMALS}f} %"
        if abs(ratio) < 1:
            return f"< -{bound}" if ratio < 0 else f"> {bound}"
    return f"{value + 0.0:,.{PERCENT_DECIMALS}f} %"  # + 0.0: never "-0.0 %"


def signed_quantity(delta: float, unit: str) -> str:
    """A change with an explicit sign: ``+1.200 GFLOPs``, ``-3.960 µs``, ``+0 FLOPs``."""
    text = quantity(abs(delta), unit)
    return ("-" if delta < 0 else "+") + text


def signed_share(delta: float, before: float | None) -> str | None:
    """``delta`` relative to ``before`` (``-50.0 %``), or ``None`` when ``before`` is 0 or unknown."""
    if before is None or before == 0:
        return None
    try:
        ratio = float(delta) / float(before)
    except OverflowError:
        return None
    if not math.isfinite(ratio * 100):
        return None
    text = share(abs(ratio))
    return ("-" if ratio < 0 and text != share(0.0) else "+") + text


def change(delta: float, unit: str, before: float | None = None) -> str:
    """``-11.20 GFLOPs (-50.0 %)``: the signed change and, against a nonzero baseline, its share."""
    relative = signed_share(delta, before)
    text = signed_quantity(delta, unit)
    return f"{text} ({relative})" if relative is not None else text


def not_applicable(result: Mapping[str, Any] | None) -> bool:
    """Whether a result says the metric does not apply (``unavailable`` with method ``not_applicable``)."""
    return result is not None and result.get("method") == NOT_APPLICABLE


def measure(result: Mapping[str, Any] | None) -> str:
    """A MetricResult in the page style: ``12.79 MFLOPs``, ``≥ 7 FLOPs`` (a lower bound), ``unknown``,
    or ``not applicable``. The status words go beside it (:func:`measure_status`)."""
    if not_applicable(result):
        return "not applicable"
    if result is None or result["status"] == "unavailable" or result.get("known_value") is None:
        return "unknown"
    text = quantity(result["known_value"], result["unit"])
    if result["status"] == "complete":
        return text
    if text.startswith("< "):  # a positive lower bound too small to show: more than nothing
        return f"> 0.{'0' * PERCENT_DECIMALS} %"
    return f"≥ {text}"


def measure_status(result: Mapping[str, Any] | None) -> str:
    """``12.79 MFLOPs · complete``, ``≥ 7 FLOPs · partial``, ``unknown · unavailable``, ``not applicable``."""
    if not_applicable(result):
        return "not applicable"
    if result is None or result["status"] == "unavailable" or result.get("known_value") is None:
        return "unknown · unavailable"
    return f"{measure(result)} · {result['status']}"


def status_measure(result: Mapping[str, Any] | None) -> str:
    """The same, status first (SVG descriptions): ``complete · 12.79 MFLOPs``,
    ``partial · ≥ 7 FLOPs · full value unknown``, ``unavailable · unknown``."""
    if not_applicable(result):
        return "not applicable"
    if result is None or result["status"] == "unavailable" or result.get("known_value") is None:
        return "unavailable · unknown"
    if result["status"] == "partial":
        return f"partial · {measure(result)} · full value unknown"
    return f"complete · {measure(result)}"
