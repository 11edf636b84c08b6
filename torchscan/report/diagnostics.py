"""Diagnostic constructor, deduplication (analysis.md 5.3) and the sanitizer of caller error text."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable

from torchscan.report.schema import Diagnostic, Severity


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


# --- caller exception text ------------------------------------------------------------------

MAX_ERROR_TEXT = 240
# ``<torch.nn.Linear object at 0x7f...>``, ``<function f at 0x...>``: the address differs per run.
_ADDRESS_REPR = re.compile(
    r"<\s*(?:(bound method|function|built-in method|class)\s+)?([^\s<>]*)[^<>]*?\bat 0x[0-9a-fA-F]+>"
)
_BARE_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
# Absolute POSIX or Windows paths, ``~/...``, ``file://...``, and relative paths with a separator.
_PATH = re.compile(
    r"(?:file://|[A-Za-z]:[\\/]|~[\\/]|\.{1,2}[\\/]|(?<![\w.])[\\/])[^\s'\"<>:;,()\[\]{}]*"
    r"|(?<![\w/\\])[\w.-]*[A-Za-z][\w.-]*(?:[\\/][\w.-]+)+"
)
_TENSOR_START = re.compile(r"\b(?:Parameter containing:\s*)?(?:tensor|array|Parameter)\(")
_SPACE = re.compile(r"\s+")


def _strip_tensors(text: str) -> str:
    """Replace every ``tensor(...)`` (balanced parentheses, any nesting) by ``<tensor>``."""
    pieces: list[str] = []
    start = 0
    while (match := _TENSOR_START.search(text, start)) is not None:
        pieces.append(text[start : match.start()])
        depth, index = 1, match.end()
        while index < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[index], 0)
            index += 1
        pieces.append("<tensor>")
        start = index
    pieces.append(text[start:])
    return "".join(pieces)


def _type_name(match: re.Match[str]) -> str:
    """``<function>`` for a callable's repr, ``<Linear>`` for ``<torch.nn.Linear object at 0x...>``."""
    kind = match.group(1)
    return f"<{kind.replace(' ', '_') if kind else match.group(2).rsplit('.', 1)[-1] or 'object'}>"


def _printable(char: str) -> str:
    code = ord(char)
    if code < 0x20 or 0x7F <= code < 0xA0 or 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF):
        return " "  # control characters and lone surrogates would make the report invalid text
    return char


def sanitize_text(text: str, limit: int = MAX_ERROR_TEXT) -> str:
    """Caller-written text made fit for a report: deterministic, bounded, free of values and paths.

    Object representations carrying an address become ``<TypeName>``, tensor contents ``<tensor>``,
    file paths ``<path>``, bare addresses ``<address>``; whitespace runs collapse to one space, and
    the result is cut to ``limit`` characters (ending with ``...`` when cut).
    """
    text = "".join(_printable(char) for char in text[: limit * 20])
    text = _strip_tensors(text)
    text = _ADDRESS_REPR.sub(_type_name, text)
    text = _BARE_ADDRESS.sub("<address>", text)
    text = _PATH.sub("<path>", text)
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def error_text(error: BaseException) -> str:
    """``"<ExceptionType>: <sanitized message>"`` for an exception raised by caller code.

    The single place where a caller's exception text enters a report (see :func:`sanitize_text`);
    a ``__str__`` that itself fails yields the type name alone.
    """
    name = sanitize_text(type(error).__name__, 80)
    try:
        message = sanitize_text(str(error))
    except Exception:  # a broken __str__ is the caller's bug; the type still says what happened
        message = ""
    return f"{name}: {message}" if message else name
