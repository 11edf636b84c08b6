"""Canonical cache keys (truth.md 2): hashable, equal only where no formula could tell values apart."""

from __future__ import annotations

import enum
from collections import namedtuple

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from torchscan.formulas.keys import MAX_DEPTH, MAX_ITEMS, UNKEYABLE, canonical

# Pairs Python calls equal (or that print alike) but that a formula could treat differently.
_DISTINCT = [
    ([1, 2], (1, 2)),
    ([1, 2], "[1, 2]"),
    ((1, 2), "(1, 2)"),
    (1, 1.0),
    (1, True),
    (1.0, True),
    (0, False),
    (0.0, -0.0),
    ([0.0], [-0.0]),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),  # equal dicts, another iteration order
    ({1: "x"}, {1.0: "x"}),
    ([[1, 2]], [(1, 2)]),
    (((1, 2), [3]), ((1, 2), (3,))),
    (torch.Size([2, 3]), (2, 3)),
    (None, "None"),
    (None, ()),
    ((), []),
    (b"ab", "ab"),
    (torch.float32, torch.float64),
    (torch.device("cpu"), "cpu"),
]


@pytest.mark.parametrize(("left", "right"), _DISTINCT)
def test_values_a_formula_could_tell_apart_get_different_keys(left: object, right: object) -> None:
    left_key, right_key = canonical(left), canonical(right)
    assert left_key is not UNKEYABLE and right_key is not UNKEYABLE
    hash(left_key), hash(right_key)
    assert left_key != right_key


class _Mode(enum.Enum):
    A = 1
    B = 2


_Pair = namedtuple("_Pair", "x y")


@pytest.mark.parametrize(
    "make",
    [
        lambda: [1, 2],
        lambda: ([1, 2], [3, [4.5, None]]),
        lambda: {"size": [16, 16], "mode": "nearest"},
        lambda: "same",
        lambda: None,
        lambda: float("nan"),  # a NaN equals nothing, but its canonical form equals itself
        lambda: _Mode.A,
        lambda: _Pair(1, [2]),
        lambda: {1, 2, 3},
        lambda: torch.Size([1, 3]),
        lambda: (torch.float16, torch.device("meta"), torch.strided, torch.channels_last),
    ],
)
def test_equal_values_built_twice_share_a_key(make: object) -> None:
    first, second = canonical(make()), canonical(make())  # type: ignore[operator]
    assert first is not UNKEYABLE
    assert first == second and hash(first) == hash(second)


def test_a_mutated_list_gets_another_key_and_the_old_key_stays_put() -> None:
    value = [1, 2]
    before = canonical(value)
    value[0] = 3
    after = canonical(value)
    assert before != after
    assert before == canonical([1, 2])  # a copy: the stored key never follows the list


class _Opaque:
    pass


def _cycle() -> list[object]:
    value: list[object] = [1]
    value.append(value)
    return value


@pytest.mark.parametrize(
    "value",
    [
        torch.ones(2),
        [torch.ones(2)],
        {"weight": torch.ones(1)},
        len,
        lambda: 0,
        _Opaque(),
        [_Opaque()],
        _cycle(),
        list(range(MAX_ITEMS + 1)),
        [[[[[[[[[[1]]]]]]]]]],  # deeper than MAX_DEPTH
        bytearray(b"x"),  # mutable
    ],
)
def test_what_cannot_be_keyed_is_refused(value: object) -> None:
    assert canonical(value) is UNKEYABLE


def test_limits_are_inclusive() -> None:
    nested: object = 1
    for _ in range(MAX_DEPTH):
        nested = [nested]
    assert canonical(nested) is not UNKEYABLE
    assert canonical(list(range(MAX_ITEMS - 1))) is not UNKEYABLE  # the list itself counts once


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=2), inner, max_size=3),
    ),
    max_leaves=12,
)


def _same(left: object, right: object) -> bool:
    """Exactly the same value: same types, same order, floats by repr (what a formula could see)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, list | tuple):
        return len(left) == len(right) and all(map(_same, left, right))  # type: ignore[arg-type]
    if isinstance(left, dict):
        return list(left) == list(right) and all(  # type: ignore[call-overload]
            _same(a, b)
            for a, b in zip(left.values(), right.values(), strict=True)  # type: ignore[attr-defined]
        )
    if isinstance(left, float):
        return repr(left) == repr(right)
    return left == right


@settings(max_examples=300, deadline=None)
@given(left=_VALUES, right=_VALUES)
def test_keys_are_equal_exactly_when_values_are_the_same(left: object, right: object) -> None:
    left_key, right_key = canonical(left), canonical(right)
    assert left_key is not UNKEYABLE and right_key is not UNKEYABLE
    assert (left_key == right_key) == _same(left, right)
    assert canonical(left) == left_key  # deterministic
