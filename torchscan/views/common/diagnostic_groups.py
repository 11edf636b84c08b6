"""Diagnostics grouped for people: one line per (code, module type or operator) (issue 15 item 2).

A report's ``diagnostics`` list is exact and complete — one entry per (code, metric, path, operator)
— which makes it long: GPT-2 repeats "Module type not supported: Conv1D" for four metrics of 48
calls. This view folds it into groups that say what happened, how often, where (first paths), and
the argument that resolves it. It is a view: it reads a report (after ``json.loads`` too), never
imports torch, and never changes the list it groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from torchscan.report.diagnostics import concerns_requested_metric
from torchscan.views.common.text import neutral

EXAMPLE_PATHS = 3

# Codes a caller resolves by handling the module class (extensions-and-transformers.md 1.2) ...
_MODULE_CODES = frozenset(
    {
        "unsupported_module_metric",
        "unestimated_functional_work",
        "module_metric_error",
        "module_metric_warning",
        "missing_metric_tensor",
    }
)
# ... and codes resolved by a formula for the operator packet (formulas.md B.4).
_OPERATOR_CODES = frozenset(
    {"uncounted_operator", "unsupported_operator_formula", "incomplete_operator_formula"}
)


class DiagnosticGroup(TypedDict):
    """Diagnostics sharing a code and a subject, with where they occurred and what resolves them.

    ``subject`` is the module type name (``Conv1D``) for a module diagnostic, the operator
    (``aten.gather``) for an operator diagnostic, and ``""`` for a model-level one. ``class_path``
    is the full dotted class path when the report records it, else ``None``. ``count`` is the number
    of report diagnostics in the group (not of calls: one call can carry several metrics).
    ``action`` is a hint such as ``custom_modules={...: ModuleHandler(...)}``, or ``None`` when no
    argument resolves the situation.
    """

    code: str
    subject: str
    class_path: str | None
    count: int
    metrics: list[str]
    example_paths: list[str]
    path_count: int
    action: str | None


def _action(code: str, subject: str, class_path: str | None) -> str | None:
    if code in _OPERATOR_CODES and subject:
        return f"custom_mapping={{torch.ops.{subject}: <formula>}}"
    if code in _MODULE_CODES and subject:
        return f"custom_modules={{{class_path or subject}: ModuleHandler(...)}}"
    return None


def group_diagnostics(
    report: Mapping[str, Any], *, requested: bool | None = None, receptive_field: bool = False
) -> list[DiagnosticGroup]:
    """Group ``report["diagnostics"]`` by (code, subject, class path), largest group first.

    Sorted by count (descending), then code, then subject, so equal reports give equal output.
    Module types come from the diagnostic's ``class_path`` or, failing that, from the layer at its
    path (with the class path another diagnostic records for that type name, when unambiguous); a
    path no layer has keeps its subject empty rather than guessing.

    ``requested=None`` groups every diagnostic; ``True`` only those about a requested metric and
    ``False`` only the others (``concerns_requested_metric``: receptive-field geometry unless
    ``receptive_field``), so a view can count warnings and fold the rest into one informational line.
    """
    types: dict[str, str] = {}
    for layer in report.get("layers", ()):
        types.setdefault(layer["path"], layer["type"])
    entries = list(report.get("diagnostics", ()))
    # A diagnostic without a class path borrows the one another diagnostic records for the same
    # type name, when exactly one class of that name appears (two ``Block`` classes stay apart).
    known: dict[str, set[str]] = {}
    for entry in entries:
        if "class_path" in entry:
            known.setdefault(entry["class_path"].rpartition(".")[2], set()).add(entry["class_path"])
    # Filtered after the class paths are known: a requested ``unestimated_functional_work`` still
    # borrows the path an informational receptive-field diagnostic of the same type records.
    if requested is not None:
        entries = [
            entry
            for entry in entries
            if concerns_requested_metric(entry, receptive_field=receptive_field) is requested
        ]
    groups: dict[tuple[str, str, str | None], DiagnosticGroup] = {}
    paths_seen: dict[tuple[str, str, str | None], set[str]] = {}
    for entry in entries:
        code = entry["code"]
        class_path = entry.get("class_path")
        path = entry.get("path")
        if "operator" in entry:
            subject = entry["operator"]
        elif class_path is not None:
            subject = class_path.rpartition(".")[2]
        elif path is not None:
            subject = types.get(path, "")
            candidates = known.get(subject, set())
            class_path = next(iter(candidates)) if len(candidates) == 1 else None
        else:
            subject = ""
        key = (code, subject, class_path)
        group = groups.get(key)
        if group is None:
            group = groups[key] = {
                "code": code,
                "subject": subject,
                "class_path": class_path,
                "count": 0,
                "metrics": [],
                "example_paths": [],
                "path_count": 0,
                "action": _action(code, subject, class_path),
            }
            paths_seen[key] = set()
        group["count"] += 1
        if entry["metric"] not in group["metrics"]:
            group["metrics"].append(entry["metric"])
        if path is not None and path not in paths_seen[key]:
            paths_seen[key].add(path)
            group["path_count"] += 1
            if len(group["example_paths"]) < EXAMPLE_PATHS:
                group["example_paths"].append(path)
    return sorted(
        groups.values(), key=lambda g: (-g["count"], g["code"], g["subject"], g["class_path"] or "")
    )


def format_group(group: DiagnosticGroup) -> str:
    """One line: ``192 × unsupported_module_metric: Conv1D (full.path) at a, b, c (+45 more) -> action``."""
    subject = group["subject"]
    if group["class_path"] and group["class_path"] != subject:
        subject = f"{subject} ({group['class_path']})"
    line = f"{group['count']} × {group['code']}"
    if subject:
        line += f": {subject}"
    line += f" [{', '.join(group['metrics'])}]"
    if group["example_paths"]:
        shown = ", ".join(path or "(root)" for path in group["example_paths"])
        hidden = group["path_count"] - len(group["example_paths"])
        line += f" at {shown}" + (f" (+{hidden} more)" if hidden else "")
    if group["action"]:
        line += f" -> {group['action']}"
    return escape_control(line)


class DiagnosticSummary(TypedDict):
    """A report's diagnostics split by the requested-metric rule (issue 23 item 1), grouped.

    ``count``/``groups``: diagnostics about requested metrics — the warnings a view counts.
    ``informational_count``/``informational``: the others (receptive-field geometry that was not
    requested), which a view shows, if at all, as one collapsed line. ``count +
    informational_count`` is always ``len(report["diagnostics"])``: nothing is dropped.
    """

    count: int
    groups: list[DiagnosticGroup]
    informational_count: int
    informational: list[DiagnosticGroup]


def summarize_diagnostics(report: Mapping[str, Any], *, receptive_field: bool = False) -> DiagnosticSummary:
    """Split and group ``report["diagnostics"]``; ``receptive_field`` says the geometry was requested."""
    groups = group_diagnostics(report, requested=True, receptive_field=receptive_field)
    informational = group_diagnostics(report, requested=False, receptive_field=receptive_field)
    return {
        "count": sum(group["count"] for group in groups),
        "groups": groups,
        "informational_count": sum(group["count"] for group in informational),
        "informational": informational,
    }


def metric_label(group: DiagnosticGroup) -> str:
    """The metrics a group concerns, as written in reports (``module_flops, macs``)."""
    return ", ".join(group["metrics"])


def informational_line(summary: DiagnosticSummary, hint: str | None = None, subjects: int = 3) -> str | None:
    """One line for the diagnostics about unrequested metrics, or ``None`` when there are none.

    ``Not requested: 60 receptive-field diagnostic(s) (Conv1D 48, NewGELUActivation 12) - not
    warnings; every total is unaffected; <hint>.`` ``hint`` says how to request the metric in the
    caller's own spelling (``summary(..., receptive_field=True)`` or ``--receptive-field``).
    """
    count = summary["informational_count"]
    if not count:
        return None
    counts: dict[str, int] = {}
    for group in summary["informational"]:
        name = group["subject"] or "model"
        counts[name] = counts.get(name, 0) + group["count"]
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    shown = ", ".join(f"{name} {n:,}" for name, n in ranked[:subjects])
    if len(ranked) > subjects:
        shown += f", +{len(ranked) - subjects} more type(s)"
    line = (
        f"Not requested: {count:,} receptive-field diagnostic(s) ({shown}); informational, "
        "not warnings: no total depends on them"
    )
    if hint:
        line += f"; {hint}"
    return escape_control(line + ".")


def format_groups(groups: Sequence[DiagnosticGroup], limit: int = 5) -> list[str]:
    """The first ``limit`` groups as lines, then ``N more diagnostic groups (...)`` when cut."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit must be a non-negative int, got {limit!r}")
    lines = [format_group(group) for group in groups[:limit]]
    rest = groups[limit:]
    if rest:
        count = sum(group["count"] for group in rest)
        lines.append(
            f"{len(rest)} more diagnostic group(s) ({count} diagnostic(s)); "
            "every diagnostic is listed in the report's 'diagnostics' list"
        )
    return lines


def escape_control(text: str) -> str:
    """Show control characters (C0, DEL, C1) as ``\\xNN`` and bidi controls as ``<U+XXXX>``.

    Names come from the model: printed raw, an ESC or BEL would drive the terminal and a bidi
    override would reorder the line around it.
    """
    text = neutral(text)
    if text.isprintable():
        return text
    return "".join(
        f"\\x{ord(char):02x}" if ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0 else char for char in text
    )
