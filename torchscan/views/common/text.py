"""Escaping and number/measurement wording shared by every view (render.md 2, 3.8, 3.9).

Everything a report supplies is untrusted text: it is escaped for HTML/XML, and bidirectional
control characters are replaced by visible markers so a module name cannot reorder the text
around it. Measurements are worded so a lower bound never reads as a full value and an unknown
never reads as a number.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping
from typing import Any

_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_COMPACT_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"))


def neutral(text: str) -> str:
    """Replace bidirectional control characters with a visible ``<U+XXXX>`` marker."""
    return _BIDI.sub(lambda match: f"<U+{ord(match.group()):04X}>", text)


def esc(value: object) -> str:
    """Escape text for HTML/XML text or a double-quoted attribute (``& < > " '``), bidi-neutral."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return html.escape(neutral(text), quote=True)


def script_json(data: Any) -> str:
    """Compact JSON that is inert inside ``<script type="application/json">`` (render.md 3.9)."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for char, escape in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(char, escape)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def pretty_json(data: Any) -> str:
    """Indented JSON for ``<pre>`` evidence blocks (escape it before embedding)."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)


def number(value: float) -> str:
    """Integers with thousands separators, floats with six significant digits (positional below 1e15)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    if math.isfinite(value):
        return fixed(value, 6)  # 0.0000158882 or 1.7 × 10³⁰⁸, never 1.58882e-05 (issue 23 item 5)
    return f"{value:,.6g}"


def prefixed(value: float, digits: int, prefixes: tuple[tuple[float, str], ...]) -> tuple[float, str]:
    """``value`` scaled by the largest prefix it reaches once rounded to ``digits`` significant digits.

    Rounding first keeps 999,600 from reading ``1,000K``: it is ``1M``. Values below the smallest
    prefix (or not finite) come back unscaled with ``""``.
    """
    if not math.isfinite(value) or value == 0:
        return value, ""
    rounded = float(f"{value:.{digits}g}")
    for scale, prefix in prefixes:
        if abs(rounded) >= scale:
            return rounded / scale, prefix
    return value, ""


def compact(value: float) -> str:
    """Three significant digits with a K/M/G/T prefix (``1.23K``)."""
    scaled, prefix = prefixed(value, 3, _COMPACT_PREFIXES)
    if prefix:
        return f"{fixed(scaled, 3)}{prefix}"
    if isinstance(value, int) or value == int(value):
        return str(int(value))
    return fixed(value, 3)


def signed(value: float) -> str:
    """A delta with an explicit sign (``+12``, ``-1``, ``+0``)."""
    text = number(value)
    return text if text.startswith("-") else f"+{text}"


def long_text(result: Mapping[str, Any] | None) -> str:
    """``complete · 1,234 FLOPs`` / ``partial · at least 7 FLOPs (lower bound; ...)`` / unknown."""
    status, rest = long_parts(result)
    return f"{status} · {rest}"


def long_parts(result: Mapping[str, Any] | None) -> tuple[str, str]:
    """Status word and the rest of the long wording, for a badge followed by text."""
    if result is None or result["status"] == "unavailable":
        return "unavailable", "unknown"
    unit = neutral(result["unit"])
    if result["status"] == "partial":
        return "partial", f"at least {number(result['known_value'])} {unit} (lower bound; full value unknown)"
    return "complete", f"{number(result['value'])} {unit}"


def compact_text(result: Mapping[str, Any] | None) -> str:
    """Card wording: ``1.23K FLOPs · complete``, ``≥ 7 FLOPs · partial``, ``unknown · unavailable``."""
    if result is None or result["status"] == "unavailable":
        return "unknown · unavailable"
    unit = neutral(result["unit"])
    if result["status"] == "partial":
        return f"≥ {compact(result['known_value'])} {unit} · partial"
    return f"{compact(result['value'])} {unit} · complete"


def svg_text(result: Mapping[str, Any] | None) -> str:
    """SVG wording: ``complete · 1.23K FLOPs``, ``partial · ≥ 7 FLOPs · full value unknown``."""
    if result is None or result["status"] == "unavailable":
        return "unavailable · unknown"
    unit = neutral(result["unit"])
    if result["status"] == "partial":
        return f"partial · ≥ {compact(result['known_value'])} {unit} · full value unknown"
    return f"complete · {compact(result['value'])} {unit}"


def delta_text(delta: float | None, unit: str, reason: str | None = None) -> str:
    """``complete · +12 FLOPs`` or ``delta unknown`` with its reason."""
    if delta is None:
        return f"delta unknown: {reason}" if reason else "delta unknown"
    return f"complete · {signed(delta)} {neutral(unit)}"


def missing_delta_text(entry: Mapping[str, Any]) -> str:
    """Why a MetricDiff without a delta has none, prefixed by its status.

    A ``delta_out_of_range`` diagnostic (report/diff.py) means both sides were complete and
    comparable but their difference does not fit a float, which is not "unknown": it is said so.
    """
    status = entry["status"]
    if any(d.get("code") == "delta_out_of_range" for d in entry.get("diagnostics", ())):
        return (
            f"{status} · delta beyond float range (both sides complete; the difference does not fit a float)"
        )
    return f"{status} · delta unknown (requires two complete measurements)"


def path_label(path: str) -> str:
    """A module path for people: ``(root)`` for the root."""
    return neutral(path) if path else "(root)"


# --- human units (issue 23 item 5) ---------------------------------------------------------------
# People read latency in ms/µs, ratios in %, rates in G/T FLOP/s and deltas with a sign and a %;
# the report keeps seconds, ratios and FLOPs/s. These never print e-notation.

_SI_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_BINARY = ((1024**4, "TiB"), (1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"))
# Decimal prefixes for counts and rates (bandwidth is quoted in GB/s), binary ones for sizes in bytes.
# Units that take a glued SI prefix (kFLOPs, GFLOP/s), here and in views/common/number_style.py.
GLUED_UNITS = {
    "FLOPs": "FLOPs",
    "MACs": "MACs",
    "DMAs": "DMAs",
    "FLOPs/s": "FLOP/s",
    "FLOP/s": "FLOP/s",
    "bytes/s": "B/s",
}


def fixed(value: float, digits: int = 4) -> str:
    """``value`` with about ``digits`` significant digits in positional notation (never ``1e-05``).

    Integers part keeps every digit with thousands separators (``12,345``), so large values stay exact
    to the unit; a value beyond the float range reads as such.
    """
    if not math.isfinite(value):
        return "beyond the float range"
    if value == 0:
        return "0"
    if not 1e-9 <= abs(value) < 1e18:  # 309 positional digits would hide the number
        return scientific(value, digits)
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, min(15, digits - 1 - magnitude))
    text = f"{value:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def scientific(value: float, digits: int = 3) -> str:
    """``1.7 × 10³⁰⁸``: powers of ten as people write them, for values no prefix reaches."""
    mantissa, exponent = f"{value:.{max(digits - 1, 0)}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def duration(seconds: float) -> str:
    """A duration in the most readable of s, ms, µs, ns (``149.6 µs``, ``3.96 ms``)."""
    if not math.isfinite(seconds * 1000.0):  # near the float limit (a hostile file): said, not printed
        return "beyond the float range"
    magnitude = abs(seconds)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if magnitude >= scale:
            return f"{fixed(seconds / scale)} {unit}"
    return f"{fixed(seconds / 1e-9)} ns"


def percent(ratio: float) -> str:
    """A ratio as a percentage (``0.198953`` → ``19.9 %``)."""
    return f"{fixed(ratio * 100, 3)} %"


def human(value: float, unit: str) -> str:
    """``value`` in ``unit`` as people read it: seconds → ms/µs, ratio → %, FLOPs/s → G/T FLOP/s,
    FLOPs/MACs/DMAs and bytes/s → SI prefixes, bytes → KiB/MiB/GiB, anything else positional with
    separators."""
    if unit == "seconds":
        return duration(value)
    if unit == "ratio":
        return percent(value)
    if unit in GLUED_UNITS:
        label = GLUED_UNITS[unit]
        scaled, prefix = prefixed(value, 3, _SI_PREFIXES)
        return f"{fixed(scaled, 3)} {prefix}{label}" if prefix else f"{fixed(value)} {label}"
    if unit == "bytes":
        for scale, label in _BINARY:
            if abs(value) >= scale:
                return f"{fixed(value / scale, 3)} {label}"
        return f"{fixed(value)} B"
    return f"{fixed(value)} {neutral(unit)}".rstrip()


def relative(delta: float, before: float | None) -> str | None:
    """``delta`` relative to ``before`` as a signed percentage, or ``None`` when ``before`` is 0/unknown."""
    if before is None or not before or not math.isfinite(delta / before):
        return None
    ratio = delta / before
    if ratio == 0:
        return "0 %"
    return ("+" if ratio > 0 else "-") + percent(abs(ratio))


def human_delta(delta: float, unit: str, before: float | None = None) -> str:
    """A signed change in human units with its relative size: ``-3.96 µs (-2.6 %)``, ``+1.2 GFLOPs``."""
    sign = "+" if delta >= 0 else "-"
    text = sign + human(abs(delta), unit)
    share = relative(delta, before)
    return f"{text} ({share})" if share is not None else text


def human_result(result: Mapping[str, Any] | None) -> str:
    """A MetricResult in human units: ``149.6 µs``, ``at least 7 GFLOPs (lower bound; ...)``, ``unknown``."""
    if result is None or result["status"] == "unavailable" or result["known_value"] is None:
        return "unknown"
    text = human(result["known_value"], result["unit"])
    return text if result["status"] == "complete" else f"at least {text} (lower bound; full value unknown)"
