"""The per-module view of a MemoryReport (views-3.md 5): which module call created which bytes.

One row per module call, largest own bytes first (``memory_own.py``: nested calls excluded, so a
container never outranks the work it holds), each a stacked bar of the bytes the call created
itself: those autograd saved for backward (live until backward consumes them, which is what a
forward peak is mostly made of) and the rest it allocated (temporaries and outputs). Hovering a
segment names its category, the module call, its type and its bytes; the report records no tensor
shapes for storages, and the tooltip says so rather than inventing one. A lower bound is drawn
hollow and reads ``≥``; a call whose own bytes are unknown is listed, never drawn as zero. The
canvas grows with its rows. Reads only the validated report; never imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.views.common.number_style import quantity
from torchscan.views.common.text import esc
from torchscan.views.memory.own_bytes import own_bytes, ranked_by_own
from torchscan.views.memory.text import CATEGORY_COLOURS

WIDTH, LABEL, VALUES, ROW, BAR = 900, 300, 220, 22, 14
TOP_CALLS = 20
SEGMENTS = (
    ("saved", "activations (saved for backward)", CATEGORY_COLOURS["activations"]),
    ("other", "temporaries and outputs (allocated, not saved)", CATEGORY_COLOURS["temporaries"]),
)
NO_SHAPES = "storage shapes are not recorded in a MemoryReport"


def call_name(call: Mapping[str, Any]) -> str:
    """``layer1.0.conv1 call #0 (Conv2d)``; the root reads ``(root)``."""
    return f"{call['path'] or '(root)'} call #{call['call_index']} ({call['module_type']})"


def module_rows(report: Mapping[str, Any], limit: int = TOP_CALLS) -> list[dict[str, Any]]:
    """The drawn rows: call index, its own saved and other bytes (``None``: unknown), lower-bound flag."""
    calls = report["by_module"]
    allocated = own_bytes(calls, "allocated")
    saved = own_bytes(calls, "activations_saved")
    ranked, _ = ranked_by_own(calls, "allocated", limit)
    rows = []
    for index in ranked:
        mine, kept = allocated[index], saved[index]
        other = None if kept.value is None or mine.value is None else max(mine.value - kept.value, 0)
        rows.append(
            {
                "index": index,
                "allocated": mine.value,
                "saved": kept.value,
                "other": other,
                "partial": mine.partial or kept.partial,
            }
        )
    return rows


def module_bars_svg(
    report: Mapping[str, Any], *, limit: int = TOP_CALLS, ident: str = "memory-modules"
) -> str:
    """An ``<svg>`` of the top module calls by own allocated bytes, stacked by category."""
    calls = report["by_module"]
    rows = module_rows(report, limit)
    _, unknown = ranked_by_own(calls, "allocated", limit)
    largest = max((row["allocated"] or 0 for row in rows), default=0)
    span = WIDTH - LABEL - VALUES - 16
    top = 44
    parts = [
        f'<text x="8" y="18" font-size="13" font-weight="700">Bytes each module call created itself '
        f"(nested calls excluded), largest first: top {len(rows)} of {len(calls)}</text>",
        '<text x="8" y="34" font-size="11">'
        + "  ".join(f'<tspan fill="{colour}">■</tspan> {esc(label)}' for _, label, colour in SEGMENTS)
        + "</text>",
    ]
    for position, row in enumerate(rows):
        call = calls[row["index"]]
        y = top + position * ROW
        name = call_name(call)
        parts.append(
            f'<g data-call="{row["index"]}"><text x="8" y="{y + 13}" font-size="12">'
            f"{esc(name if len(name) <= 46 else name[:45] + '…')}<title>{esc(name)}</title></text>"
        )
        x = float(LABEL)
        for key, label, colour in SEGMENTS:
            value = row[key]
            if not value or not largest:
                continue
            width = max(span * value / largest, 1.0)
            words = f"{'≥ ' if row['partial'] else ''}{quantity(value, 'bytes')}"
            fill = "none" if row["partial"] else colour
            parts.append(
                f'<rect data-segment="{key}" x="{x:.2f}" y="{y + 2}" width="{width:.2f}" height="{BAR}" '
                f'fill="{fill}" stroke="{colour}"><title>{esc(label)} · {esc(name)} · {esc(words)} own '
                f"· {NO_SHAPES}</title></rect>"
            )
            x += width
        total = f"{'≥ ' if row['partial'] else ''}{quantity(row['allocated'] or 0, 'bytes')}"
        saved = "unknown" if row["saved"] is None else quantity(row["saved"], "bytes")
        parts.append(
            f'<text x="{WIDTH - VALUES}" y="{y + 13}" font-size="12">{esc(total)} ({esc(saved)} saved)'
            "</text></g>"
        )
    y = top + len(rows) * ROW + 14
    if unknown:
        parts.append(
            f'<text x="8" y="{y}" font-size="11">{len(unknown)} call(s) with unknown own bytes are not drawn '
            "(their figures are not complete, or do not nest by path): listed below the figure.</text>"
        )
        y += 16
    if not rows:
        parts.append(f'<text x="8" y="{y}" font-size="12">No module call has known own bytes.</text>')
        y += 16
    height = y + 6
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="memory-modules" id="{ident}" '
        f'width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        'font-family="system-ui, sans-serif" '
        f'aria-label="Bytes each module call created itself, stacked by category">{"".join(parts)}</svg>'
    )
