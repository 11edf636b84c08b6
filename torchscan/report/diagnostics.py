"""Diagnostic constructor, deduplication (analysis.md 5.3) and the sanitizer of caller error text."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from torchscan.report.sanitize import MAX_ERROR_TEXT, error_text, sanitize_text
from torchscan.report.schema import SPATIAL_FIELDS, Diagnostic, Severity

# Receptive-field geometry is the one metric family a caller must ask for to see (``summary(...,
# receptive_field=True)``, ``effective_rf_stats=True``, CLI ``--receptive-field``): it has no total and
# never makes ``strict=True`` fail (analysis.md 7). Its diagnostics stay in the report, exact, but
# views count them as warnings only when the geometry was requested (issue 23 item 1, docs/analysis.md).
OPTIONAL_METRICS = frozenset(SPATIAL_FIELDS)


def diagnostic(
    code: str,
    message: str,
    *,
    metric: str,
    severity: Severity = "warning",
    path: str | None = None,
    operator: str | None = None,
    class_path: str | None = None,
) -> Diagnostic:
    """Build one :class:`Diagnostic`; ``path``/``operator``/``class_path`` keys appear only when given."""
    # Interned: the same message recurs for every metric of every call of one module type, and a
    # deep model's report would otherwise hold thousands of equal strings.
    if type(message) is str:
        message = sys.intern(message)
    entry: Diagnostic = {"code": code, "severity": severity, "metric": metric, "message": message}
    if path is not None:
        entry["path"] = path
    if operator is not None:
        entry["operator"] = operator
    if class_path is not None:
        entry["class_path"] = class_path
    return entry


def concerns_requested_metric(entry: Diagnostic, *, receptive_field: bool = False) -> bool:
    """Whether ``entry`` is about a metric the caller requested (issue 23 item 1).

    An ``info`` diagnostic (an untested torch, an unchecked inherited formula's figure) never is: it
    informs and changes no status. Every other diagnostic is, except those about receptive-field
    geometry (``receptive_field``,
    ``effective_stride``, ``effective_padding``, which includes the layout families' ``Layout
    estimates require unchanged native forwards.``) when ``receptive_field`` is False. The rule only
    decides how a diagnostic is presented; the report always keeps every entry.
    """
    if entry.get("severity") == "info":
        return False
    return receptive_field or entry["metric"] not in OPTIONAL_METRICS


def deduplicate(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Keep one entry per ``(code, metric, path, operator)``, in first-occurrence order.

    Repeated entries are folded into the first one, whose message then states how many times the
    situation occurred, so nothing is hidden by the folding.
    """
    first: dict[tuple[str, str, str | None, str | None], Diagnostic] = {}
    counts: dict[tuple[str, str, str | None, str | None], int] = {}
    for entry in diagnostics:
        key = (entry["code"], entry["metric"], entry.get("path"), entry.get("operator"))
        if key in first:
            counts[key] += 1
        else:
            first[key] = entry
            counts[key] = 1
    result: list[Diagnostic] = []
    for key, entry in first.items():
        if counts[key] > 1:
            entry = {**entry, "message": f"{entry['message']} (occurred {counts[key]} times)"}
        result.append(entry)
    return result


# The sanitizer has its own module; these names stay importable from here.
__all__ = [
    "MAX_ERROR_TEXT",
    "OPTIONAL_METRICS",
    "concerns_requested_metric",
    "deduplicate",
    "diagnostic",
    "error_text",
    "sanitize_text",
]
