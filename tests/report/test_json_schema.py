"""The JSON Schemas generated from the wire types hold for every report the library writes.

The corpus (tests/report/report_corpus.py) makes every report kind with the library's own APIs on
tiny models (about 3 s in all). Each report must validate against its kind's schema; together they
must use every field the schemas declare, except the few listed in ``UNPRODUCED`` with the reason
the suite cannot produce them here. When a report grows a field, declare it in the report's
``TypedDict`` (torchscan/report/schema.py or its siblings): the schema follows. When a new report
kind appears, add it to ``REPORT_KINDS`` in torchscan/report/json_schema.py and a builder below.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

jsonschema = pytest.importorskip("jsonschema")  # the `test` extra installs it

from schema_walk import declared_fields, fields_used  # noqa: E402

from torchscan.report.json_schema import REPORT_KINDS, kind_of, report_schema, schema_errors  # noqa: E402
from torchscan.report.schema import SCHEMA_VERSION  # noqa: E402
from torchscan.report.validate import validate_report  # noqa: E402

# (type, field) pairs no report of this suite can carry, with the reason.
UNPRODUCED = {
    ("BenchmarkMeasurement", "agreed_across_ranks"): "only with world size > 1 (tests/distributed)",
    ("PeakMemory", "allocated_peak_bytes"): "only on CUDA and MPS (allocator counters)",
    ("TokenRelation", "limit"): "windowed relations (tests/formulas/test_tokens.py builds them)",
    ("TokenRelation", "first_position"): "offset relations (tests/formulas/test_tokens.py builds them)",
}
SPEC_KINDS = {
    "analysis",
    "flop",
    "memory",
    "generation",
    "benchmark",
    "profile",
    "report_diff",
    "benchmark_comparison",
    "merged",
    "scaling",
}


@pytest.mark.parametrize("kind", list(REPORT_KINDS))
def test_schema_is_valid_draft_2020_12_and_closed(kind: str) -> None:
    schema = report_schema(kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    root = schema["$defs"][schema["$ref"].removeprefix("#/$defs/")]
    assert root["properties"]["schema_version"] == {"const": SCHEMA_VERSION}
    assert "schema_version" in root["required"]
    for name, definition in schema["$defs"].items():
        if "properties" in definition:
            assert definition["additionalProperties"] is False, f"{name} is not closed"
    assert report_schema(kind) == schema  # deterministic
    json.dumps(schema)


def test_kinds_are_the_specified_ones() -> None:
    assert set(REPORT_KINDS) - {"memory_comparison"} == SPEC_KINDS


def test_every_report_validates_against_its_kind(corpus: list[tuple[str, Any]]) -> None:
    seen = set()
    for label, report in corpus:
        kind = kind_of(report)
        assert kind is not None, label
        seen.add(kind)
        if kind not in ("flop", "profile", "report_diff", "memory_comparison"):
            validate_report(report)  # the library's own validator agrees
        problems = schema_errors(report, kind)
        assert not problems, f"{label} ({kind}): {problems[:3]}"
    missing = set(REPORT_KINDS) - seen
    assert not missing, f"add a builder to tests/report/report_corpus.py for the kinds {sorted(missing)}"


def test_every_declared_field_is_produced(corpus: list[tuple[str, Any]]) -> None:
    declared: set[tuple[str, str]] = set()
    for kind in REPORT_KINDS:
        declared |= declared_fields(report_schema(kind))
    used: set[tuple[str, str]] = set()
    for _, report in corpus:
        used |= fields_used(report, report_schema(kind_of(report) or ""))
    missing = declared - used - set(UNPRODUCED)
    assert not missing, (
        f"the schemas declare fields no report of the corpus carries: {sorted(missing)}; add a scenario "
        "that produces them to tests/report/report_corpus.py (or, when this suite cannot, an UNPRODUCED "
        "entry saying why)"
    )
    stale = set(UNPRODUCED) & used
    assert not stale, f"UNPRODUCED lists fields the corpus now produces; remove them: {sorted(stale)}"
    assert set(UNPRODUCED) <= declared, "UNPRODUCED names a field the schemas no longer declare"


def test_a_field_the_schema_lacks_is_rejected_with_its_path(corpus: list[tuple[str, Any]]) -> None:
    report = next(report for _, report in corpus if kind_of(report) == "analysis")
    report = copy.deepcopy(report)
    report["layers"][0]["metrics"]["calls"]["note"] = "extra"
    problems = schema_errors(report)
    assert problems and problems[0].startswith("$.layers[0].metrics.calls: ")
    assert "'note' was unexpected" in problems[0] and problems[0].endswith("(rule: additionalProperties)")


def test_a_wrong_status_names_the_path_and_the_rule(corpus: list[tuple[str, Any]]) -> None:
    report = copy.deepcopy(next(r for _, r in corpus if kind_of(r) == "flop"))
    report["total"]["status"] = "done"
    problems = schema_errors(report)
    assert problems[0] == (
        "$.total.status: 'done' is not one of ['complete', 'partial', 'unavailable'] (rule: enum)"
    )
    report["total"]["status"] = "partial"  # with a value: the status rule names value
    assert any(
        line.startswith("$.total.value: ") and "(rule: type)" in line for line in schema_errors(report)
    )


@pytest.mark.parametrize("version", [2, 0, "1", None])
def test_an_unknown_schema_version_is_rejected_with_its_number(
    corpus: list[tuple[str, Any]], version: Any
) -> None:
    report = copy.deepcopy(next(r for _, r in corpus if kind_of(r) == "analysis"))
    report["schema_version"] = version
    (problem,) = schema_errors(report)
    assert problem.startswith(f"$.schema_version: unsupported schema_version {version!r}")
    with pytest.raises(ValueError, match=rf"schema_version.*{version!r}"):
        validate_report(report)  # the library's own validator names it too
    errors = list(jsonschema.Draft202012Validator(report_schema("analysis")).iter_errors(report))
    assert [error.json_path for error in errors if error.validator == "const"] == ["$.schema_version"]


def test_unknown_kind_is_refused_naming_the_known_kinds() -> None:
    with pytest.raises(ValueError, match="known kinds: analysis, flop, memory"):
        report_schema("scan")


def test_memory_ledger_inside_a_benchmark_is_a_memory_report() -> None:
    schema = report_schema("benchmark")
    assert schema["$defs"]["BenchmarkReport"]["properties"]["memory_ledger"] == {
        "$ref": "#/$defs/MemoryReport"
    }
