"""JSON Schemas (draft 2020-12) of every report kind, generated from the wire ``TypedDict``s.

One source for the wire format (STYLE 16): the schemas are never written by hand. Each report kind
is one entry of :data:`REPORT_KINDS`, naming its ``TypedDict``; :func:`report_schema` walks that
declaration (``NotRequired`` keys become optional properties, ``Literal`` an ``enum``, a
:class:`~torchscan.report.schema.WireShape` annotation the listed shapes) and closes every object
whose keys are declared (``additionalProperties: false``). Mappings keyed by names the report
chooses (``totals``, ``by_operator``) stay open by key, typed by value. Two rules come from outside
the types and are stated here: ``schema_version`` is required with its current value, and a
MetricResult's ``value``/``known_value`` follow its ``status`` (analysis.md 5.2).

The schema checks shape; the library's validators (:mod:`torchscan.report.validate`) also check the
invariants between fields (sums, matching totals, deltas). Never imports torch.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin

from torchscan.report import (
    generation_schema,
    memory_diff,
    memory_schema,
    metric,
    scaling_schema,
    schema,
    values_schema,
    workload_schema,
)
from torchscan.report.generation_schema import GenerationReport
from torchscan.report.memory_diff import MemoryDiff
from torchscan.report.memory_schema import MemoryReport
from torchscan.report.metric import MetricResult
from torchscan.report.scaling_schema import ScalingReport
from torchscan.report.schema import (
    SCHEMA_VERSION,
    AnalysisReport,
    FlopReport,
    MergedReport,
    ReportDiff,
    WireShape,
)
from torchscan.report.workload_schema import BenchmarkComparison, BenchmarkReport, ProfileReport

DIALECT = "https://json-schema.org/draft/2020-12/schema"

# One entry per report kind: adding a kind is adding its TypedDict here (and its module to
# _MODULES when it lives in a new one). The order is the order of `torchscan schema --help`.
REPORT_KINDS: dict[str, type] = {
    "analysis": AnalysisReport,
    "flop": FlopReport,
    "memory": MemoryReport,
    "generation": GenerationReport,
    "benchmark": BenchmarkReport,
    "profile": ProfileReport,
    "report_diff": ReportDiff,
    "memory_comparison": MemoryDiff,
    "benchmark_comparison": BenchmarkComparison,
    "merged": MergedReport,
    "scaling": ScalingReport,
}

# Modules whose names the TypedDicts' (string) annotations may use.
_MODULES = (
    metric,
    values_schema,
    schema,
    workload_schema,
    memory_schema,
    generation_schema,
    memory_diff,
    scaling_schema,
)


def _namespace() -> dict[str, Any]:
    names: dict[str, Any] = {}
    for module in _MODULES:
        names.update(vars(module))
    return names


_ROLE = re.compile(r":(?:func|class|mod|data|meth):`~?([^`]+)`")


def _description(cls: type) -> str:
    """The first paragraph of a type's docstring, on one line, in Markdown (no reST roles)."""
    text = inspect.cleandoc(cls.__doc__ or "")
    text = _ROLE.sub(r"`\1`", " ".join(text.split("\n\n")[0].split()))
    return text.replace("``", "`")


class _Builder:
    """Turns Python wire types into schema nodes, collecting each named type once in ``defs``."""

    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}
        self.owners: dict[str, object] = {}
        self.names = _namespace()

    def _claim(self, name: str, owner: object) -> bool:
        """Reserve ``$defs[name]`` for ``owner``; False when it is already built. Two different
        types with one name would make one of them unreachable, so that is refused."""
        if name in self.owners:
            if self.owners[name] is not owner:
                raise TypeError(f"two wire types are both named {name!r}; rename one of them")
            return False
        self.owners[name] = owner
        return True

    def node(self, tp: Any, field: str | None = None) -> dict[str, Any]:
        """The schema of one Python type (``field``: the key it annotates, if any)."""
        origin = get_origin(tp)
        if field == "schema_version":
            return {"const": SCHEMA_VERSION}
        if origin in (NotRequired, Required):
            return self.node(get_args(tp)[0], field)
        if origin is typing.Annotated:
            shapes = [meta for meta in tp.__metadata__ if isinstance(meta, WireShape)]
            return self._wire_shape(shapes[0]) if shapes else self.node(get_args(tp)[0], field)
        if typing.is_typeddict(tp):
            return self._typed_dict(tp)
        if tp is Any:
            return {}
        if tp is type(None) or tp is None:
            return {"type": "null"}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            return {"type": "integer"}
        if tp is float:
            return {"type": "number"}
        if tp is str:
            return {"type": "string"}
        if origin is Literal:
            values = list(get_args(tp))
            return {"const": values[0]} if len(values) == 1 else {"enum": values}
        if origin in (Union, types.UnionType):
            return self._union(get_args(tp), field)
        if origin is list:
            return {"type": "array", "items": self.node(get_args(tp)[0])}
        if origin is dict:
            key, value = get_args(tp)
            if key is not str:
                raise TypeError(f"JSON object keys are strings, not {key!r}")
            return {"type": "object", "additionalProperties": self.node(value)}
        raise TypeError(f"no JSON Schema for the Python type {tp!r}")

    def _union(self, members: tuple[Any, ...], field: str | None) -> dict[str, Any]:
        if {int, float} <= set(members):  # Number: JSON has one number type
            members = tuple(m for m in members if m is not int)
        options = [self.node(member, field) for member in members]
        simple = [option.get("type") for option in options]
        if all(
            isinstance(kind, str) and len(option) == 1 for kind, option in zip(simple, options, strict=True)
        ):
            return {"type": simple}
        return {"anyOf": options}

    def _wire_shape(self, shape: WireShape) -> dict[str, Any]:
        shapes = [self.names[member] if isinstance(member, str) else member for member in shape.shapes]
        if len(shapes) == 1:  # one declared shape: its own definition is enough
            return self.node(shapes[0])
        if self._claim(shape.name, shape):
            self.defs[shape.name] = {}  # placeholder first: the shapes may recurse here
            self.defs[shape.name] = {"anyOf": [self.node(member) for member in shapes]}
        return {"$ref": f"#/$defs/{shape.name}"}

    def _typed_dict(self, cls: type) -> dict[str, Any]:
        name = cls.__name__
        if self._claim(name, cls):
            self.defs[name] = {}  # placeholder: recursive types refer back to it
            hints = typing.get_type_hints(cls, localns=self.names, include_extras=True)
            # Not ``__required_keys__``: under postponed annotations Python 3.11 computes it from the
            # unevaluated strings and so treats every NotRequired key as required.
            total = getattr(cls, "__total__", True)
            required = {
                key
                for key, hint in hints.items()
                if get_origin(hint) is Required or (total and get_origin(hint) is not NotRequired)
            }
            entry: dict[str, Any] = {
                "type": "object",
                "description": _description(cls),
                "properties": {key: self.node(hint, key) for key, hint in hints.items()},
                "required": [key for key in hints if key in required],
                "additionalProperties": False,
            }
            entry.update(_EXTRA_RULES.get(cls, {}))
            self.defs[name] = entry
        return {"$ref": f"#/$defs/{name}"}


