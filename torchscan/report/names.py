"""Model-supplied names made valid report text (issue #20, item 5). Pure, no torch import.

Module names, class names and profiler labels come from the model. A report must be valid XML 1.0
text to render (report/validate/core.py ``check_text``) and must never drive a terminal, so every
producer passes names through :func:`report_name`: control characters (C0 including tab and
newline, DEL, C1), lone surrogates and U+FFFE/U+FFFF become the visible escapes ``\\xNN`` or
``\\uNNNN`` — the same spelling the table views use. A clean name is returned unchanged, so the
escape is invisible for every ordinary model; the model still runs and its report still renders.
"""

from __future__ import annotations


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x20 or 0x7F <= code < 0xA0:
        return f"\\x{code:02x}"
    if 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF):
        return f"\\u{code:04x}"
    return char


def report_name(name: str) -> str:
    """``name`` with control characters, lone surrogates and U+FFFE/F spelled as visible escapes."""
    if name.isascii() and name.isprintable():  # the fast path: every ordinary module or class name
        return name
    return "".join(_escape(char) for char in name)


def has_control(text: str) -> bool:
    """True when :func:`report_name` would change ``text`` (a caller's label must be clean)."""
    return report_name(text) != text
