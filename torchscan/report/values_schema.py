"""Value metadata: what a call's inputs and outputs were, never their values (analysis.md 5.4).

A recursive tree of small dicts keyed by ``kind``, one ``TypedDict`` per kind: the validator
(``report/validate/values.py``) reads their key sets, the JSON Schemas their declarations. Also the
:class:`WireShape` annotation the schemas read. Never imports torch.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict


class WireShape:
    """``Annotated`` metadata: the value is exactly one of these wire types.

    Producers build some trees (value metadata, token dependencies) as plain ``dict[str, Any]`` and
    keep that Python type; the metadata states their wire shape once, for the JSON Schemas that
    :mod:`torchscan.report.json_schema` generates from these declarations (STYLE 16).
    """

    def __init__(self, name: str, *shapes: type | str) -> None:
        # A shape may be named by a string when its module imports this one (no import cycle).
        self.name, self.shapes = name, shapes


# Metadata is a recursive tree of small dicts keyed by ``kind`` (analysis.md 5.4, truth.md 6).
# Producers build it as plain dicts; the TypedDicts below are its wire shape, one per ``kind``: the
# validator (report/validate/values.py) reads their key sets, the JSON Schemas their declarations.


class TensorValue(TypedDict):
    """A dense tensor: its shape, dtype name, device name and ``requires_grad``; never its values."""

    kind: Literal["tensor"]
    shape: list[int]
    dtype: str
    device: str
    requires_grad: bool


class NestedTensorValue(TypedDict):
    """A nested (ragged) tensor (truth.md 6): no ``shape``, since its components' sizes differ and no
    single shape describes them (none is made up); never its values."""

    kind: Literal["nested_tensor"]
    dtype: str
    device: str
    requires_grad: bool


class SizeValue(TypedDict):
    """A ``torch.Size`` argument: shape metadata, not data."""

    kind: Literal["size"]
    shape: list[int]


class ScalarValue(TypedDict):
    """A bool, int, float, complex or str: its type name only, never the value."""

    kind: Literal["scalar"]
    type: str


class SequenceValue(TypedDict):
    """A tuple or list, item by item."""

    kind: Literal["tuple", "list"]
    items: list[ValueMeta]


class RedactedKey(TypedDict):
    """A string key that is not an identifier (it could be a path or a secret): its length only."""

    type: Literal["str"]
    length: int


class MappingEntry(TypedDict):
    """One entry of a mapping: its key when it is an identifier, an int or a bool (another string key
    only as ``{"type": "str", "length": n}``, other keys not at all), the key's type and the value."""

    key: NotRequired[str | int | bool | RedactedKey]
    key_type: str
    value: ValueMeta


class MappingValue(TypedDict):
    """A mapping: its type name and its entries in iteration order."""

    kind: Literal["mapping"]
    type: str
    items: list[MappingEntry]


class ObjectValue(TypedDict):
    """Anything else: the qualified name of its type, never a ``repr``."""

    kind: Literal["object"]
    type: str


class BareValue(TypedDict):
    """``None`` (``none``), the output of a call that raised (``failed``), or the output of a module
    that never ran as a module call (``not_called``, views-3.md 1)."""

    kind: Literal["none", "failed", "not_called"]


ValueMeta = Annotated[
    dict[str, Any],
    WireShape(
        "ValueMeta",
        TensorValue,
        NestedTensorValue,
        SizeValue,
        ScalarValue,
        SequenceValue,
        MappingValue,
        ObjectValue,
        BareValue,
    ),
]

VALUE_KINDS: dict[str, type] = {
    "tensor": TensorValue,
    "nested_tensor": NestedTensorValue,
    "size": SizeValue,
    "scalar": ScalarValue,
    "tuple": SequenceValue,
    "list": SequenceValue,
    "mapping": MappingValue,
    "object": ObjectValue,
    "none": BareValue,
    "failed": BareValue,
    "not_called": BareValue,
}
"""Every ``kind`` of value metadata and the TypedDict that declares its keys."""