# Rules a TypedDict cannot state, added to the generated object schema of that type.
_EXTRA_RULES: dict[type, dict[str, Any]] = {
    MetricResult: {
        "allOf": [
            {
                "if": {"properties": {"status": {"const": "complete"}}},
                "then": {"properties": {"value": {"type": "number"}, "known_value": {"type": "number"}}},
            },
            {
                "if": {"properties": {"status": {"const": "partial"}}},
                "then": {"properties": {"value": {"type": "null"}, "known_value": {"type": "number"}}},
            },
            {
                "if": {"properties": {"status": {"const": "unavailable"}}},
                "then": {"properties": {"value": {"type": "null"}, "known_value": {"type": "null"}}},
            },
        ]
    },
}


def report_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one report kind, e.g. ``report_schema("analysis")``.

    ``ValueError`` names the known kinds when ``kind`` is not one of :data:`REPORT_KINDS`. The
    result is a fresh dict each call, deterministic, and ``json.dumps``-able.
    """
    if kind not in REPORT_KINDS:
        raise ValueError(f"unknown report kind {kind!r:.60}; known kinds: {', '.join(REPORT_KINDS)}")
    builder = _Builder()
    root = builder.node(REPORT_KINDS[kind])
    return {
        "$schema": DIALECT,
        "$id": f"urn:torchscan:report:{kind}:{SCHEMA_VERSION}",
        "title": f"TorchScan {REPORT_KINDS[kind].__name__} (schema_version {SCHEMA_VERSION})",
        **root,
        "$defs": dict(sorted(builder.defs.items())),
    }


def kind_of(report: Any) -> str | None:
    """The report kind of a saved report by its keys (``None`` when it is none of them)."""
    if not isinstance(report, Mapping) or "schema_version" not in report:
        return None
    report_type = report.get("report_type")
    if isinstance(report_type, str):
        return report_type if report_type in REPORT_KINDS else None
    if isinstance(report.get("layers"), list):
        return "analysis"
    if isinstance(report.get("layers"), Mapping):
        return "report_diff"
    if "measurement" in report:
        return "benchmark"
    if "by_operator" in report and "total" in report:
        return "flop"
    if "operators" in report:
        return "profile"
    return None


def schema_errors(report: Any, kind: str | None = None) -> list[str]:
    """Check ``report`` against the JSON Schema of its kind; return one line per problem found.

    Each line names the JSON path and the rule that failed, e.g. ``$.layers[0].metrics.macs.status:
    'done' is not one of ['complete', 'partial', 'unavailable'] (rule: enum)``; the most relevant
    problem comes first. An unknown ``schema_version`` is named by its number. ``kind`` defaults to
    the report's own (:func:`kind_of`). Needs the ``jsonschema`` package (not a dependency of
    TorchScan: ``pip install jsonschema``); ``ImportError`` says so when it is missing.
    """
    try:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import relevance
    except ImportError:  # pragma: no cover - exercised by hand; the test extra installs it
        raise ImportError("checking a report against its JSON Schema needs: pip install jsonschema") from None
    if isinstance(report, Mapping) and report.get("schema_version") != SCHEMA_VERSION:
        version = report.get("schema_version")
        return [
            f"$.schema_version: unsupported schema_version {version!r:.40}; this TorchScan reads "
            f"{SCHEMA_VERSION} (rule: const)"
        ]
    kind = kind or kind_of(report)
    if kind is None:
        return [f"$: not a report of a known kind ({', '.join(REPORT_KINDS)}) (rule: kind)"]
    validator = Draft202012Validator(report_schema(kind))
    errors = sorted(validator.iter_errors(report), key=relevance, reverse=True)
    lines = []
    for error in errors:
        # anyOf failures say only "not valid under any"; their closest branch says what is wrong.
        while error.context:
            error = max(error.context, key=relevance)
        lines.append(f"{error.json_path}: {error.message:.300} (rule: {error.validator})")
    return lines
