"""The building blocks of every report validator (render.md 1.3, analysis.md 5.2-5.3).

``fail`` and ``child`` spell a failure's location the one way every validator does
(``layers[3].metrics.macs.status``); the ``require_*`` helpers read one typed key; the ``check_*``
functions check a JSON tree, a MetricResult or a Diagnostic. Every failure is a ``ValueError``
naming the location. This module never imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.report.schema import STATUSES, in_float_range

MAX_DEPTH = 200


def fail(where: str, message: str) -> ValueError:
    """The ``ValueError`` of a failed check: ``"<location>: <message>"`` (``report`` at the root)."""
    return ValueError(f"{where or 'report'}: {message}")


def child(where: str, key: object) -> str:
    """The location of ``key`` below ``where``: ``a[3]``, ``a.b``, or ``a['aten.mm']`` for other text."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    text = str(key)
    if text.isidentifier():
        return f"{where}.{text}" if where else text
    return f"{where}[{text!a}]"


def is_number(value: object) -> bool:
    """True for a finite int or float that ``float()`` can represent; a bool is not a number here."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return in_float_range(value)


def is_count(value: object) -> bool:
    """True for a non-negative ``int`` that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_text(text: str, where: str) -> None:
    """Reject strings that are not valid XML 1.0 text (control characters, surrogates, U+FFFE/F)."""
    for char in text:
        code = ord(char)
        if (code < 0x20 and char not in "\t\n\r") or 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF):
            raise fail(where, f"invalid text: code point U+{code:04X} is not allowed")


def check_json_tree(value: Any, where: str = "report") -> None:
    """Check that ``value`` is a finite, acyclic JSON tree of valid text (render.md 1.3)."""
    active: set[int] = set()
    stack: list[tuple[Any, str, int, bool]] = [(value, where, 0, False)]
    while stack:
        item, location, depth, leaving = stack.pop()
        if leaving:
            active.discard(id(item))
            continue
        if depth > MAX_DEPTH:
            raise fail(location, "nesting is too deep; a report must be an acyclic tree of bounded depth")
        if isinstance(item, str):
            check_text(item, location)
        elif item is None or isinstance(item, bool) or is_number(item):
            continue
        elif isinstance(item, dict | list):
            if id(item) in active:
                raise fail(location, "refers back to itself; a report must be acyclic")
            active.add(id(item))
            stack.append((item, location, depth, True))
            if isinstance(item, dict):
                entries = list(item.items())
                for key, _ in entries:
                    if not isinstance(key, str):
                        raise fail(location, f"object key {key!r:.40} must be a string")
                    check_text(key, child(location, "<key>"))
                for key, member in reversed(entries):
                    stack.append((member, child(location, key), depth + 1, False))
            else:
                for index in range(len(item) - 1, -1, -1):
                    stack.append((item[index], child(location, index), depth + 1, False))
        else:
            what = "a number beyond the float range" if isinstance(item, int | float) else type(item).__name__
            raise fail(
                location,
                f"expected a JSON value (string, finite number, bool, null, list or object), got {what}",
            )


def report_root(report: Any, where: str, what: str, report_type: str | None = None) -> str:
    """Check the envelope every saved report shares and return the root location of its keys.

    ``report`` must be an object (``what`` names it in the error: ``"an analysis report"``), a JSON
    tree throughout, of ``schema_version`` 1 and, when ``report_type`` is given, of that type.
    """
    if not isinstance(report, dict):
        raise fail(where, f"{what} must be an object, got {type(report).__name__}")
    root = "" if where == "report" else where
    check_json_tree(report, root)
    version = report.get("schema_version")
    if type(version) is not int or version != 1:
        raise fail(child(root, "schema_version"), f"unsupported schema_version {version!r:.40}; expected 1")
    if report_type is not None and report.get("report_type") != report_type:
        raise fail(child(root, "report_type"), f"must be {report_type!r}")
    return root


def require_object(parent: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    """``parent[key]``, which must be an object (a ``dict``); a non-object parent fails the same way."""
    value = parent.get(key) if isinstance(parent, Mapping) else None
    if not isinstance(value, dict):
        raise fail(child(where, key), "must be an object")
    return value


def require_list(parent: Mapping[str, Any], key: str, where: str) -> list[Any]:
    """``parent[key]``, which must be a list."""
    value = parent.get(key)
    if not isinstance(value, list):
        raise fail(child(where, key), f"{key} must be a list")
    return value


def require_string(parent: Mapping[str, Any], key: str, where: str) -> str:
    """``parent[key]``, which must be a string."""
    value = parent.get(key)
    if not isinstance(value, str):
        raise fail(child(where, key), "must be a string")
    return value


def check_metric_result(result: Any, where: str, *, additive: bool = False) -> None:
    """Check one MetricResult's labels and status invariants (analysis.md 5.2).

    With ``additive`` a negative known value is rejected: per-call costs are summed in views.
    """
    if not isinstance(result, dict):
        raise fail(where, "must be a MetricResult object")
    for key in ("unit", "scope", "method"):
        require_string(result, key, where)
    status = result.get("status")
    if status not in STATUSES:
        raise fail(child(where, "status"), f"invalid status {status!r:.40}")
    for key in ("value", "known_value"):
        if key not in result:
            raise fail(child(where, key), "is missing (MetricResult invariant)")
    value, known = result["value"], result["known_value"]
    if status == "complete":
        for key, number in (("value", value), ("known_value", known)):
            if not is_number(number):
                raise fail(child(where, key), "a complete result needs a finite number")
        if value != known:
            raise fail(where, "complete result breaks the invariant value == known_value")
    elif status == "partial":
        if value is not None:
            raise fail(child(where, "value"), "partial result breaks the invariant value is None")
        if not is_number(known):
            raise fail(child(where, "known_value"), "a partial result needs a finite number")
    elif value is not None or known is not None:
        raise fail(where, "unavailable result breaks the invariant value and known_value are None")
    if additive and known is not None and known < 0:
        raise fail(child(where, "known_value"), "negative additive cost")


def check_diagnostic(entry: Any, where: str) -> None:
    """Check one Diagnostic (analysis.md 5.3)."""
    if not isinstance(entry, dict):
        raise fail(where, "must be a Diagnostic object")
    for key in ("code", "metric", "message"):
        require_string(entry, key, where)
    if entry.get("severity") not in ("info", "warning", "error"):
        raise fail(child(where, "severity"), "invalid severity")
    for key in ("path", "operator", "class_path"):
        if key in entry and not isinstance(entry[key], str):
            raise fail(child(where, key), "must be a string")
    if "rank" in entry and not is_count(entry["rank"]):
        raise fail(child(where, "rank"), "must be a nonnegative integer")


def check_diagnostics(entries: list[Any], where: str) -> None:
    """Check every Diagnostic of a list."""
    for index, entry in enumerate(entries):
        check_diagnostic(entry, child(where, index))
