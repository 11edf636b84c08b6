"""Which declared fields a report actually uses: a walk of a report beside its JSON Schema.

``fields_used(report, schema)`` returns the ``(type name, field)`` pairs of every object property
the report carries, following ``$ref`` into ``$defs`` and, for ``anyOf``, the branch that the value
matches. ``declared_fields(schema)`` lists every pair the schema declares. Together they tell
whether a schema names a field that no report produces.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator


def declared_fields(schema: dict[str, Any]) -> set[tuple[str, str]]:
    """Every ``(type name, property)`` the schema's named object types declare."""
    return {
        (name, field)
        for name, definition in schema["$defs"].items()
        for field in definition.get("properties", {})
    }


def fields_used(report: Any, schema: dict[str, Any]) -> set[tuple[str, str]]:
    """The ``(type name, property)`` pairs that ``report`` carries (it must be valid)."""
    defs = schema["$defs"]
    used: set[tuple[str, str]] = set()

    def matches(node: dict[str, Any], value: Any) -> bool:
        return Draft202012Validator({"$defs": defs, **node}).is_valid(value)

    def walk(value: Any, node: dict[str, Any], name: str | None) -> None:
        if "$ref" in node:
            target = node["$ref"].removeprefix("#/$defs/")
            walk(value, defs[target], target)
            return
        if "anyOf" in node:
            branch = next(option for option in node["anyOf"] if matches(option, value))
            walk(value, branch, name)
            return
        if isinstance(value, dict):
            properties = node.get("properties", {})
            for key, item in value.items():
                if key in properties:
                    used.add((name or "?", key))
                    walk(item, properties[key], None)
                elif isinstance(node.get("additionalProperties"), dict):
                    walk(item, node["additionalProperties"], None)
        elif isinstance(value, list) and isinstance(node.get("items"), dict):
            for item in value:
                walk(item, node["items"], None)

    walk(report, schema, None)
    return used
