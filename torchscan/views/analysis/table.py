"""The plain-text summary table (analysis.md 8, issue 15 item 1). A view: it reads a report only.

Nothing may parse this table; the report is the source of truth. Incomplete values are written so
they cannot be mistaken for complete ones: a cell reads ``≥ X`` for a lower bound and
``unavailable`` when nothing was measured, a total reads ``known ≥ X``. Rows come from
:mod:`torchscan.views.analysis.table_rows`: every layer call is summed into exactly one row, so each additive
column sums to its model total; ``Σ`` marks a cell that includes hidden descendants, ``(×N)`` a row
that sums N identical blocks. Names are model-supplied text: control and bidi characters are shown
escaped so they cannot drive the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchscan.views.analysis.table_cells import Cells
from torchscan.views.analysis.table_columns import COLUMNS as COLUMNS
from torchscan.views.analysis.table_columns import COVERED, MEMORY_NOTE, SPATIAL, header
from torchscan.views.analysis.table_columns import DEFAULT_COLUMNS as DEFAULT_COLUMNS
from torchscan.views.analysis.table_columns import MEMORY_COLUMNS as MEMORY_COLUMNS
from torchscan.views.analysis.table_columns import format_metric as format_metric
from torchscan.views.analysis.table_columns import si as si
from torchscan.views.analysis.table_footer import footer_lines
from torchscan.views.analysis.table_layout import GAP, TABLE_WIDTH, Layout, check_width, wrap
from torchscan.views.analysis.table_rows import RowModel
from torchscan.views.common.diagnostic_groups import escape_control

LINE_BUDGET = 60  # lines the automatic depth aims for (analysis.md 8: about 60)


def check_table_options(
    *,
    col_names: object,
    max_depth: object,
    fold: object,
    wrap_mode: object = "mid",
    extra_columns: bool = False,
    memory: bool = False,
) -> tuple[str, ...]:
    """Check the table options before any model runs; returns the column keys.

    ``col_names`` is ``None`` (the default columns) or a sequence of keys of :data:`COLUMNS`, empty
    only when ``extra_columns`` (a receptive-field or operator-FLOPs flag) adds columns of its own;
    ``max_depth`` is ``None`` (automatic) or a positive int; ``fold`` a bool. The
    ``saved_activations`` column needs ``memory`` (a MemoryReport was given).
    """
    if not isinstance(wrap_mode, str):
        raise TypeError(f"wrap_mode must be 'mid' or 'no', got {type(wrap_mode).__name__}")
    if wrap_mode not in ("mid", "no"):
        raise ValueError(f"wrap_mode must be 'mid' or 'no', got {wrap_mode!r}")
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int)):
        raise TypeError(
            f"max_depth must be None (automatic) or a positive int, got {type(max_depth).__name__}"
        )
    if max_depth is not None and max_depth < 1:
        raise ValueError(f"max_depth must be None (automatic) or a positive int, got {max_depth!r}")
    if not isinstance(fold, bool):
        raise TypeError(f"fold must be a bool, got {type(fold).__name__}")
    if col_names is None:
        return DEFAULT_COLUMNS
    if isinstance(col_names, str | bytes) or not isinstance(col_names, Sequence):
        raise TypeError(f"col_names must be a sequence of column names, got {type(col_names).__name__}")
    for name in col_names:
        if not isinstance(name, str):
            raise TypeError(f"col_names entries must be str, got {type(name).__name__}")
        if name not in COLUMNS and name not in MEMORY_COLUMNS:
            raise ValueError(
                f"col_names: unknown column {name!r}; choose from {', '.join(COLUMNS)} "
                f"(and {', '.join(MEMORY_COLUMNS)} with memory=)"
            )
    if len(set(col_names)) != len(col_names):
        raise ValueError("col_names: a column is named twice")
    for name in MEMORY_COLUMNS:
        if name in col_names and not memory:
            raise ValueError(
                f"col_names: the {name} column reads a MemoryReport; pass memory=measure_memory(...)'s report"
            )
    # a table of names only shows nothing (the CLI's --columns refuses an empty list too)
    if not col_names and not extra_columns:
        raise ValueError(f"col_names: give at least one column; choose from {', '.join(COLUMNS)}")
    return tuple(col_names)


# How the footer's hints are spelled: for the Python API or for the ``torchscan`` command line.
_SPELLINGS = {
    "python": {
        "max_depth": "max_depth={}",
        "fold": "fold=False",
        "receptive_field": "summary(..., receptive_field=True) shows them",
        "width": "width={}",
    },
    "cli": {
        "max_depth": "--max-depth {}",
        "fold": "--no-fold",
        "receptive_field": "--receptive-field shows them",
        "width": "--width {}",
    },
}


def format_table(
    report: Mapping[str, Any],
    *,
    wrap_mode: str = "mid",
    max_depth: int | None = None,
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
    operator_flops: bool = False,
    col_names: Sequence[str] | None = None,
    fold: bool = True,
    memory: Mapping[str, Any] | None = None,
    spelling: str = "python",
    width: int = TABLE_WIDTH,
) -> str:
    """Render an AnalysisReport as the summary table text (no colour codes).

    ``max_depth=None`` picks the deepest depth whose table fits about 60 lines; the footer says
    what was collapsed or folded and how to expand it, spelled for ``spelling`` (``"python"``:
    ``max_depth=4``; ``"cli"``: ``--max-depth 4``). ``receptive_field``, ``effective_rf_stats``
    and ``operator_flops`` append their columns to ``col_names`` (the default columns when None);
    so does ``memory`` (a validated MemoryReport): its ``saved_activations`` column ("Saved act.").
    The table fits ``width`` characters (120 by default; ``summary`` and the CLI pass the
    terminal's): output shapes, types and layer names shorten first, then columns are left out in
    ``table_layout.DROP_ORDER`` (the footer names them) — no number is ever cut. Footer lines wrap
    at the same width. ``ValueError`` for a width under 40.
    """
    for name, flag in (
        ("receptive_field", receptive_field),
        ("effective_rf_stats", effective_rf_stats),
        ("operator_flops", operator_flops),
    ):
        if not isinstance(flag, bool):  # "no" is truthy: a mistyped flag must not mean "on"
            raise TypeError(f"{name} must be True or False, got {type(flag).__name__}")
    if spelling not in _SPELLINGS:
        raise ValueError(f"spelling must be 'python' or 'cli', got {spelling!r}")
    check_width(width)
    columns = list(
        check_table_options(
            col_names=col_names,
            max_depth=max_depth,
            fold=fold,
            wrap_mode=wrap_mode,
            extra_columns=receptive_field or effective_rf_stats or operator_flops or memory is not None,
            memory=memory is not None,
        )
    )
    extra = [
        *(["receptive_field"] if receptive_field else []),
        *(["effective_stride", "effective_padding"] if effective_rf_stats else []),
        *(["operator_flops"] if operator_flops else []),
        *(list(MEMORY_COLUMNS) if memory is not None else []),
    ]
    columns += [name for name in extra if name not in columns]
    model = RowModel(report["layers"], fold)
    cells = Cells(report, wrap_mode, memory)
    depth = model.auto_depth() if max_depth is None else max_depth
    while True:
        lines = _lines(report, model, cells, depth, columns, wrap_mode, width, fold, spelling, memory, extra)
        # The automatic depth aims at about 60 lines: a footer that wraps at a narrow width costs rows.
        if max_depth is not None or len(lines) <= LINE_BUDGET or depth <= 1:
            return "\n".join(lines)
        depth -= 1


def _lines(
    report: Mapping[str, Any],
    model: RowModel,
    cells: Cells,
    depth: int,
    columns: list[str],
    wrap_mode: str,
    width: int,
    fold: bool,
    spelling: str,
    memory: Mapping[str, Any] | None,
    extra: list[str],
) -> list[str]:
    """The table's lines at one depth: header, rows fitted to ``width``, footer."""
    rows = model.rows(depth)
    names = [
        [escape_control(row.prefix + row.name), escape_control(report["layers"][row.layers[0]]["type"])]
        for row in rows
    ]
    values = {name: [cells.cell(row, name) for row in rows] for name in columns}
    layout = Layout(names, values, wrap_mode, width, header)
    _, headers, table, widths = layout.fit(columns)
    rule = "_" * (sum(widths) + len(GAP) * (len(widths) - 1))
    lines = [rule]
    for part in (0, 1):
        line = GAP.join(h[part].ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()
        if line:
            lines.append(line)
    lines.append("=" * len(rule))
    lines += [GAP.join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in table]
    lines.append("=" * len(rule))
    footer = footer_lines(
        report,
        rows,
        depth,
        model.deepest,
        fold,
        _SPELLINGS[spelling],
        any(name in extra for name in SPATIAL),
        covered=any(COVERED in row for row in table),
    )
    left_out = layout.dropped
    if left_out:
        labels = ", ".join(" ".join(part for part in header(name) if part) for name in left_out)
        hint = _SPELLINGS[spelling]["width"].format(layout.natural(columns))
        at = next(i for i, line in enumerate(footer) if line.startswith("Columns: ")) + 1
        footer.insert(at, f"Columns left out at width {width}: {labels} ({hint} shows every column).")
    if memory is not None:
        footer += MEMORY_NOTE.splitlines()
    for line in footer:
        indent = line[: len(line) - len(line.lstrip(" "))]
        lines += wrap(line.strip(), max(width, len(rule)), indent, indent + "    ")
    lines.append(rule)
    return lines
