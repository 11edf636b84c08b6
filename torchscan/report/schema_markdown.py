"""The generated parts of docs/report-schema.md: report kinds, wire types, labels, diagnostic codes.

Each function returns Markdown built from the code's own tables (:mod:`.json_schema`,
:mod:`.vocabulary`, :mod:`.codes`), so the page cannot drift from the reports: a test compares the
page's generated blocks with :func:`generated_blocks` and, with ``TORCHSCAN_UPDATE_DOCS=1``, rewrites
them. Never imports torch, never writes files.
"""

from __future__ import annotations

import re
from typing import Any

from torchscan.report.codes import CODES
from torchscan.report.json_schema import REPORT_KINDS, report_schema
from torchscan.report.metric import STATUSES
from torchscan.report.schema import SCHEMA_VERSION
from torchscan.report.vocabulary import METHOD_FAMILIES, METHODS, SCOPES, UNITS

BLOCK = re.compile(r"(<!-- BEGIN GENERATED: (\w+) -->\n)(.*?)(<!-- END GENERATED: \2 -->)", re.DOTALL)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _type(node: dict[str, Any]) -> str:
    """A schema node in words, with links to the named types."""
    if "$ref" in node:
        name = node["$ref"].removeprefix("#/$defs/")
        return f"[`{name}`](#{name.lower()})"
    if "const" in node:
        return f"`{node['const']!r}`".replace("'", '"')
    if "enum" in node:
        return " or ".join(f"`{value!r}`".replace("'", '"') for value in node["enum"])
    if "anyOf" in node:
        return " or ".join(_type(option) for option in node["anyOf"])
    kind = node.get("type")
    if isinstance(kind, list):
        return " or ".join(_type({"type": single}) for single in kind)
    if kind == "array":
        return f"list of {_type(node.get('items', {}))}"
    if kind == "object":
        value = node.get("additionalProperties", True)
        return f"map of name to {_type(value)}" if isinstance(value, dict) else "object (any keys)"
    if kind is None:
        return "any JSON value"
    return {"integer": "int", "number": "number", "string": "str", "boolean": "bool", "null": "null"}[kind]


def kinds_table() -> str:
    """One row per report kind: its type and how to get its schema."""
    lines = ["| kind | type | JSON Schema |", "| --- | --- | --- |"]
    for kind, cls in REPORT_KINDS.items():
        lines.append(
            f"| `{kind}` | [`{cls.__name__}`](#{cls.__name__.lower()}) | `torchscan schema {kind}` |"
        )
    return "\n".join(lines) + "\n"


def types_section() -> str:
    """Every wire type of every report kind: its description and one row per field."""
    definitions: dict[str, dict[str, Any]] = {}
    for kind in REPORT_KINDS:
        for name, definition in report_schema(kind)["$defs"].items():
            definitions.setdefault(name, definition)
    parts = []
    for name, definition in sorted(definitions.items()):
        parts.append(f"#### `{name}`\n")
        if "properties" not in definition:  # a union of shapes (value metadata, token dependencies)
            parts.append(f"One of: {_type(definition)}.\n")
            continue
        closed = definition.get("additionalProperties") is False
        parts.append(f"{definition['description']}{'' if closed else ' (open object)'}\n")
        if not definition["properties"]:
            parts.append("An empty object: no fields.\n")
            continue
        rows = ["| field | type | required |", "| --- | --- | --- |"]
        for field, node in definition["properties"].items():
            required = "yes" if field in definition["required"] else "no"
            rows.append(f"| `{field}` | {_cell(_type(node))} | {required} |")
        parts.append("\n".join(rows) + "\n")
    return "\n".join(parts)


def _table(header: tuple[str, str], entries: dict[str, str]) -> str:
    rows = [f"| {header[0]} | {header[1]} |", "| --- | --- |"]
    rows += [f"| `{_cell(label)}` | {_cell(meaning)} |" for label, meaning in entries.items()]
    return "\n".join(rows) + "\n"


def labels_section() -> str:
    """Statuses, then the methods, units and scopes TorchScan writes."""
    statuses = {
        "complete": "Use `value` (equal to `known_value`), with its method, unit and scope. Zero is a real "
        "zero only here.",
        "partial": "`value` is null; `known_value` is a lower bound only: never extrapolate it.",
        "unavailable": "Nothing was measured: `value` and `known_value` are null.",
    }
    assert tuple(statuses) == STATUSES
    methods = {**METHODS, **{f"{prefix}…": meaning for prefix, meaning in METHOD_FAMILIES.items()}}
    return "\n".join(
        [
            f"`schema_version` is `{SCHEMA_VERSION}` in every report kind.\n",
            "#### Statuses\n",
            _table(("status", "what a consumer does"), statuses),
            "#### Methods\n",
            _table(("method", "meaning"), methods),
            "#### Units\n",
            _table(("unit", "meaning"), UNITS),
            "#### Scopes\n",
            _table(("scope", "meaning"), SCOPES),
        ]
    )


def codes_section() -> str:
    """Every diagnostic code: what it means and what a consumer does with it."""
    rows = ["| code | meaning | what a consumer does |", "| --- | --- | --- |"]
    for code, entry in sorted(CODES.items()):
        rows.append(f"| `{code}` | {_cell(entry.meaning)} | {_cell(entry.action)} |")
    return "\n".join(rows) + "\n"


SECTIONS = {"kinds": kinds_table, "types": types_section, "labels": labels_section, "codes": codes_section}


def generated_blocks(page: str) -> str:
    """``page`` with every ``<!-- BEGIN GENERATED: name -->`` block replaced by its current text."""
    return BLOCK.sub(lambda match: match[1] + SECTIONS[match[2]]() + match[4], page)
