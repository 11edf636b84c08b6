"""The plain-text summary table (analysis.md 8, issue 15 item 1). A view: it reads a report only.

Nothing may parse this table; the report is the source of truth. Incomplete values are written so
they cannot be mistaken for complete ones: a cell reads ``≥ X`` for a lower bound and
``unavailable`` when nothing was measured, a total reads ``known ≥ X``. Rows come from
:mod:`torchscan.views.table_rows`: every layer call is summed into exactly one row, so each additive
column sums to its model total; ``Σ`` marks a cell that includes hidden descendants, ``(×N)`` a row
that sums N identical blocks. Names are model-supplied text: control and bidi characters are shown
escaped so they cannot drive the terminal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from torchscan.views.diagnostic_groups import (
    escape_control,
    format_groups,
    informational_line,
    summarize_diagnostics,
)
from torchscan.views.memory_text import human_bytes
from torchscan.views.method_note import method_note
from torchscan.views.row_values import NOT_CALLED_TEXT, is_called, is_covered, own_result
from torchscan.views.table_layout import DROP_ORDER, GAP, TABLE_WIDTH, check_width, fit, shorten_shape, wrap
from torchscan.views.table_rows import RowModel, TableRow

_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
COVERED = "covered"  # a cost cell inside an ancestor's inclusive estimate (explained in the footer)
_SHAPE_WIDTH = 28
DIAGNOSTIC_LINES = 5  # groups shown in the footer before "N more"

# Column key -> header (one line; HEADERS below splits it in two for the table). Issue 23 item 4:
# cost columns are *inclusive* — a row counts its call and every call it made, so a BertLayer row
# reads its 7,087,872 parameters as torchinfo does — and the ``_self`` columns count the call alone
# ("own"). Neither kind is summed across rows: a parent row already contains its children.
COLUMNS: dict[str, str] = {
    "output_shape": "Output Shape",
    "params": "Params incl.",
    "params_self": "Params own",
    "trainable": "Trainable",
    "module_flops": "Module FLOPs incl.",
    "module_flops_self": "Module FLOPs own",
    "macs": "MACs incl.",
    "macs_self": "MACs own",
    "dmas": "DMAs incl.",
    "dmas_self": "DMAs own",
    "operator_flops": "Op FLOPs incl.",
    "operator_flops_self": "Op FLOPs own",
    "module_flops_percent": "% Module FLOPs",
    "operator_flops_percent": "% Op FLOPs",
    "receptive_field": "Receptive field",
    "effective_stride": "Effective stride",
    "effective_padding": "Effective padding",
}
DEFAULT_COLUMNS = ("output_shape", "params", "trainable", "module_flops", "module_flops_percent")
# Report metric -> (inclusive column, own column). Operator FLOPs carry both in the report
# (``operator_flops`` is already inclusive); the module formulas are per call and summed here.
_COSTS = {
    "module_flops": ("module_flops", "module_flops_self"),
    "macs": ("macs", "macs_self"),
    "dmas": ("dmas", "dmas_self"),
    "operator_flops_self": ("operator_flops", "operator_flops_self"),
}
# A percent column is the row's inclusive value over the model total of the same method.
_PERCENT = {
    "module_flops_percent": ("module_flops", "module_flops"),
    "operator_flops_percent": ("operator_flops_self", "operator_flops"),
}
_SPATIAL = ("receptive_field", "effective_stride", "effective_padding")
# Columns read from a MemoryReport (memory.md 4) rather than from the AnalysisReport: usable in
# ``col_names`` only beside ``memory=`` (so they are not among the analysis columns above).
MEMORY_COLUMNS: dict[str, str] = {"saved_activations": "Saved act."}
MEMORY_NOTE = (
    "Saved act.: bytes each call saved for backward, from the MemoryReport of measure_memory\n"
    "  (joined on path and call index; '-' is a call that report does not have: unknown, not 0;\n"
    "  on a (×N) row 'varies' means the folded calls saved different amounts)."
)


def _header(name: str) -> tuple[str, str]:
    """A column header on two lines: what it counts, then ``incl.`` or ``own`` (a share: ``% X``)."""
    label = {**COLUMNS, **MEMORY_COLUMNS}[name]
    for qualifier in (" incl.", " own"):
        if label.endswith(qualifier):
            return label[: -len(qualifier)], qualifier.strip()
    if name in _PERCENT or name in _SPATIAL:  # "% Module" / "FLOPs": a share of the inclusive value
        top, _, bottom = label.rpartition(" ")
        return top, bottom
    return label, ""


def _plain(value: float) -> str:
    """A number without e-notation: ints as written, floats to 6 decimals with trailing zeros cut."""
    if not isinstance(value, float):
        return str(value)
    if not math.isfinite(value):
        return str(value)
    if value.is_integer():
        return str(int(value))
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    if text in ("0", "-0"):  # smaller than 1e-6: every digit Python would print, positionally
        text = format(Decimal(repr(value)), "f")
    return text


def si(value: float, unit: str) -> str:
    """``201824`` -> ``201.82 k<unit>``; values under 1,000 keep their integer form."""
    for scale, prefix in _SI:
        if abs(value) >= scale:
            return f"{value / scale:.2f} {prefix}{unit}".rstrip()
    return f"{_plain(value)} {unit}".rstrip()


def format_metric(result: Mapping[str, Any] | None, *, si_prefix: bool = True) -> str:
    """A MetricResult as text: the value, ``known ≥ X`` (partial) or ``unavailable``."""
    if result is None:
        return "-"
    unit = result["unit"]
    status = result["status"]
    if status == "complete":
        return si(result["value"], unit) if si_prefix else f"{result['value']:,} {unit}"
    if status == "partial":
        known = si(result["known_value"], unit) if si_prefix else f"{result['known_value']:,} {unit}"
        return f"known ≥ {known}"
    return "unavailable"


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


def _shape(meta: Mapping[str, Any]) -> str:
    """An input/output description as text: shapes for tensors, the class name of other objects."""
    kind = meta.get("kind")
    if kind in ("tensor", "size") and isinstance(meta.get("shape"), list):
        return ("Size" if kind == "size" else "") + str(list(meta["shape"]))
    if kind == "nested_tensor":
        return "nested"  # ragged: a report never invents a shape for it
    if kind == "scalar":
        return str(meta.get("type", kind))  # "int": what the call got, never its value
    if kind in ("tuple", "list"):
        return "(" + ", ".join(_shape(item) for item in meta["items"]) + ")"
    if kind == "mapping":
        return "{" + ", ".join(_shape(item["value"]) for item in meta["items"]) + "}"
    if kind == "none":
        return "None"  # as Python writes it
    if kind == "not_called":
        return NOT_CALLED_TEXT
    if kind == "object" and isinstance(meta.get("type"), str) and meta["type"]:
        return meta["type"].rpartition(".")[2]  # DynamicCache, not "object"
    return str(kind)


def _wrap(text: str, wrap_mode: str) -> str:
    return shorten_shape(text, _SHAPE_WIDTH) if wrap_mode == "mid" else text


def _combine(results: Sequence[Mapping[str, Any]]) -> tuple[str, float] | None:
    """Sum results the way totals do: complete only when every part is; ``None`` when none exist."""
    if not results:
        return None
    known = [r["known_value"] for r in results if r["known_value"] is not None]
    if all(r["status"] == "complete" for r in results):
        return "complete", sum(known)
    return ("partial", sum(known)) if known else ("unavailable", 0)


def _number(status: str, value: float, text: str) -> str:
    if status == "complete":
        return text
    return f"≥ {text}" if status == "partial" else "unavailable"


def _si_cell(combined: tuple[str, float] | None) -> str:
    if combined is None:
        return "-"
    return _number(combined[0], combined[1], si(combined[1], ""))


class _Cells:
    """Cell text of one row, from the report's layers and totals only.

    A row shows its first call (a fold's other blocks have exactly the same values): inclusive
    cells sum that call's subtree, own cells read the call alone.
    """

    def __init__(
        self, report: Mapping[str, Any], wrap_mode: str, memory: Mapping[str, Any] | None = None
    ) -> None:
        self.layers = report["layers"]
        self.totals = report["totals"]
        self.wrap_mode = wrap_mode
        # Parameters of modules never called are in the total but at no call: the root (which holds
        # every module) counts them; any other inclusive count may miss some, so it is a lower bound.
        self.uncalled = self.totals["parameters"]["value"] - sum(
            layer["parameters"]["trainable"] + layer["parameters"]["frozen"] for layer in self.layers
        )
        self.saved = (
            {}
            if memory is None
            else {
                (call["path"], call["call_index"]): call["activations_saved"] for call in memory["by_module"]
            }
        )

    def results(self, indices: Sequence[int], name: str) -> list[Mapping[str, Any]]:
        """The calls' own results (attribution shares first, views-3.md 1), absent ones left out."""
        found = (own_result(self.layers[i], name) for i in indices)
        return [r for r in found if r is not None]

    def _cost(self, indices: Sequence[int], metric: str) -> str:
        combined = _combine(self.results(indices, metric))
        if combined is None and is_covered(self.layers[indices[0]], metric):
            return COVERED  # inside an ancestor's inclusive estimate, not attributed to this row
        return _si_cell(combined)

    def cell(self, row: TableRow, column: str) -> str:
        layer = self.layers[row.layers[0]]
        if column == "output_shape":
            return _wrap(_shape(layer["output"]), self.wrap_mode)
        if column in ("params", "trainable") and row.layers[0] == 0 and self.uncalled:
            return self._root_params(column)
        if column in ("params", "params_self", "trainable"):
            alone = column == "params_self"
            return self._params(
                row.layers[:1] if alone else row.subtree, column, bound=not alone and self.uncalled > 0
            )
        for metric, (inclusive, own) in _COSTS.items():
            if column == own:
                return self._cost(row.layers[:1], metric)
            if column == inclusive:
                if metric == "operator_flops_self":  # the report's inclusive figure of the call
                    return self._cost(row.layers[:1], "operator_flops")
                return self._cost(row.subtree, metric)
        if column in _PERCENT:
            return self._percent(row, *_PERCENT[column])
        if column == "saved_activations":
            return self._saved(row)
        return self._spatial(layer["metrics"].get(column))

    def _params(self, indices: Sequence[int], column: str, bound: bool = False) -> str:
        """Parameters first attributed to these calls (each tensor once, as in the total).

        ``bound``: some module was never called, and it may sit inside these calls' modules, so the
        count is a lower bound (``≥``) and no parameter seen is not proof of none (``unknown``).
        """
        params = [self.layers[i]["parameters"] for i in indices]
        trainable = sum(p["trainable"] for p in params)
        frozen = sum(p["frozen"] for p in params)
        count = trainable + frozen
        if column == "trainable":
            if count == 0:
                return "unknown" if bound else "-"
            return "True" if frozen == 0 else ("False" if trainable == 0 else "Partial")
        shared = " (shared)" if any(p["shared"] for p in params) else ""
        return ("≥ " if bound else "") + f"{count:,}{shared}"

    def _root_params(self, column: str) -> str:
        """The root's inclusive parameters: the model's totals, never-called modules included."""
        trainable = self.totals["trainable_parameters"]["value"]
        frozen = self.totals["frozen_parameters"]["value"]
        if column == "trainable":
            if trainable + frozen == 0:
                return "-"
            return "True" if frozen == 0 else ("False" if trainable == 0 else "Partial")
        return f"{self.totals['parameters']['value']:,}"

    def _saved(self, row: TableRow) -> str:
        """Saved activations of the row's call: the MemoryReport's figure already covers its children.

        A fold row stands for N calls that the analysis found identical; the MemoryReport's run may
        still differ between them, so the cell shows their common value, ``varies`` when they
        differ, and a lower bound when some block's call is missing from that report.
        """
        keys = [(self.layers[i]["path"], self.layers[i]["call_index"]) for i in row.layers]
        found = [self.saved[key] for key in keys if key in self.saved]
        if not found:
            return "-"
        if len({(r["status"], r["known_value"]) for r in found}) > 1:
            return "varies"
        status, value = found[0]["status"], found[0]["known_value"]
        if status == "unavailable" or value is None:
            return "unavailable"
        if status == "complete" and len(found) < len(keys):
            status = "partial"  # a block the report lacks: its figure is unknown
        text = human_bytes(value)
        return text if status == "complete" else f"≥ {text}"

    def _percent(self, row: TableRow, metric: str, total_name: str) -> str:
        if metric == "operator_flops_self":
            combined = _combine(self.results(row.layers[:1], "operator_flops"))
        else:
            combined = _combine(self.results(row.subtree, metric))
        if combined is None:
            return "-"
        total = self.totals.get(total_name)
        status, value = combined
        if status == "unavailable" or total is None or total["status"] != "complete":
            return "unavailable"  # a share of a lower bound is not a share of anything
        if total["value"] == 0:
            return "n/a"
        return _number(status, value, f"{100 * value / total['value']:.2f} %")

    @staticmethod
    def _spatial(result: Mapping[str, Any] | None) -> str:
        if result is None:
            return "-"
        if result["method"] == "not_applicable":
            return "n/a"
        value = result["known_value"]
        text = "" if value is None else _plain(value)
        return _number(result["status"], value or 0, text)


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
    depth = model.auto_depth() if max_depth is None else max_depth
    rows = model.rows(depth)
    cells = _Cells(report, wrap_mode, memory)
    names = [
        [escape_control(row.prefix + row.name), escape_control(report["layers"][row.layers[0]]["type"])]
        for row in rows
    ]
    values = {name: [cells.cell(row, name) for row in rows] for name in columns}
    layout = _Layout(names, values, wrap_mode, width)
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
    footer = _footer(
        report,
        rows,
        depth,
        model.deepest,
        fold,
        _SPELLINGS[spelling],
        receptive_field or effective_rf_stats,
        covered=any(COVERED in row for row in table),
    )
    left_out = layout.dropped
    if left_out:
        labels = ", ".join(" ".join(part for part in _header(name) if part) for name in left_out)
        hint = _SPELLINGS[spelling]["width"].format(layout.natural(columns))
        at = next(i for i, line in enumerate(footer) if line.startswith("Columns: ")) + 1
        footer.insert(at, f"Columns left out at width {width}: {labels} ({hint} shows every column).")
    if memory is not None:
        footer += MEMORY_NOTE.splitlines()
    for line in footer:
        indent = line[: len(line) - len(line.lstrip(" "))]
        lines += wrap(line.strip(), max(width, len(rule)), indent, indent + "    ")
    lines.append(rule)
    return "\n".join(lines)


class _Layout:
    """Fits the table to a width: names and shapes shorten first, then columns drop (views-3.md 2)."""

    def __init__(
        self, names: list[list[str]], values: dict[str, list[str]], wrap_mode: str, width: int
    ) -> None:
        self.names = names
        self.values = values
        self.wrap_mode = wrap_mode
        self.width = width
        self.dropped: list[str] = []  # columns left out, in the order they went

    def _build(
        self, keep: Sequence[str], hard: bool
    ) -> tuple[list[tuple[str, str]], list[list[str]], list[int]]:
        headers = [("Layer", ""), ("Type", ""), *(_header(name) for name in keep)]
        table = [[*pair, *(self.values[name][i] for name in keep)] for i, pair in enumerate(self.names)]
        shape = (
            2 + list(keep).index("output_shape")
            if "output_shape" in keep and self.wrap_mode == "mid"
            else None
        )
        return headers, table, fit(headers, table, shape, self.width, hard)

    def natural(self, keep: Sequence[str]) -> int:
        """Characters per line with every column at its full width (nothing shortened)."""
        headers = [("Layer", ""), ("Type", ""), *(_header(name) for name in keep)]
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


def _bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.2f} {unit}" if unit != "B" else f"{count} B"
        size /= 1024
    return f"{count} B"


