"""Layout of the plain-text summary table: two-line headers, fitting a width, wrapped footers.

The table fits a width (views-3.md 2: the terminal's, 120 when output is not a terminal and
``COLUMNS`` is unset). Columns keep their natural width when the table fits; otherwise the
flexible text columns give way in a fixed order — output shapes first (shortened in the middle,
only with ``wrap_mode="mid"``), then module types, then layer names — each down to a floor, so
numbers are never cut. When that is not enough, whole columns are left out in :data:`DROP_ORDER`
(the footer names them), and only then do names go below their floors. Footer lines wrap at the
same width with a hanging indent instead of running to hundreds of characters.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable, Sequence

TABLE_WIDTH = 120  # when output is not a terminal and COLUMNS is unset
MIN_WIDTH = 40  # the narrowest table: layer and type names, one number
GAP = "  "
# Flexible columns (by position: 0 = Layer, 1 = Type; the shape column is found by key) and the
# narrowest each may become, tried in this order; the second floors apply once no column is left
# to drop.
_SHAPE_FLOOR = 18  # "{[1, 128, 768], …}": the first item of a tuple or mapping stays whole
_TYPE_FLOOR = 12
_LAYER_FLOOR = 20
_HARD_FLOORS = (10, 8, 12)  # shape, type, layer
# Columns left out, in this order, when shortening names and shapes to their floors is not enough
# (views-3.md 2): flags and shares first, then the "own" twins of inclusive columns, the output
# shape, and finally extra cost columns from the right. The first cost column asked for stays.
DROP_ORDER = (
    "trainable",
    "effective_padding",
    "effective_stride",
    "receptive_field",
    "operator_flops_percent",
    "module_flops_percent",
    "saved_activations",
    "params_self",
    "operator_flops_self",
    "dmas_self",
    "macs_self",
    "module_flops_self",
    "output_shape",
)


def check_width(width: object) -> int:
    """An explicit table width: an ``int`` of at least :data:`MIN_WIDTH` (``ValueError`` otherwise)."""
    if isinstance(width, bool) or not isinstance(width, int) or width < MIN_WIDTH:
        raise ValueError(f"width must be an integer >= {MIN_WIDTH} (characters per line), got {width!r:.40}")
    return width


def terminal_width() -> int:
    """The width a table printed now should fit (views-3.md 2).

    ``shutil.get_terminal_size``: ``COLUMNS`` when set, else the terminal of standard output, else
    :data:`TABLE_WIDTH` (output is not a terminal). A terminal narrower than :data:`MIN_WIDTH` gets
    the narrowest table rather than an error: only an explicit ``width=`` is refused.
    """
    columns = shutil.get_terminal_size(fallback=(TABLE_WIDTH, 24)).columns
    return max(MIN_WIDTH, columns) if columns > 0 else TABLE_WIDTH


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
    keep = min(len(name), 6)
    if len(prefix) + keep > width:  # a very deep row: its glyphs go first, whole levels of 3 from the left
        levels = max(0, (width - 1 - keep) // 3)
        prefix = "…" + prefix[len(prefix) - 3 * levels :] if levels else "…"
    room = max(3, width - len(prefix))
    if name.startswith("(×") and " … " in name:  # a fold "(×12) layer.0 … layer.11": the last name goes first
        name = name.split(" … ", 1)[0] + " …"
        if len(name) > room:
            count, _, first = name[:-2].partition(" ")
            name = f"{count} {shorten_middle(first, max(1, room - len(count) - 3))} …"
    return prefix + shorten_middle(name, room)


def fit(
    headers: Sequence[tuple[str, str]],
    table: list[list[str]],
    shape_column: int | None,
    width: int = TABLE_WIDTH,
    hard: bool = False,
) -> list[int]:
    """Shorten flexible cells of ``table`` in place until the rows fit ``width``; return column widths.

    ``shape_column`` is the index of the output-shape column when it may be shortened (else None).
    Names stop at their floors (``hard``: at the lower floors used once no column can be left out);
    a table whose fixed columns alone exceed ``width`` stays wider.
    """

    def widths() -> list[int]:
        return [
            max(len(top), len(bottom), *(len(row[i]) for row in table))
            for i, (top, bottom) in enumerate(headers)
        ]

    current = widths()
    excess = sum(current) + len(GAP) * (len(current) - 1) - width
    shape_floor, type_floor, layer_floor = _HARD_FLOORS if hard else (_SHAPE_FLOOR, _TYPE_FLOOR, _LAYER_FLOOR)
    targets = list(current)
    if shape_column is not None and excess > 0:  # output shapes give way first
        header = max(len(part) for part in headers[shape_column])
        floor = max(shape_floor, header, current[shape_column] - excess)
        targets[shape_column] = min(current[shape_column], floor)
        excess -= current[shape_column] - targets[shape_column]
    # Then types and layer names together, one character at a time from the wider of the two, so
    # neither is cut to its floor while the other keeps a long name.
    floors = {1: type_floor, 0: layer_floor}
    while excess > 0:
        open_columns = [c for c in (1, 0) if targets[c] > floors[c]]
        if not open_columns:
            break
        column = max(open_columns, key=lambda c: targets[c])
        targets[column] -= 1
        excess -= 1
    for column, target in enumerate(targets):
        if target >= current[column]:
            continue
        shorten = (
            _shorten_layer if column == 0 else shorten_shape if column == shape_column else shorten_middle
        )
        for row in table:
            row[column] = shorten(row[column], target)
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


class Layout:
    """Fits the table to a width: names and shapes shorten first, then columns drop (views-3.md 2)."""

    def __init__(
        self,
        names: list[list[str]],
        values: dict[str, list[str]],
        wrap_mode: str,
        width: int,
        header: Callable[[str], tuple[str, str]],
    ) -> None:
        self.header = header  # column key -> its two header lines
        self.names = names
        self.values = values
        self.wrap_mode = wrap_mode
        self.width = width
        self.dropped: list[str] = []  # columns left out, in the order they went

    def _build(
        self, keep: Sequence[str], hard: bool
    ) -> tuple[list[tuple[str, str]], list[list[str]], list[int]]:
        headers = [("Layer", ""), ("Type", ""), *(self.header(name) for name in keep)]
        table = [[*pair, *(self.values[name][i] for name in keep)] for i, pair in enumerate(self.names)]
        shape = (
            2 + list(keep).index("output_shape")
            if "output_shape" in keep and self.wrap_mode == "mid"
            else None
        )
        return headers, table, fit(headers, table, shape, self.width, hard)

    def natural(self, keep: Sequence[str]) -> int:
        """Characters per line with every column at its full width (nothing shortened)."""
        headers = [("Layer", ""), ("Type", ""), *(self.header(name) for name in keep)]
        rows = [[*pair, *(self.values[name][i] for name in keep)] for i, pair in enumerate(self.names)]
        widths = [
            max(len(top), len(bottom), *(len(row[i]) for row in rows))
            for i, (top, bottom) in enumerate(headers)
        ]
        return sum(widths) + len(GAP) * (len(widths) - 1)

    def fit(
        self, columns: Sequence[str]
    ) -> tuple[list[str], list[tuple[str, str]], list[list[str]], list[int]]:
        """The columns kept and the fitted headers, cells and widths."""
        keep = list(columns)
        headers, table, widths = self._build(keep, False)
        while sum(widths) + len(GAP) * (len(widths) - 1) > self.width:
            droppable = [name for name in DROP_ORDER if name in keep]
            costs = [name for name in keep if name not in DROP_ORDER]
            droppable += costs[1:][::-1]  # extra cost columns from the right; the first one stays
            if not droppable:
                headers, table, widths = self._build(keep, True)  # names below their usual floors
                break
            keep.remove(droppable[0])
            self.dropped.append(droppable[0])
            headers, table, widths = self._build(keep, False)
        return keep, headers, table, widths
