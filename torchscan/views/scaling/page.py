"""HTML page and terminal summary of a ScalingReport (attention-and-scaling.md 2); never imports torch.

The page embeds the log-log SVG of :mod:`torchscan.views.scaling.figure`, a table of the fits (status,
method, polynomial, exponent), the operator and module-type fits of each series, the measured
points, the diagnostics and the context. Plain HTML, no script, every report string escaped,
byte-identical for the same report.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from torchscan.report.scaling_schema import EXACT_METHOD
from torchscan.views.analysis.explorer import asset
from torchscan.views.benchmark.page import CSP
from torchscan.views.common.number_style import quantity
from torchscan.views.common.text import esc, fixed, number
from torchscan.views.scaling.figure import scaling_svg, top_parts

NOTE = (
    "A fit describes the sizes that were measured: a polynomial is exact over those points (confirmed by at "
    "least one point beyond those that determine it) and promises nothing beyond the largest size; an "
    "exponent is the log-log slope between the two largest sizes, not an asymptotic order. Module types "
    "are inclusive and nest (a block contains its attention), so their fits must not be added. A partial "
    "fit describes the counted part only. Latency fits are least-squares curves through noisy medians of "
    "this machine, never exact; FLOPs and bytes say nothing about time on their own."
)
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _term(coefficient: str, variable: str, power: int) -> str:
    if power == 0:
        return coefficient
    base = variable if power == 1 else f"{variable}{str(power).translate(_SUPERSCRIPT)}"
    return base if coefficient == "1" else f"{coefficient}·{base}"


def polynomial_text(fit: Mapping[str, Any], variable: str) -> str:
    """``156·seq² + 13,504·seq`` (exact, rationals as ``3/2``), ``≈ 0.0002·seq + 0.01`` (least squares)."""
    if fit["coefficients"] is None:
        return "no polynomial" if fit["status"] != "unavailable" else "unavailable"
    exact = fit["method"] == EXACT_METHOD
    terms = []
    for power in range(len(fit["coefficients"]) - 1, -1, -1):
        if exact:
            rational = Fraction(fit["numerators"][power], fit["denominator"])
            if rational == 0:
                continue
            magnitude = abs(rational)
            shown = number(magnitude.numerator)
            if magnitude.denominator != 1:
                shown = f"{shown}/{number(magnitude.denominator)}"
            negative = rational < 0
        else:
            value = fit["coefficients"][power]
            if value == 0:
                continue
            shown, negative = fixed(abs(value), 4), value < 0
        term = _term(shown, variable, power)
        terms.append((negative, term))
    if not terms:
        return "0"
    text = ("-" if terms[0][0] else "") + terms[0][1]
    for negative, term in terms[1:]:
        text += f" {'-' if negative else '+'} {term}"
    return text if exact else f"≈ {text}"


def exponent_text(fit: Mapping[str, Any]) -> str:
    """``1.98`` or ``unknown``."""
    return "unknown" if fit["exponent"] is None else fixed(fit["exponent"], 3)


def fit_words(fit: Mapping[str, Any], variable: str) -> str:
    """``complete · exact degree 2: 156·seq² + … · exponent 1.34``."""
    if fit["status"] == "unavailable":
        return "unavailable · fewer than two values"
    how = "exact" if fit["method"] == EXACT_METHOD else "least-squares fit"
    degree = "no polynomial fits exactly" if fit["degree"] is None else f"{how} degree {fit['degree']}"
    formula = "" if fit["degree"] is None else f": {polynomial_text(fit, variable)}"
    return f"{fit['status']} · {degree}{formula} · exponent {exponent_text(fit)}"


def _fit_rows(report: Mapping[str, Any]) -> str:
    rows = []
    for metric, by_axis in report["fits"].items():
        for axis, fit in by_axis.items():
            at = ", ".join(f"{k}={number(v)}" for k, v in fit["at"].items()) or "-"
            rows.append(
                f'<tr><th scope="row">{esc(metric)}</th><td>{esc(axis)}</td><td>{esc(at)}</td>'
                f'<td><span class="badge {esc(fit["status"])}">{esc(fit["status"])}</span></td>'
                f"<td>{esc(fit['method'])}</td><td>{esc(polynomial_text(fit, axis))}</td>"
                f"<td>{esc(exponent_text(fit))}</td></tr>"
            )
    return (
        "<table><caption>Fits: along each axis, the other axes at their largest sizes</caption><thead><tr>"
        "<th>Metric</th><th>Axis</th><th>At</th><th>Status</th><th>Method</th><th>Polynomial</th>"
        f"<th>Exponent (two largest sizes)</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _parts(report: Mapping[str, Any]) -> str:
    sections = []
    for metric, by_axis in report["fits"].items():
        for axis, fit in by_axis.items():
            for key, label in (("by_operator", "operator"), ("by_module_type", "module type (inclusive)")):
                if not fit[key]:
                    continue
                rows = "".join(
                    f'<tr><th scope="row">{esc(name)}</th><td>{esc(part["status"])}</td>'
                    f"<td>{esc('-' if part['degree'] is None else part['degree'])}</td>"
                    f"<td>{esc(polynomial_text(part, axis))}</td><td>{esc(exponent_text(part))}</td></tr>"
                    for name, part in fit[key].items()
                )
                sections.append(
                    f"<details><summary>{esc(metric)} along {esc(axis)} by {esc(label)} "
                    f"({len(fit[key])})</summary><table><thead><tr><th>{esc(label)}</th><th>Status</th>"
                    "<th>Degree</th><th>Polynomial</th><th>Exponent</th></tr></thead>"
                    f"<tbody>{rows}</tbody></table></details>"
                )
    return "<h2>Which part grows how</h2>" + "".join(sections) if sections else ""


def _value(result: Mapping[str, Any] | None) -> str:
    if result is None or result["known_value"] is None:
        return "unknown"
    shown = quantity(result["known_value"], result["unit"])
    return shown if result["status"] == "complete" else f"≥ {shown}"


def _points(report: Mapping[str, Any]) -> str:
    metrics = report["context"]["metrics"]
    extra = ["latency_iqr"] if "latency" in metrics else []
    head = ["#", *report["axes"], *metrics, *extra, "errors"]
    rows = []
    for point in report["points"]:
        cells = [
            str(point["index"]),
            *(number(point["sizes"][a]) for a in report["axes"]),
            *(_value(point.get(m)) for m in [*metrics, *extra]),
            ", ".join(f"{k}: {v}" for k, v in point.get("errors", {}).items()) or "-",
        ]
        rows.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    return (
        "<table><caption>Measured points (≥: lower bound; unknown: unavailable, never zero)</caption>"
        "<thead><tr>"
        + "".join(f"<th>{esc(h)}</th>" for h in head)
        + f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _diagnostics(report: Mapping[str, Any]) -> str:
    items = "".join(
        f"<li><code>{esc(e['code'])}</code> {esc(e['metric'])}: {esc(e['message'])}</li>"
        for e in report["diagnostics"]
    )
    return f"<h2>Diagnostics</h2><ul>{items}</ul>" if items else ""


def _context(report: Mapping[str, Any]) -> str:
    rows = "".join(
        f'<tr><th scope="row">{esc(key)}</th><td>{esc(value if value is not None else "-")}</td></tr>'
        for key, value in report["context"].items()
    )
    return f"<table><caption>Context</caption><tbody>{rows}</tbody></table>"


def render_scaling(report: Mapping[str, Any], *, title: str) -> str:
    """The HTML page of a validated ScalingReport."""
    body = (
        f"<figure>{scaling_svg(report)}<figcaption>Each metric against each axis on log-log axes: the thick "
        "line is the total, thin lines the top operators; a line of slope k grows like sizeᵏ.</figcaption>"
        f"</figure>{_fit_rows(report)}{_parts(report)}{_points(report)}{_diagnostics(report)}{_context(report)}"
        f"<p class=note>{esc(NOTE)}</p>"
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{esc(title)}</title><style>{asset('explorer.css')}</style></head><body>"
        f'<main id="main"><h1>{esc(title)}</h1>{body}</main></body></html>\n'
    )


def summary_text(report: Mapping[str, Any], label: str) -> str:
    """Lines for a terminal: each fit, its top operators and module types, failed points, diagnostics."""
    axes = "; ".join(f"{name} {', '.join(map(str, sizes))}" for name, sizes in report["axes"].items())
    lines = [f"scaling of {label}: {len(report['points'])} points ({axes})"]
    for metric, by_axis in report["fits"].items():
        for axis, fit in by_axis.items():
            at = ", ".join(f"{k}={v}" for k, v in fit["at"].items())
            lines.append(f"{metric} along {axis}{f' (at {at})' if at else ''}: {fit_words(fit, axis)}")
            for name in top_parts(report, metric, axis):
                lines.append(f"  {name}: {fit_words(fit['by_operator'][name], axis)}")
            for name in top_parts(report, metric, axis, "by_module_type"):
                lines.append(f"  [{name}] {fit_words(fit['by_module_type'][name], axis)}")
    for point in report["points"]:
        if point.get("errors"):
            failed = ", ".join(f"{k}: {v}" for k, v in point["errors"].items())
            sizes = ", ".join(f"{k}={v}" for k, v in point["sizes"].items())
            lines.append(f"point {sizes} failed ({failed})")
    for entry in report["diagnostics"]:
        lines.append(f"  {entry['code']} ({entry['metric']}): {entry['message']}")
    return "\n".join(lines)
