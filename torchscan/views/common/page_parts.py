"""Markup pieces the report pages share: status badges, facts tables, diagnostics, "does not mean".

Every number goes through :mod:`torchscan.views.common.number_style`; every report string is escaped
here. A status is always a word in a badge (colour never carries it alone), a lower bound reads
``≥`` and an unknown never reads as a number. Never imports torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from torchscan.views.common.number_style import measure, not_applicable, quantity
from torchscan.views.common.text import esc, number

HARDWARE_LABELS = {
    "name": ("Name", None),
    "peak_flops_per_second": ("Peak (stated)", "FLOPs/s"),
    "memory_bandwidth_bytes_per_second": ("Memory bandwidth (stated)", "bytes/s"),
}


def badge_parts(result: Mapping[str, Any] | None, *, with_exact: bool = False) -> tuple[str, str]:
    """Status word and page-style words of a result: ``("complete", "12.79 MFLOPs")``; a partial one
    reads ``≥ … (lower bound; full value unknown)``. ``with_exact`` appends the exact recorded number
    when the page-style words round it (``12.79 MFLOPs (exact 12,785,376 FLOPs)``)."""
    if not_applicable(result):
        return "unavailable", "not applicable"
    status = "unavailable" if result is None else result["status"]
    text = measure(result)
    if with_exact and result is not None and result.get("known_value") is not None:
        precise = exact(result).removeprefix("≥ ")
        if precise != text.removeprefix("≥ "):
            text += f" (exact {precise})"
    if status == "partial":
        text += " (lower bound; full value unknown)"
    return status, text


def badge(result: Mapping[str, Any] | None, *, with_exact: bool = False) -> str:
    """``<badge>complete</badge> 12.79 MFLOPs``; partial reads ``≥ … (lower bound)``; unknown is words."""
    if not_applicable(result):
        return '<span class="badge unavailable">not applicable</span>'
    status, text = badge_parts(result, with_exact=with_exact)
    return f'<span class="badge {esc(status)}">{esc(status)}</span> {esc(text)}'


def exact(result: Mapping[str, Any] | None) -> str:
    """The exact recorded number with separators (``12,785,376``), or ``—`` when there is none."""
    if result is None or result.get("known_value") is None:
        return "—"
    prefix = "≥ " if result["status"] == "partial" else ""
    return f"{prefix}{number(result['known_value'])} {result['unit']}"


def facts_table(rows: Iterable[tuple[str, str]], *, caption: str, ident: str = "") -> str:
    """A two-column table of (label, value) text rows, both escaped."""
    body = "".join(
        f'<tr><th scope="row">{esc(label)}</th><td>{esc(value)}</td></tr>' for label, value in rows
    )
    attribute = f' id="{esc(ident)}"' if ident else ""
    return f"<table{attribute}><caption>{esc(caption)}</caption><tbody>{body}</tbody></table>"


def context_value(value: Any) -> str:
    """A context entry as words: lists joined, ``None`` as ``not recorded``, booleans as yes/no."""
    if value is None:
        return "not recorded"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(context_value(item) for item in value) or "none"
    if isinstance(value, Mapping):
        return "; ".join(f"{key}: {context_value(item)}" for key, item in value.items())
    if isinstance(value, (int, float)):
        return number(value)
    return str(value)


def hardware_table(facts: Mapping[str, Any]) -> str:
    """The caller's stated hardware facts as a table in page units (never raw JSON)."""
    rows = []
    for key, value in facts.items():
        label, unit = HARDWARE_LABELS.get(key, (key, None))
        if unit is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
            rows.append((label, quantity(value, unit)))
        else:
            rows.append((label, context_value(value)))
    return facts_table(rows, caption="Hardware (stated by the caller, not measured)", ident="hardware")


def context_table(context: Mapping[str, Any], *, caption: str = "Context") -> str:
    """Every context entry as a row; a ``hardware`` entry becomes its own table below."""
    rows = [(key, context_value(value)) for key, value in context.items() if key != "hardware"]
    table = facts_table(rows, caption=caption, ident="context")
    if isinstance(context.get("hardware"), Mapping):
        table += hardware_table(context["hardware"])
    return table


def diagnostics_section(groups: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> str:
    """One ``section#diagnostics`` listing each group's diagnostics; its heading states the count.

    ``groups`` is ``[(label, diagnostics), ...]`` (e.g. the report's and its operator counter's);
    items get ids ``diagnostic-<i>`` in order. A page with none says ``None.``
    """
    items: list[str] = []
    for label, entries in groups:
        for entry in entries:
            where = f" (path {entry['path'] or '(root)'})" if "path" in entry else ""
            operator = f" (operator {entry['operator']})" if "operator" in entry else ""
            source = f"{label}: " if label else ""
            items.append(
                f'<li id="diagnostic-{len(items)}"><span class="badge {esc(entry["severity"])}">'
                f"{esc(entry['severity'])}</span> {esc(source)}<code>{esc(entry['code'])}</code> "
                f"{esc(entry['metric'])}: {esc(entry['message'])}{esc(where)}{esc(operator)}</li>"
            )
    return (
        f'<section id="diagnostics"><h2>Diagnostics ({len(items)})</h2>'
        f"<ul>{''.join(items) or '<li>None.</li>'}</ul></section>"
    )


def not_meaning_section(points: Sequence[str]) -> str:
    """``section#not-mean``: what the page's numbers do not mean, one item per point."""
    items = "".join(f"<li>{esc(point)}</li>" for point in points)
    return f'<section id="not-mean"><h2>What these numbers do not mean</h2><ul>{items}</ul></section>'


def card(title: str, result: Mapping[str, Any] | None, note: str = "") -> str:
    """A summary card: heading, badge and page-style value, its method, an optional note."""
    method = f'<p class="card-method">Method: {esc(result["method"])}</p>' if result else ""
    extra = f'<p class="card-note">{esc(note)}</p>' if note else ""
    return (
        f'<section class="card"><h2>{esc(title)}</h2><p class="metric-value">{badge(result)}</p>'
        f"{method}{extra}</section>"
    )
