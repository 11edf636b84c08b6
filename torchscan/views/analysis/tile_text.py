"""What an icicle tile says, and whether it has room to say it (views-3.md 5 and 6).

A tile's value line is the first of its candidate texts that fits whole: ``12.79 MFLOPs · 45.1 %``
(its subtotal and its share of the map's total), then the share alone (``45.1 %``), and nothing when
even that does not fit; a number is never cut into a misleading stump. A partial tile reads ``≥ …
· partial`` (no share: a share of a lower bound bounds nothing), an unknown one ``unknown ·
unavailable``. The rail's "too small to label" cards are exactly the drawn tiles whose value line
is empty (:func:`value_hidden`), so its count equals the tiles the map cannot label. The same
rule fits the texts again when the page's script zooms (explorer.js reads the candidates from
``tile.full``). Never imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.views.common.number_style import measure, measure_status, share

INNER = 892
"""Drawable width of a map in pixels (render.md 2)."""
CHAR_PIXELS = 6.6
PADDING = 8


def painted_pixels(width: float) -> float:
    """Painted width in pixels of a tile spanning ``width`` of the map (render.md 2: minus its gap)."""
    pixels = width * INNER
    return max(pixels - min(1.5, pixels / 5), 0.0)


def room(pixels: float) -> int:
    """How many characters of 12 px text a tile ``pixels`` wide holds."""
    return int((pixels - PADDING) / CHAR_PIXELS)


def fit_label(text: str, pixels: float) -> str:
    """A tile's name cut with an ellipsis to fit, or ``""`` when only a stump would fit."""
    limit = room(pixels)
    if limit < 5 and len(text) > limit:
        return ""  # a two-letter stump reads worse than the tooltip, rail and inspector
    return text if len(text) <= limit else text[: max(limit - 1, 1)] + "…"


def fit_value(candidates: Sequence[str], pixels: float) -> str:
    """The first candidate that fits whole, else ``""`` (a number is never truncated)."""
    limit = room(pixels)
    return next((text for text in candidates if len(text) <= limit), "")


def tile_share(subtotal: Mapping[str, Any], total: Mapping[str, Any] | None) -> str | None:
    """The subtotal's share of the map's total (``45.1 %``, ``≤ 45.1 %`` of a partial total), or ``None``
    when the subtotal is not complete or the total has no positive known part."""
    if subtotal["status"] != "complete" or total is None or not total.get("known_value"):
        return None
    try:
        text = share(float(subtotal["value"]) / float(total["known_value"]))
    except OverflowError:
        return None
    return text if total["status"] == "complete" else f"≤ {text}"


def value_text(scale: str, node: Mapping[str, Any], total: Mapping[str, Any] | None) -> str:
    """A tile's whole value line: ``12.79 MFLOPs · 45.1 %``, ``≥ 7 FLOPs · partial``, ``unknown ·
    unavailable``, ``structural · unscaled``; ``covered · …`` for a covered node, ``not called …`` for
    the row of a module that never ran as a module call."""
    if scale == "structure":
        text = "structural · unscaled"
    else:
        subtotal = node["subtotal"]
        fraction = tile_share(subtotal, total)
        if fraction is not None:
            text = f"{measure(subtotal)} · {fraction}"
        elif subtotal["status"] == "complete":
            text = measure(subtotal)
        else:
            text = measure_status(subtotal)
    if node["covered"]:
        return f"covered · {text}"
    if node.get("not_called"):  # views-3.md 1: a module that never ran; its value, if any, is a share
        return "not called" if node["subtotal"]["known_value"] is None else f"not called · {text}"
    return text


def candidates(text: str) -> list[str]:
    """A value line, then its last ``·`` part (the share, or the status word) when it is shorter.

    explorer.js ``shorter`` applies the same rule to the whole line when zooming.
    """
    last = text.rsplit(" · ", 1)[-1]
    return [text, last] if last != text else [text]


def value_candidates(scale: str, node: Mapping[str, Any], total: Mapping[str, Any] | None) -> list[str]:
    """A tile's value texts, longest first: what it says when there is room, then the shorter form."""
    return candidates(value_text(scale, node, total))


def value_hidden(scale: str, node: Mapping[str, Any], total: Mapping[str, Any] | None) -> bool:
    """Whether a drawn tile has no room for any of its value texts (the rail lists it instead)."""
    return fit_value(value_candidates(scale, node, total), painted_pixels(node["width"])) == ""
