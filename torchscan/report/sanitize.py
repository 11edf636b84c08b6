"""The sanitizer of caller-written text (truth rule 5: no values, paths or object reprs in reports).

Pure string functions, no torch import. Passes run in a fixed order, each on the previous one's
output: control characters, tensor contents, URLs and credentials, angle-bracket reprs, bare
addresses, file paths, whitespace, length.
"""

from __future__ import annotations

import re

MAX_ERROR_TEXT = 240
_TENSOR_START = re.compile(r"\b(?:Parameter containing:\s*)?(?:tensor|array|Parameter)\(")
# ``scheme://anything`` (``http://user:password@host/x``, ``file:///tmp/x``) and scheme-less
# ``user:password@host``: both can carry a secret, so neither survives in any part.
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s<>'\"]*")
_CREDENTIALS = re.compile(r"(?<![\w.+%-])[\w.+%-]+:[^\s@<>'\"/]+@[\w.-]+")
# The innermost ``<name ...>`` group: a repr (``<function f at 0x..>``, ``<module 'm' from '..'>``,
# ``<bound method A.f of A(...)>``). Replaced innermost-first, so nested reprs go as a whole.
_INNER_REPR = re.compile(r"<([A-Za-z_][^<>]*)>")
_WORD = re.compile(r"[\w-]+")
_OBJECT_AT = re.compile(r"(\S+) object at 0x[0-9a-fA-F]+")
_CLASS = re.compile(r"(?:class|enum) '([^']*)'")
_KIND = re.compile(
    r"bound method|built-in method|built-in function|method-wrapper|slot wrapper|[A-Za-z_][\w-]*"
)
# Markers stand for ``<``/``>`` of kept placeholders while the repr passes run: control characters
# are gone by then, so they cannot clash with the caller's text.
_OPEN, _CLOSE = "\x00", "\x01"
_BARE_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
# Absolute POSIX or Windows paths, ``~/...``, and relative paths with a separator.
_PATH = re.compile(
    r"(?:(?<![\w])[A-Za-z]:[\\/]|~[\\/]|\.{1,2}[\\/]|(?<![\w.])[\\/])[^\s'\"<>:;,()\[\]{}]*"
    r"|(?<![\w/\\.-])[\w.-]+(?:[\\/][\w.-]+)+"
)
_LETTER = re.compile(r"[A-Za-z]")
_SPACE = re.compile(r"\s+")


def _printable(char: str) -> str:
    code = ord(char)
    if code < 0x20 or 0x7F <= code < 0xA0 or 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF):
        return " "  # control characters and lone surrogates would make the report invalid text
    return char


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
        pieces.append(f"{_OPEN}tensor{_CLOSE}")
        start = index
    pieces.append(text[start:])
    return "".join(pieces)


def _repr_placeholder(match: re.Match[str]) -> str:
    """``<Linear>`` for ``<torch.nn.Linear object at 0x..>``, ``class Linear`` for ``<class '..'>``,
    ``<function>``/``<bound_method>``/``<module>`` for the other reprs; a lone word stays."""
    inner = match.group(1)
    if _WORD.fullmatch(inner):
        return f"{_OPEN}{inner}{_CLOSE}"  # ``<lambda>``, ``<locals>``, a placeholder: no value
    if (found := _OBJECT_AT.fullmatch(inner)) is not None:
        name = "".join(_WORD.findall(found.group(1).rsplit(".", 1)[-1])) or "object"
        return f"{_OPEN}{name}{_CLOSE}"
    if (found := _CLASS.fullmatch(inner)) is not None:
        # A type's dotted name is what ``class_path`` already reports; the repr's quotes are not.
        return "class " + found.group(1).rsplit(".", 1)[-1]
    kind = _KIND.match(inner)
    return f"{_OPEN}{kind.group(0).replace(' ', '_') if kind else 'object'}{_CLOSE}"


def _strip_reprs(text: str) -> str:
    """Replace angle-bracket reprs, innermost first, until none is left (one pass per nesting level)."""
    while True:
        text, count = _INNER_REPR.subn(_repr_placeholder, text)
        if not count:
            return text


def _path(match: re.Match[str]) -> str:
    # ``1/2`` is a fraction, ``a/b`` and ``2024/notes`` are paths: a path names something.
    text = match.group(0)
    return "<path>" if text[0] in "\\/~.:" or _LETTER.search(text) or ":" in text[:3] else text


def sanitize_text(text: str, limit: int = MAX_ERROR_TEXT) -> str:
    """Caller-written text made fit for a report: deterministic, bounded, free of values and paths.

    Object representations become ``<TypeName>``/``<function>``/``<module>``/``<bound_method>``,
    ``<class 'a.B'>`` becomes ``class B``, tensor contents ``<tensor>``, URLs and
    ``user:password@host`` ``<url>``, file paths ``<path>``, bare addresses ``<address>``; whitespace
    runs collapse to one space, and the result is cut to ``limit`` characters (``...`` when cut).
    """
    text = "".join(_printable(char) for char in text[: limit * 20])
    text = _strip_tensors(text)
    text = _URL.sub(f"{_OPEN}url{_CLOSE}", text)
    text = _CREDENTIALS.sub(f"{_OPEN}url{_CLOSE}", text)
    text = _strip_reprs(text)
    text = _BARE_ADDRESS.sub(f"{_OPEN}address{_CLOSE}", text)
    text = _PATH.sub(_path, text)
    text = _SPACE.sub(" ", text).replace(_OPEN, "<").replace(_CLOSE, ">").strip()
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
