"""Horizontal bar rows for the FLOP and profile figures: one labelled row per item, drawn in SVG.

The canvas grows with its rows (nothing is clipped), every bar's label and value are ``<text>``
(searchable, printed), and a row's ``<title>`` repeats exactly what the row draws. A row whose value
is unknown draws no bar and says ``unknown``; bars share one zero-based scale per chart. Plain
markup, escaped; never imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torchscan.views.common.text import esc

WIDTH = 900
LABEL_WIDTH = 330
VALUE_WIDTH = 190
ROW = 22
BAR_HEIGHT = 14
LABEL_CHARS = 46  # about what 330 px of 12 px text holds


@dataclass(frozen=True)
class BarRow:
    """One row: its label, the value that sizes the bar (``None``: unknown, no bar) and the words shown."""

    label: str
    value: float | None
    text: str
    indent: int = 0
    hollow: bool = False  # a lower bound: outlined, never a full bar


def fit_label(label: str, limit: int = LABEL_CHARS) -> str:
    """``label`` cut to ``limit`` characters with an ellipsis (the full label is in the row's title)."""
    return label if len(label) <= limit else label[: limit - 1] + "…"


def bar_chart(rows: Sequence[BarRow], *, top: float, colour: str, name: str) -> tuple[str, float]:
    """The rows as SVG elements starting at ``top``; returns the markup and the height used.

    ``name`` is the chart's ``data-chart`` attribute. Bars are scaled to the largest known value
    (a chart of zeros draws no bars, and says so in each row's words).
    """
    largest = max((row.value for row in rows if row.value is not None), default=0.0)
    span = WIDTH - LABEL_WIDTH - VALUE_WIDTH - 16
    parts = [f'<g data-chart="{esc(name)}">']
    for index, row in enumerate(rows):
        y = top + index * ROW
        indent = min(row.indent, 8) * 12
        shown = fit_label(row.label, LABEL_CHARS - row.indent * 2)
        parts.append(
            f'<g data-row="{index}"><title>{esc(row.label)}: {esc(row.text)}</title>'
            f'<text x="{8 + indent}" y="{y + 13:.1f}" font-size="12">{esc(shown)}</text>'
        )
        if row.value is not None and largest > 0 and row.value > 0:
            width = max(span * row.value / largest, 1.0)
            fill = "none" if row.hollow else colour
            parts.append(
                f'<rect x="{LABEL_WIDTH}" y="{y + (ROW - BAR_HEIGHT) / 2 - 2:.1f}" width="{width:.2f}" '
                f'height="{BAR_HEIGHT}" fill="{fill}" stroke="{colour}" stroke-width="1"/>'
            )
        parts.append(
            f'<text x="{WIDTH - VALUE_WIDTH}" y="{y + 13:.1f}" font-size="12">{esc(row.text)}</text></g>'
        )
    parts.append("</g>")
    return "".join(parts), len(rows) * ROW
