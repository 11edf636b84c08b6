"""Check of a layer's ``token_dependencies`` object (extensions-and-transformers.md 16.1-16.2).

The object is optional on a layer row; when present it is either the complete relation object or
the unavailable object with exactly its four keys. Every failure is a ``ValueError`` naming the
location (``layers[2].token_dependencies.sources[0].relation.kind``). This module never imports torch.
"""

from __future__ import annotations

from typing import Any

from torchscan.report.schema import ASSUMPTIONS_V1, TOKEN_METHOD
from torchscan.report.validate.core import child, fail, is_count, require_list, require_object

RELATION_KINDS = ("all", "same_position", "prefix", "none")
COMPLETE_KEYS = frozenset({"status", "scope", "method", "output", "sources", "assumptions"})
UNAVAILABLE_KEYS = frozenset({"status", "scope", "method", "assumptions"})
SOURCE_KEYS = frozenset({"arguments", "sequence_axis", "length", "relation"})
OUTPUT_KEYS = frozenset({"sequence_axis", "length"})


def _exact_keys(value: dict[str, Any], keys: frozenset[str], where: str) -> None:
    extra, missing = sorted(set(value) - keys), sorted(keys - set(value))
    if missing:
        raise fail(where, f"is missing the key {missing[0]!r}")
    if extra:
        raise fail(where, f"has the unknown key {extra[0]!a:.60}")


def _axis(value: dict[str, Any], where: str) -> int:
    """``sequence_axis`` is 1 (batch first) or 0, ``length`` a token count."""
    axis = value.get("sequence_axis")
    if axis not in (0, 1) or isinstance(axis, bool):
        raise fail(child(where, "sequence_axis"), "must be 0 or 1")
    if not is_count(value.get("length")):
        raise fail(child(where, "length"), "must be a nonnegative integer")
    return int(axis)


def _check_relation(relation: Any, length: int, where: str) -> None:
    """``kind`` one of four; ``limit`` only below the source length; ``first_position`` only when > 0."""
    if not isinstance(relation, dict):
        raise fail(where, "must be an object with a kind")
    kind = relation.get("kind")
    if kind not in RELATION_KINDS:
        raise fail(child(where, "kind"), f"must be one of {', '.join(RELATION_KINDS)}")
    extra = sorted(set(relation) - {"kind", "limit", "first_position"})
    if extra:
        raise fail(where, f"has the unknown key {extra[0]!a:.60}")
    if kind == "none" and len(relation) > 1:
        raise fail(where, "a none relation has no limit or first_position")
    if "limit" in relation:
        limit = relation["limit"]
        if not (is_count(limit) and limit < length):
            raise fail(child(where, "limit"), "must be a nonnegative integer below the source length")
    if "first_position" in relation:
        first = relation["first_position"]
        if not (is_count(first) and first > 0):
            raise fail(child(where, "first_position"), "must be a positive integer (absent when 0)")


def check_token_dependencies(tokens: Any, where: str) -> None:
    """Check one ``token_dependencies`` object; raise ``ValueError`` naming the first problem."""
    if not isinstance(tokens, dict):
        raise fail(where, "must be a token-dependency object")
    status = tokens.get("status")
    if status not in ("complete", "unavailable"):
        raise fail(child(where, "status"), "must be complete or unavailable")
    _exact_keys(tokens, COMPLETE_KEYS if status == "complete" else UNAVAILABLE_KEYS, where)
    if tokens["scope"] != "module_call":
        raise fail(child(where, "scope"), "must be module_call")
    if tokens["method"] != TOKEN_METHOD:
        raise fail(child(where, "method"), f"must be {TOKEN_METHOD}")
    expected = list(ASSUMPTIONS_V1) if status == "complete" else []
    if tokens["assumptions"] != expected:
        raise fail(child(where, "assumptions"), "must be the assumptions of torchscan_token_dependency_v1")
    if status == "unavailable":
        return
    output = require_object(tokens, "output", where)
    _exact_keys(output, OUTPUT_KEYS, child(where, "output"))
    axis = _axis(output, child(where, "output"))
    sources = require_list(tokens, "sources", where)
    if not sources:
        raise fail(child(where, "sources"), "a complete object describes at least one source")
    for index, source in enumerate(sources):
        location = child(child(where, "sources"), index)
        if not isinstance(source, dict):
            raise fail(location, "must be a source object")
        _exact_keys(source, SOURCE_KEYS, location)
        arguments = source["arguments"]
        if not (isinstance(arguments, list) and arguments and all(isinstance(a, str) for a in arguments)):
            raise fail(child(location, "arguments"), "must be a non-empty list of argument names")
        if _axis(source, location) != axis:  # one module: batch first for every source and the output
            raise fail(child(location, "sequence_axis"), "must equal output.sequence_axis")
        _check_relation(source["relation"], source["length"], child(location, "relation"))
