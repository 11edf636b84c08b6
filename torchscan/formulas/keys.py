"""Hashable canonical forms of configuration values, for the caches keyed by them (truth.md 2).

A module may hold any attribute value: lists (``Conv2d(padding="same")``'s
``_reversed_padding_repeated_twice``, ``Upsample(size=[16, 16])``), tuples of lists, dicts,
strings, tensors, ``None``. A cache keyed by such values must neither crash on an unhashable one
nor let two values that Python calls equal share an entry when a formula could tell them apart:
``1``, ``1.0`` and ``True`` are equal and hash alike, so are ``[1, 2]`` and ``(1, 2)`` once
converted, ``0.0`` and ``-0.0``, and two dicts with the same items in another order.

:func:`canonical` turns a value into a form that keeps every such difference (each value tagged with
its exact type, containers with their order, floats by their ``repr``), copies mutable containers so
a later mutation cannot change a stored key, and answers :data:`UNKEYABLE` for anything it cannot
describe that way (tensors, callables, arbitrary objects, very large or cyclic containers): the
caller then skips its cache for that call. Never imports anything heavier than torch.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable
from typing import Any, Final

import torch


class _Unkeyable:
    """The type of :data:`UNKEYABLE` (a sentinel no canonical form can equal)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKEYABLE"


UNKEYABLE: Final = _Unkeyable()
"""What :func:`canonical` returns for a value it cannot key: skip the cache."""

# Immutable scalars keyed by (type, value): equal values of one exact type are interchangeable.
_BY_VALUE = frozenset({int, bool, str, bytes, type(None), torch.dtype, torch.layout, torch.memory_format})
# Keyed by their repr: equality merges 0.0 and -0.0 (and a NaN never equals itself).
_BY_REPR = frozenset({float, complex})
# Containers whose items are keyed in iteration order (an equal set may iterate otherwise: then a miss).
_ORDERED = frozenset({list, tuple, set, frozenset, torch.Size})
MAX_ITEMS = 256
"""Most scalars one canonical form may hold; a larger value is not keyed (keys stay small)."""
MAX_DEPTH = 8
"""Deepest container nesting keyed (a container that holds itself stops here)."""


def canonical(value: object) -> Hashable:
    """A hashable form of ``value`` equal only for values no formula can tell apart, or :data:`UNKEYABLE`.

    Scalars (``int``, ``bool``, ``str``, ``bytes``, ``None``, ``float``, ``complex``, torch dtypes,
    layouts, memory formats and devices, enum members) are tagged with their exact type; lists,
    tuples (named tuples and ``torch.Size`` included), sets and dicts keep their type and item order
    (a dict's keys too). Anything else, or a container past :data:`MAX_ITEMS` or :data:`MAX_DEPTH`,
    is :data:`UNKEYABLE`.
    """
    budget = [MAX_ITEMS]
    try:
        return _canonical(value, MAX_DEPTH, budget)
    except _NotKeyable:
        return UNKEYABLE


class _NotKeyable(Exception):
    """Raised inside the walk to abandon a value that cannot be keyed (unknown type, too large)."""


def _canonical(value: object, depth: int, budget: list[int]) -> Hashable:
    kind = type(value)
    budget[0] -= 1
    if budget[0] < 0:
        raise _NotKeyable
    if kind in _BY_VALUE:
        return kind, value
    if kind in _BY_REPR:
        return kind, repr(value)
    if kind is torch.device or isinstance(value, enum.Enum):
        return kind, value  # immutable; an enum member equals only itself
    if depth <= 0:
        raise _NotKeyable
    if kind in _ORDERED or (isinstance(value, tuple) and hasattr(kind, "_fields")):
        items: Any = value
        return kind, tuple(_canonical(item, depth - 1, budget) for item in items)
    if kind is dict:
        pairs = value.items()  # type: ignore[attr-defined]
        return kind, tuple(
            (_canonical(k, depth - 1, budget), _canonical(v, depth - 1, budget)) for k, v in pairs
        )
    raise _NotKeyable
