"""Short before/after wording for explorer cards, tiles and top-N rows (issue 23 item 3; views-3.md 5).

Exact values stay in the appendix and the inspector; these texts are what people scan, in the one
page style of :mod:`torchscan.views.common.number_style` (``12.79 MFLOPs``, ``-11.20 GFLOPs (-50.0 %)``):
at most four significant digits, a signed change and the change relative to the baseline, never
e-notation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.views.common.number_style import change, measure, measure_status, signed_share


def short_measure(result: Mapping[str, Any] | None) -> str:
    """``22.40 GFLOPs``, ``≥ 1.200 MFLOPs`` (a lower bound), ``unknown`` or ``not applicable``."""
    return measure(result)


def relative(delta: float, before: float | None) -> str | None:
    """The change relative to the baseline, ``-50.0 %``; ``None`` when the baseline is 0 or unknown."""
    return signed_share(delta, before)


def short_delta(delta: float, unit: str, before: float | None) -> str:
    """``-11.20 GFLOPs (-50.0 %)``: signed delta and, against a nonzero baseline, its share."""
    return change(delta, unit, before)


def short_text(result: Mapping[str, Any] | None) -> str:
    """Tile, rail and top-N wording: ``1.230 kFLOPs · complete``, ``≥ 7 FLOPs · partial``, unknown.

    explorer.js draws zoomed tiles from these same texts (``tile.full``), never its own wording.
    """
    return measure_status(result)
