"""The plain-text summary table (analysis.md 8). A view: it reads a report and never imports torch.

Nothing may parse this table; the report is the source of truth. Incomplete values are written so
they cannot be mistaken for complete ones: ``known ≥ X`` for a lower bound, ``unavailable`` when
nothing was measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_SHAPE_WIDTH = 28


def si(value: float, unit: str) -> str:
    """``201824`` -> ``201.82 k<unit>``; values under 1,000 keep their integer form."""
    for scale, prefix in _SI:
        if abs(value) >= scale:
            return f"{value / scale:.2f} {prefix}{unit}"
    return f"{value:g} {unit}" if isinstance(value, float) else f"{value} {unit}"


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


def _shape(meta: Mapping[str, Any]) -> str:
    kind = meta.get("kind")
    if kind == "tensor":
        return str(list(meta["shape"]))
    if kind in ("tuple", "list"):
        return "(" + ", ".join(_shape(item) for item in meta["items"]) + ")"
    if kind == "mapping":
        return "{" + ", ".join(_shape(item["value"]) for item in meta["items"]) + "}"
    return str(kind)


def _wrap(text: str, wrap_mode: str) -> str:
    if wrap_mode == "mid" and len(text) > _SHAPE_WIDTH:
        half = (_SHAPE_WIDTH - 3) // 2
        return f"{text[:half]}...{text[-half:]}"
    return text


def _cell(result: Mapping[str, Any] | None) -> str:
    if result is None:
        return "-"
    if result["status"] == "complete":
        value = result["value"]
        return f"{value:g}" if isinstance(value, float) else str(value)
    if result["status"] == "partial":
        return f"≥{result['known_value']}"
    return "n/a" if result["method"] == "not_applicable" else "unavailable"


def _bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.2f} {unit}" if unit != "B" else f"{count} B"
        size /= 1024
    return f"{count} B"


def format_table(
    report: Mapping[str, Any],
    *,
    wrap_mode: str = "mid",
    max_depth: int | None = None,
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
    operator_flops: bool = False,
) -> str:
    """Render an AnalysisReport as the summary table text (no colour codes)."""
    headers = ["Layer", "Type", "Output Shape", "Param #", "Trainable"]
    if receptive_field:
        headers.append("Receptive field")
    if effective_rf_stats:
        headers += ["Effective stride", "Effective padding"]
    if operator_flops:
        headers.append("Operator FLOPs")
    rows: list[list[str]] = []
    for layer in report["layers"]:
        if max_depth is not None and layer["depth"] > max_depth:
            continue
        params = layer["parameters"]
        count = params["trainable"] + params["frozen"]
        name = (
            "  " * layer["depth"]
            + layer["name"]
            + (f" #{layer['call_index']}" if layer["call_index"] else "")
        )
        row = [
            name,
            layer["type"],
            _wrap(_shape(layer["output"]), wrap_mode),
            f"{count:,}" + (" (shared)" if params["shared"] else ""),
            "-"
            if count == 0
            else ("True" if params["frozen"] == 0 else ("False" if not params["trainable"] else "Partial")),
        ]
        metrics = layer["metrics"]
        if receptive_field:
            row.append(_cell(metrics.get("receptive_field")))
        if effective_rf_stats:
            row += [_cell(metrics.get("effective_stride")), _cell(metrics.get("effective_padding"))]
        if operator_flops:
            row.append(format_metric(metrics.get("operator_flops")))
        rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    rule = "_" * (sum(widths) + 2 * (len(widths) - 1))
    lines = [rule, "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)), "=" * len(rule)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    lines.append("=" * len(rule))
    lines += _footer(report)
    lines.append(rule)
    return "\n".join(lines)


def _footer(report: Mapping[str, Any]) -> list[str]:
    totals = report["totals"]
    trainable = totals["trainable_parameters"]["value"]
    frozen = totals["frozen_parameters"]["value"]
    size = totals["parameter_bytes"]["value"] + totals["buffer_bytes"]["value"]
    lines = [
        f"Trainable params: {trainable:,}",
        f"Non-trainable params: {frozen:,}",
        f"Total params: {totals['parameters']['value']:,}",
        f"Model size (params + buffers): {_bytes(size)}",
        "-" * 20,
    ]
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
    count = len(report["diagnostics"])
    if count:
        lines.append(f"Diagnostics: {count} (see report['diagnostics']); incomplete totals are lower bounds")
    else:
        lines.append("Diagnostics: 0")
    return lines