def _rows_line(
    report: Mapping[str, Any],
    rows: Sequence[TableRow],
    depth: int,
    deepest: int,
    fold: bool,
    spelled: Mapping[str, str],
) -> str:
    calls = sum(1 for layer in report["layers"] if is_called(layer))
    uncalled = len(report["layers"]) - calls
    what = f"{calls} layer calls" + (f" and {uncalled} modules not called" if uncalled else "")
    if len(rows) == len(report["layers"]):
        return f"Rows: all {what} shown." if uncalled else f"Rows: all {calls} layer calls shown."
    hints = []
    if any(row.collapsed for row in rows):
        every = spelled["max_depth"].format(deepest)
        hints.append(
            f"calls deeper than depth {depth} are in their ancestors' incl. cells ({every} shows every depth)"
        )
    if fold and any(row.fold > 1 for row in rows):
        hints.append(
            "a (×N) row shows one of N identical blocks, each with these values "
            f"({spelled['fold']} lists them)"
        )
    return f"Rows: {len(rows)} for {what}; " + "; ".join(hints) + "."


def _row_kind_lines(report: Mapping[str, Any], covered: bool) -> list[str]:
    """What not-called rows, attributed shares and ``covered`` cells mean (views-3.md 1), when present."""
    layers = report["layers"]
    lines = []
    uncalled = [layer for layer in layers if not is_called(layer)]
    if uncalled:
        held = sum(layer["parameters"]["trainable"] + layer["parameters"]["frozen"] for layer in uncalled)
        lines.append(
            f"Not called: {len(uncalled)} module(s) never ran as a module call (shape '{NOT_CALLED_TEXT}'); "
            f"their rows hold their own {held:,} params; work done with them is counted in the call "
            "that ran it."
        )
    if any("attribution" in layer for layer in layers):
        lines.append(
            "Rows inside a native Transformer call show their share of its inclusive estimate "
            "(by the module formulas; the shares sum to it)."
        )
    if covered:
        lines.append(f"{COVERED}: included in an ancestor's inclusive estimate (see that row's incl. value).")
    return lines


