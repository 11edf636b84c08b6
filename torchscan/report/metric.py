"""``MetricResult``, the one shape of every number in a report, and its single constructor.

:func:`metric_result` builds every :class:`MetricResult` and enforces its status invariants, so no
producer spells one by hand. Its names are re-exported by :mod:`torchscan.report.schema`, where
every other wire type is declared and where callers import them from. Never imports torch.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Literal, TypedDict

Status = Literal["complete", "partial", "unavailable"]
Number = int | float

STATUSES: tuple[Status, ...] = ("complete", "partial", "unavailable")
METRIC_RESULT_KEYS = ("status", "value", "known_value", "unit", "scope", "method")
# The largest magnitude a report number may have: every number must survive ``float()`` (views,
# JSON consumers and deltas convert), and an int beyond this one would raise OverflowError there.
MAX_NUMBER = int(sys.float_info.max)
_UNSET: Any = object()  # tells "known_value not given" apart from an explicit None


class MetricResult(TypedDict):
    """One measured number with its status; build it only with :func:`metric_result`.

    ``complete``: ``value == known_value``. ``partial``: ``value`` is ``None`` and ``known_value``
    is a lower bound only (never extrapolated). ``unavailable``: nothing was measured.
    """

    status: Status
    value: Number | None
    known_value: Number | None
    unit: str
    scope: str
    method: str


class _Fields:
    """Holder whose instance ``__dict__`` becomes a MetricResult (retained memory, spec README).

    CPython gives every instance dict of one class a shared key table, so each result stores only
    its six values: about 170 bytes instead of 300 for a dict literal, whose six keys need a
    16-slot table. The result is an ordinary ``dict`` (same keys, order, JSON and equality); a
    user who adds or deletes a key just gets a private table, so nothing is shared that can change.
    """

    status: Status
    value: Number | None
    known_value: Number | None
    unit: str
    scope: str
    method: str


def _result(
    status: Status, value: Number | None, known: Number | None, unit: str, scope: str, method: str
) -> MetricResult:
    fields = _Fields()
    fields.status = status
    fields.value = value
    fields.known_value = known
    fields.unit = unit
    fields.scope = scope
    fields.method = method
    return fields.__dict__  # type: ignore[return-value]


def copy_result(result: MetricResult) -> MetricResult:
    """An independent copy of a MetricResult that :func:`metric_result` built (no re-validation),
    as compact as the original."""
    return _result(
        result["status"],
        result["value"],
        result["known_value"],
        result["unit"],
        result["scope"],
        result["method"],
    )


def in_float_range(number: Number) -> bool:
    """True when ``number`` is finite and ``float(number)`` cannot overflow (no bool check)."""
    if isinstance(number, float):
        return math.isfinite(number)
    return -MAX_NUMBER <= number <= MAX_NUMBER


def _check_number(name: str, number: object, signed: bool = False) -> Number:
    if type(number) is int and (0 <= number <= MAX_NUMBER or (signed and -MAX_NUMBER <= number <= 0)):
        return number  # the common case, checked cheaply
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise TypeError(f"MetricResult {name} must be an int or float, got {type(number).__name__}")
    if not in_float_range(number):
        shown = f"{number!r}" if isinstance(number, float) else "an int beyond the float range"
        raise ValueError(f"MetricResult {name} must be finite, got {shown}")
    if number < 0 and not signed:
        raise ValueError(f"MetricResult {name} must be >= 0, got {number!r}")
    return number


def metric_result(
    status: Status,
    value: Number | None = None,
    *,
    unit: str,
    scope: str,
    method: str,
    signed: bool = False,
    known_value: Number | None = _UNSET,
) -> MetricResult:
    """Build a :class:`MetricResult`, enforcing the status invariants.

    ``value`` is the complete value for ``complete``, the known lower bound for ``partial``, and
    must be ``None`` for ``unavailable``. A partial result's ``value`` key is always ``None``: its
    number lives in ``known_value`` and is never a coverage estimate.

    ``known_value=`` may spell the lower bound explicitly, as the stored result does:
    ``metric_result("partial", known_value=7, ...)`` (``value`` then stays ``None``). A complete
    result accepts it only equal to ``value``; an unavailable one rejects any number.

    Numbers must be finite and ``>= 0``, except with ``signed=True``, reserved for the spatial
    fields (receptive field, effective stride/padding), whose documented conventions are signed:
    a transposed convolution's field is ``-k`` and adaptive pooling's padding can be negative.
    """
    if not (type(unit) is str and unit and type(scope) is str and scope and type(method) is str and method):
        for label, text in (("unit", unit), ("scope", scope), ("method", method)):
            if not isinstance(text, str) or not text:
                raise ValueError(f"MetricResult {label} must be a non-empty string")
    if signed is not False and signed is not True:  # "no" is truthy: it must not mean signed
        raise TypeError(f"metric_result signed must be a bool, got {type(signed).__name__}")
    if known_value is not _UNSET:
        value = _merge_known_value(status, value, known_value)
    if status == "complete":
        number = _check_number("value", value, signed)
        return _result("complete", number, number, unit, scope, method)
    if status == "partial":
        known = _check_number("known_value", value, signed)
        return _result("partial", None, known, unit, scope, method)
    if status == "unavailable":
        if value is not None:
            raise ValueError("an unavailable MetricResult carries no value")
        return _result("unavailable", None, None, unit, scope, method)
    raise ValueError(f"unknown MetricResult status {status!r}")


def _merge_known_value(status: object, value: Number | None, known_value: Number | None) -> Number | None:
    """The single number ``metric_result`` stores, once ``known_value=`` agrees with ``value``."""
    if status == "partial":
        if value is not None:
            raise ValueError("a partial MetricResult has value None; pass its lower bound as known_value")
        return known_value
    if status == "complete":
        if isinstance(known_value, bool) or known_value is None or known_value != value:
            raise ValueError("a complete MetricResult needs known_value == value (or known_value omitted)")
        return value
    if status == "unavailable" and known_value is not None:
        raise ValueError("an unavailable MetricResult carries no known_value")
    return value
