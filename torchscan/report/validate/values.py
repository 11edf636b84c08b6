"""Checks of value metadata (analysis.md 5.4): the input and output descriptions of a report.

Each node is one of the ``kind`` variants of :data:`torchscan.report.schema.VALUE_KINDS`, with
exactly the keys its TypedDict declares: a ``nested_tensor`` carries dtype, device and
``requires_grad`` and never a shape (truth.md 6). Never imports torch.
"""

from __future__ import annotations

from typing import Any, ForwardRef, NotRequired, get_origin

from torchscan.report.validate.core import child, fail, is_count
from torchscan.report.values_schema import VALUE_KINDS, MappingEntry


def declared_keys(typed_dict: type) -> tuple[frozenset[str], frozenset[str]]:
    """``(required, every)`` key names of a TypedDict of ``report/schema.py``.

    Read from the annotations' text: the schema module postpones annotations, and Python 3.11's
    ``__optional_keys__`` does not see ``NotRequired[...]`` written as a string.
    """
    annotations = typed_dict.__annotations__
    every = frozenset(annotations)
    optional = {name for name, kind in annotations.items() if _not_required(kind)}
    return every - optional, every


def _not_required(annotation: Any) -> bool:
    if isinstance(annotation, ForwardRef):
        annotation = annotation.__forward_arg__
    if isinstance(annotation, str):
        return annotation.startswith("NotRequired[")
    return get_origin(annotation) is NotRequired


_KEYS = {kind: declared_keys(declared) for kind, declared in VALUE_KINDS.items()}
_ENTRY_REQUIRED, _ENTRY_KEYS = declared_keys(MappingEntry)
_TEXT_KEYS = ("dtype", "device", "type", "key_type")


def _exact_keys(node: dict[str, Any], required: frozenset[str], allowed: frozenset[str], where: str) -> None:
    missing = sorted(required - node.keys())
    extra = sorted(node.keys() - allowed)
    if missing or extra:
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unexpected {', '.join(extra)}"] if extra else []
        )
        raise fail(where, "; ".join(parts))


def _check_key(key: Any, where: str) -> None:
    if isinstance(key, str | int):  # a bool is an int
        return
    if (
        isinstance(key, dict)
        and sorted(key) == ["length", "type"]
        and key["type"] == "str"
        and is_count(key["length"])
    ):
        return
    raise fail(where, 'must be a string, an int, a bool or {"type": "str", "length": n}')


def check_value_meta(node: Any, where: str) -> None:
    """Check one value-metadata tree; raise ``ValueError`` naming the first wrong spot."""
    if not isinstance(node, dict):
        raise fail(where, "value metadata must be an object")
    kind = node.get("kind")
    keys = _KEYS.get(kind) if isinstance(kind, str) else None
    if keys is None:
        raise fail(child(where, "kind"), f"must be one of {', '.join(VALUE_KINDS)}")
    _exact_keys(node, *keys, where)
    for key in _TEXT_KEYS:
        if key in node and not isinstance(node[key], str):
            raise fail(child(where, key), "must be a string")
    if "requires_grad" in node and not isinstance(node["requires_grad"], bool):
        raise fail(child(where, "requires_grad"), "must be a boolean")
    if "shape" in node:
        shape = node["shape"]
        if not (isinstance(shape, list) and all(is_count(size) for size in shape)):
            raise fail(child(where, "shape"), "must be a list of nonnegative integers")
    items = node.get("items")
    if "items" in node and not isinstance(items, list):
        raise fail(child(where, "items"), "must be a list")
    if kind in ("tuple", "list"):
        for index, item in enumerate(items or ()):
            check_value_meta(item, child(child(where, "items"), index))
    elif kind == "mapping":
        for index, entry in enumerate(items or ()):
            location = child(child(where, "items"), index)
            if not isinstance(entry, dict):
                raise fail(location, "a mapping entry must be an object")
            _exact_keys(entry, _ENTRY_REQUIRED, _ENTRY_KEYS, location)
            if not isinstance(entry["key_type"], str):
                raise fail(child(location, "key_type"), "must be a string")
            if "key" in entry:
                _check_key(entry["key"], child(location, "key"))
            check_value_meta(entry["value"], child(location, "value"))


def check_call_io(io: dict[str, Any], where: str) -> None:
    """``args`` (a list) and ``kwargs`` (an object) of value metadata, as a layer's ``input`` holds."""
    args, kwargs = io.get("args"), io.get("kwargs")
    if not isinstance(args, list):
        raise fail(child(where, "args"), "must be a list")
    if not isinstance(kwargs, dict):
        raise fail(child(where, "kwargs"), "must be an object")
    for index, item in enumerate(args):
        check_value_meta(item, child(child(where, "args"), index))
    for name, item in kwargs.items():
        check_value_meta(item, child(child(where, "kwargs"), name))