def _footer(
    report: Mapping[str, Any],
    rows: Sequence[TableRow],
    depth: int,
    deepest: int,
    fold: bool,
    spelled: Mapping[str, str],
    geometry: bool = False,
    covered: bool = False,
) -> list[str]:
    """Parameter and cost totals, what the rows stand for, then the diagnostics (issue 23 item 1).

    Only diagnostics about requested metrics are counted and grouped; those about the receptive
    field when ``geometry`` (its columns) was not asked for fold into one informational line.
    """
    totals = report["totals"]
    trainable = totals["trainable_parameters"]["value"]
    frozen = totals["frozen_parameters"]["value"]
    size = totals["parameter_bytes"]["value"] + totals["buffer_bytes"]["value"]
    lines = [
        f"Trainable params: {trainable:,}",
        f"Non-trainable params: {frozen:,}",
        f"Total params: {totals['parameters']['value']:,}",
        f"Model size (params + buffers): {_bytes(size)}",
    ]
    attributed = sum(
        layer["parameters"]["trainable"] + layer["parameters"]["frozen"] for layer in report["layers"]
    )
    if attributed != totals["parameters"]["value"]:  # a report saved before not-called rows existed
        unattributed = totals["parameters"]["value"] - attributed
        lines.append(
            f"Params of modules never called: {unattributed:,} (in the total and the root's incl. count; "
            "other incl. counts may miss them: ≥)"
        )
    lines += _row_kind_lines(report, covered)
    lines.append("-" * 20)
    labels = {
        "module_flops": "Module FLOPs (formula)",
        "macs": "MACs (formula)",
        "dmas": "DMAs (formula)",
        "operator_flops": "Operator FLOPs (dispatch)",
    }
    for name, label in labels.items():
        if name in totals:
            result = totals[name]
            text = "not requested" if result["method"] == "not_requested" else format_metric(result)
            lines.append(f"{label}: {text}")
            if name == "operator_flops":
                note = method_note(report)  # issue 23 item 7: what the method label means
                if note is not None:
                    lines.append(f"  {note}")
    lines.append(_rows_line(report, rows, depth, deepest, fold, spelled))
    lines.append(
        "Columns: incl. counts the row's call and every call it made (once each); own counts the call alone."
    )
    summary = summarize_diagnostics(report, receptive_field=geometry)
    informational = informational_line(summary, spelled["receptive_field"])
    count, groups = summary["count"], summary["groups"]
    if not count:
        lines.append("Diagnostics: 0")
    else:
        incomplete = any(
            result["status"] != "complete" and result["method"] != "not_requested"
            for result in totals.values()
        )
        lines.append(
            f"Diagnostics: {count} in {len(groups)} group(s)"
            + ("; incomplete totals are lower bounds" if incomplete else "")
            + " (count × code: subject [metrics] at paths -> what resolves it):"
        )
        lines += ["  " + line for line in format_groups(groups, DIAGNOSTIC_LINES)]
    if informational is not None:
        lines.append(informational)
    return lines
