"""Layout of the plain-text summary table: two-line headers, fitting a width, wrapped footers.

Issue 23 item 4: the default table fits 120 columns. Columns keep their natural width when the
table fits; otherwise the flexible text columns give way in a fixed order — output shapes first
(shortened in the middle, only with ``wrap_mode="mid"``), then module types, then layer names —
each down to a floor, so numbers are never cut. Footer lines (the diagnostics) wrap at the same
width with a hanging indent instead of running to hundreds of characters.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

TABLE_WIDTH = 120
GAP = "  "
# Flexible columns (by position: 0 = Layer, 1 = Type; the shape column is found by key) and the
# narrowest each may become, tried in this order.
_SHAPE_FLOOR = 18  # "{[1, 128, 768], …}": the first item of a tuple or mapping stays whole
_TYPE_FLOOR = 12
_LAYER_FLOOR = 24


def shorten_middle(text: str, width: int) -> str:
    """``text`` cut in the middle with ``…`` to at most ``width`` characters (unchanged if it fits)."""
    if len(text) <= width:
        return text
    if width < 3:
        return text[:width]
    head = (width - 1) // 2
    tail = width - 1 - head
    return f"{text[:head]}…{text[len(text) - tail :]}"


def _items(text: str) -> list[str] | None:
    """The top-level items of ``(a, b)``/``[a, b]``/``{a, b}`` text, or None when it is not one."""
    if len(text) < 2 or text[0] not in "([{" or text[-1] not in ")]}":
        return None
    items, depth, start = [], 0, 1
    for index, char in enumerate(text[1:-1], start=1):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(text[start:index].strip())
            start = index + 1
    items.append(text[start:-1].strip())
    return items if len(items) > 1 else None


def shorten_shape(text: str, width: int) -> str:
    """An output description cut at whole items (``{[1, 128, 768], …}``), else in the middle."""
    if len(text) <= width:
        return text
    items = _items(text)
    if items is not None:
        for keep in range(len(items) - 1, 0, -1):
            short = f"{text[0]}{', '.join(items[:keep])}, …{text[-1]}"
            if len(short) <= width:
                return short
    return shorten_middle(text, width)


def _shorten_layer(cell: str, width: int) -> str:
    """A layer cell keeps its tree glyphs whole; only the name after them is shortened."""
    if len(cell) <= width:
        return cell
    name = cell.lstrip("│├└─ ")
    prefix = cell[: len(cell) - len(name)]
    return prefix + shorten_middle(name, max(3, width - len(prefix)))


def fit(
    headers: Sequence[tuple[str, str]],
    table: list[list[str]],
    shape_column: int | None,
    width: int = TABLE_WIDTH,
) -> list[int]:
    """Shorten flexible cells of ``table`` in place until the rows fit ``width``; return column widths.

    ``shape_column`` is the index of the output-shape column when it may be shortened (else None).
    A table whose fixed columns alone exceed ``width`` (many columns asked for) stays wider.
    """

    def widths() -> list[int]:
        return [
            max(len(top), len(bottom), *(len(row[i]) for row in table))
            for i, (top, bottom) in enumerate(headers)
        ]

    current = widths()
    excess = sum(current) + len(GAP) * (len(current) - 1) - width
    order = ([] if shape_column is None else [(shape_column, _SHAPE_FLOOR)]) + [
        (1, _TYPE_FLOOR),
        (0, _LAYER_FLOOR),
    ]
    for column, floor in order:
        if excess <= 0:
            break
        header = max(len(part) for part in headers[column])
        target = max(floor, header, current[column] - excess)
        if target >= current[column]:
            continue
        shorten = (
            _shorten_layer if column == 0 else shorten_shape if column == shape_column else shorten_middle
        )
        for row in table:
            row[column] = shorten(row[column], target)
        excess -= current[column] - target
        current[column] = target
    return widths()


def wrap(line: str, width: int = TABLE_WIDTH, indent: str = "  ", hanging: str = "      ") -> list[str]:
    """``line`` wrapped at ``width`` (never splitting words unless one is longer than a line)."""
    return textwrap.wrap(
        line,
        width=width,
        initial_indent=indent,
        subsequent_indent=hanging,
        break_on_hyphens=False,
        break_long_words=True,
    ) or [indent.rstrip()]
