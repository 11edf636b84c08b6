"""Argument checks shared by the workload APIs (issue #11: bad arguments are refused before any call).

A wrong *type* is a ``TypeError`` and a bad *value* a ``ValueError``, each naming the argument. The
workload chapter of the specification promised ``ValueError`` for some wrong types (``limit=1.5``,
``work_units=True``, ``command="ls"``) and ``RuntimeError`` for an unavailable device; the exception
classes below inherit from both sides, so code written against either contract keeps working.
"""

from __future__ import annotations

import os
from collections.abc import Sequence


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type: a ``TypeError`` that also satisfies ``except ValueError``."""


class DeviceUnavailableError(ValueError, RuntimeError):
    """A well-formed device this process cannot use (no CUDA, index out of range, no MPS).

    A ``ValueError`` (the argument's value is wrong here) that also satisfies ``except RuntimeError``.
    """


def check_bool(name: str, value: object) -> bool:
    """Return ``value`` if it is exactly a ``bool``; ``1``, ``"yes"`` or ``None`` raise ``TypeError``.

    Only the two booleans are accepted so that a mistyped flag never silently means "on".
    """
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be a bool (True or False), got {type(value).__name__}")
    return value


def check_count(name: str, value: object, minimum: int) -> int:
    """Return ``value`` if it is an ``int`` (never a ``bool``) ``>= minimum``.

    ``TypeError`` for another type (``True`` is not the count 1), ``ValueError`` for a smaller int.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"{name} must be an int >= {minimum}, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    return value


def check_output_path(name: str, path: object) -> str:
    """Validate a path a file will be written to, without creating anything; return it as a ``str``.

    ``TypeError`` unless ``path`` is a ``str`` or ``os.PathLike`` of ``str``; ``ValueError`` when it is
    empty, names a directory, or its parent folder is missing, not a directory or not writable. The
    path itself existing is left to the caller (``FileExistsError`` under its lock). The message names
    ``name`` only: paths are the caller's and are quoted in errors, never in reports.
    """
    if not isinstance(path, str | os.PathLike):
        raise ArgumentTypeError(f"{name} must be a str or os.PathLike, got {type(path).__name__}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise ArgumentTypeError(f"{name} must be a str path, got a {type(text).__name__} path")
    if not text:
        raise ValueError(f"{name} must not be empty")
    if "\0" in text:  # os.path answers False for such a path instead of refusing it
        raise ValueError(f"{name} must not contain a NUL character")
    if os.path.isdir(text):
        raise ValueError(f"{name} names a directory, not a file: {text}")
    parent = os.path.dirname(os.path.abspath(text))
    if not os.path.exists(parent):
        raise ValueError(f"{name} folder does not exist: {parent}")
    if not os.path.isdir(parent):
        raise ValueError(f"{name} folder is not a directory: {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{name} folder is not writable: {parent}")
    return text


def check_names(name: str, values: object, allowed: Sequence[str]) -> list[str]:
    """Return ``values`` as a list if it is a sequence (not a string) of names from ``allowed``.

    ``TypeError`` for another type or a non-``str`` item, ``ValueError`` naming the unknown names and
    the allowed ones. Each unknown name is cut to 60 characters and ``repr``'d: the message never
    carries raw control characters or an unbounded caller string.
    """
    choices = ", ".join(allowed)
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise ArgumentTypeError(
            f"{name} must be a sequence of metric names (allowed: {choices}), got {type(values).__name__}"
        )
    if not all(isinstance(item, str) for item in values):
        raise ArgumentTypeError(f"{name} must contain only str names (allowed: {choices})")
    unknown = [item for item in values if item not in allowed]
    if unknown:
        shown = ", ".join(repr(item[:60]) for item in unknown)
        raise ValueError(f"{name} has unknown names {shown}; allowed: {choices}")
    return list(values)
