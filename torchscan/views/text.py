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
    """Integers with thousands separators, floats with six significant digits."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.6g}"


def compact(value: float) -> str:
    """Three significant digits with a K/M/G/T prefix (``1.23K``)."""
    magnitude = abs(value)
    for scale, prefix in _COMPACT_PREFIXES:
        if magnitude >= scale:
            return f"{value / scale:.3g}{prefix}"
    if isinstance(value, int) or value == int(value):
        return str(int(value))
    return f"{value:.3g}"


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
