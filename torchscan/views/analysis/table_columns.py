"""The summary table's columns and number wording (analysis.md 8): what each column counts.

Cost columns are inclusive (a row counts its call and every call it made) or own (the call
alone); shares are of the model total of the same method. Numbers are written without e-notation,
with SI prefixes in cells and ``known ≥ X`` for a lower bound in totals. No torch, no report reads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
COVERED = "covered"  # a cost cell inside an ancestor's inclusive estimate (explained in the footer)

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
COSTS = {
    "module_flops": ("module_flops", "module_flops_self"),
    "macs": ("macs", "macs_self"),
    "dmas": ("dmas", "dmas_self"),
    "operator_flops_self": ("operator_flops", "operator_flops_self"),
}
# A percent column is the row's inclusive value over the model total of the same method.
PERCENT = {
    "module_flops_percent": ("module_flops", "module_flops"),
    "operator_flops_percent": ("operator_flops_self", "operator_flops"),
}
SPATIAL = ("receptive_field", "effective_stride", "effective_padding")
# Columns read from a MemoryReport (memory.md 4) rather than from the AnalysisReport: usable in
# ``col_names`` only beside ``memory=`` (so they are not among the analysis columns above).
MEMORY_COLUMNS: dict[str, str] = {"saved_activations": "Saved act."}
MEMORY_NOTE = (
    "Saved act.: bytes each call saved for backward, from the MemoryReport of measure_memory\n"
    "  (joined on path and call index; '-' is a call that report does not have: unknown, not 0;\n"
    "  on a (×N) row 'varies' means the folded calls saved different amounts)."
)


def header(name: str) -> tuple[str, str]:
    """A column header on two lines: what it counts, then ``incl.`` or ``own`` (a share: ``% X``)."""
    label = {**COLUMNS, **MEMORY_COLUMNS}[name]
    for qualifier in (" incl.", " own"):
        if label.endswith(qualifier):
            return label[: -len(qualifier)], qualifier.strip()
    if name in PERCENT or name in SPATIAL:  # "% Module" / "FLOPs": a share of the inclusive value
        top, _, bottom = label.rpartition(" ")
        return top, bottom
    return label, ""


def plain(value: float) -> str:
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
    return f"{plain(value)} {unit}".rstrip()


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
