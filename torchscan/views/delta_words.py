"""Short before/after wording for explorer cards, tiles and top-N rows (issue 23, item 3).

Exact values stay in the appendix and the inspector; these texts are what people scan: three
significant digits with a K/M/G/T prefix, a signed change and the change relative to the baseline.
They never use e-notation: beyond 999T the prefix stays T and the digits grow.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from torchscan.views.text import neutral

_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"))


def _digits(value: float) -> str:
    text = f"{value:.3g}"
    if "e" in text:  # 999.6 rounds to 1e+03; beyond 1000 the prefix cannot grow
        text = f"{value:,.0f}"
    return text


def short_number(value: float) -> str:
    """``22.4G``, ``-1.5K``, ``512``, ``0.25``: three significant digits, never e-notation.

    A sum of report numbers can be an int beyond the float range (each number fits, their sum need
    not): it reads ``beyond the float range`` like an infinite value, never raises.
    """
    try:
        value = float(value)
    except OverflowError:
        return "beyond the float range"
    if not math.isfinite(value):
        return "beyond the float range"
    magnitude = abs(float(f"{value:.3g}"))  # rounded first: 999,600 reads 1M, not 1,000K
    for scale, prefix in _PREFIXES:
        if magnitude >= scale:
            return _digits(value / scale) + prefix
    if value == int(value):
        return str(int(value))
    text = f"{value:.3g}"
    return f"{value:.12f}".rstrip("0").rstrip(".") if "e" in text else text


def short_signed(value: float) -> str:
    """A short number with an explicit sign (``+1.2M``, ``-512``, ``+0``)."""
    text = short_number(value)
    return text if text.startswith("-") else f"+{text}"


def short_measure(result: Mapping[str, Any] | None) -> str:
    """``22.4G FLOPs``, ``≥ 1.2M FLOPs`` (a lower bound) or ``unknown``."""
    if result is None or result["status"] == "unavailable" or result.get("known_value") is None:
        return "unknown"
    unit = neutral(result["unit"])
    if result["status"] == "partial":
        return f"≥ {short_number(result['known_value'])} {unit}"
    return f"{short_number(result['value'])} {unit}"


def relative(delta: float, before: float | None) -> str | None:
    """The change relative to the baseline, ``-50.0%``; ``None`` when the baseline is 0 or unknown."""
    if before is None or before == 0:
        return None
    try:
        ratio = 100 * (float(delta) / float(before))
    except OverflowError:  # an int sum beyond the float range
        return None
    if not math.isfinite(ratio):
        return None
    return f"{ratio:+,.1f}%"


def short_delta(delta: float, unit: str, before: float | None) -> str:
    """``-11.2G FLOPs (-50.0%)``: signed short delta and, against a nonzero baseline, its percent."""
    percent = relative(delta, before)
    text = f"{short_signed(delta)} {neutral(unit)}"
    return f"{text} ({percent})" if percent is not None else text


def short_text(result: Mapping[str, Any] | None) -> str:
    """Tile, rail and top-N wording: ``1.23K FLOPs · complete``, ``≥ 7 FLOPs · partial``, unknown.

    The explorer's own form of ``text.compact_text``, on ``short_number`` so that no value (999,600
    or beyond 999T) is ever written in e-notation. explorer.js ``shortText`` mirrors it for zoom.
    """
    if result is None or result["status"] == "unavailable" or result.get("known_value") is None:
        return "unknown · unavailable"
    return f"{short_measure(result)} · {result['status']}"
