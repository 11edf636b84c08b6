"""Value metadata (analysis.md 5.4, truth.md 6): what ``describe`` writes is what the TypedDicts declare.

The validator reads each kind's key set from its TypedDict in ``report/schema.py``; ``describe``
builds the entries. Both must agree for every kind, a nested tensor included (no shape).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict

import pytest
import torch

from torchscan.analysis.crawl.inputs import FAILED, describe
from torchscan.report.validate.values import check_call_io, check_value_meta, declared_keys
from torchscan.report.values_schema import VALUE_KINDS


def _nested() -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(1, 3)])


class _Thing:
    pass


VALUES = {
    "tensor": torch.ones(2, 3),
    "nested_tensor": _nested(),
    "size": torch.Size([1, 4]),
    "scalar": 2.5,
    "tuple": (torch.ones(1), None),
    "list": [1, "secret-text"],
    "mapping": OrderedDict([("x", torch.ones(1)), ("/private/path", 3), (7, None), ((1, 2), "k")]),
    "object": _Thing(),
    "none": None,
}


@pytest.mark.parametrize("kind", sorted(VALUES))
def test_describe_writes_exactly_the_declared_keys(kind: str) -> None:
    meta = describe(VALUES[kind])
    assert meta["kind"] == kind
    required, every = declared_keys(VALUE_KINDS[kind])
    assert required <= set(meta) <= every
    check_value_meta(meta, "value")


def test_every_kind_is_covered_and_failed_too() -> None:
    # ``failed`` (a call that raised) and ``not_called`` (a module that never ran, views-3.md 1) are
    # written by the crawl itself, never by describing a value
    assert set(VALUES) | {"failed", "not_called"} == set(VALUE_KINDS)
    check_value_meta(FAILED, "value")
    check_value_meta({"kind": "not_called"}, "value")


def test_a_nested_tensor_has_no_shape_and_no_values() -> None:
    meta = describe(_nested())
    assert meta == {
        "kind": "nested_tensor",
        "dtype": "torch.float32",
        "device": "cpu",
        "requires_grad": False,
    }


@pytest.mark.parametrize(
    ("meta", "where"),
    [
        ({"kind": "mapping", "type": "dict", "items": [{"key_type": "str"}]}, "items[0]: missing value"),
        ({"kind": "mapping", "type": "dict", "items": [{"value": {"kind": "none"}}]}, "missing key_type"),
        (
            {
                "kind": "mapping",
                "type": "dict",
                "items": [{"key": [1], "key_type": "list", "value": {"kind": "none"}}],
            },
            "key",
        ),
        ({"kind": "size", "shape": [1.5]}, "shape"),
        (
            {"kind": "tensor", "shape": [1], "dtype": "f", "device": "cpu", "requires_grad": "no"},
            "requires_grad",
        ),
        ({"kind": "list", "items": "abc"}, "items"),
        ([], "value metadata must be an object"),
    ],
)
def test_malformed_entries_are_refused_where_they_are(meta: object, where: str) -> None:
    with pytest.raises(ValueError, match=None) as caught:
        check_value_meta(meta, "value")
    assert where in str(caught.value)


def test_call_io_needs_args_and_kwargs() -> None:
    check_call_io({"args": [describe(torch.ones(1))], "kwargs": {"mask": describe(None)}}, "input")
    with pytest.raises(ValueError, match=r"input\.kwargs: must be an object"):
        check_call_io({"args": []}, "input")


def test_optional_keys_are_read_from_the_schema() -> None:
    from torchscan.report.values_schema import MappingEntry

    assert declared_keys(MappingEntry) == (
        frozenset({"key_type", "value"}),
        frozenset({"key", "key_type", "value"}),
    )
