"""The tables of diagnostic codes and MetricResult labels list exactly what the package writes.

``torchscan/report/codes.py`` (CODES) and ``torchscan/report/vocabulary.py`` (METHODS, UNITS,
SCOPES) are what docs/report-schema.md prints. These tests read the package's source: every
``diagnostic(code, ...)`` call must use a listed code and every listed code must be written
somewhere; every method or scope constant must be listed; and every label a real report carries
(tests/report/report_corpus.py) must be listed. A failure names the code or label and where to add it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torchscan.report.codes import CODES
from torchscan.report.metric import METRIC_RESULT_KEYS
from torchscan.report.vocabulary import METHOD_FAMILIES, METHODS, SCOPES, UNITS

PACKAGE = Path(__file__).resolve().parents[2] / "torchscan"
TABLES = {PACKAGE / "report" / "codes.py", PACKAGE / "report" / "vocabulary.py"}


def _sources() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path not in TABLES:
            yield path, ast.parse(path.read_text(encoding="utf-8"))


def _name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _string_constants(tree: ast.Module) -> dict[str, str]:
    found = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str):
            found[target.id] = value.value
    return found


def _argument(call: ast.Call, index: int, name: str) -> ast.expr | None:
    if len(call.args) > index:
        return call.args[index]
    return next((keyword.value for keyword in call.keywords if keyword.arg == name), None)


def _codes_written() -> Iterator[tuple[str, str]]:
    """``(where, code)`` for every diagnostic() call; a parameter is followed to its callers."""
    for path, tree in _sources():
        constants = _string_constants(tree)
        functions = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        for call in (node for node in ast.walk(tree) if isinstance(node, ast.Call)):
            if _name(call) != "diagnostic" or path.name == "diagnostics.py":
                continue
            where = f"{path.relative_to(PACKAGE.parent)}:{call.lineno}"
            argument = _argument(call, 0, "code")
            if isinstance(argument, ast.Constant):
                yield where, argument.value
            elif isinstance(argument, ast.Name) and argument.id in constants:
                yield where, constants[argument.id]
            elif isinstance(argument, ast.Name):
                scope: Any = call
                while not isinstance(scope, ast.FunctionDef):
                    scope = parents[scope]
                parameters = [arg.arg for arg in scope.args.args]
                assert argument.id in parameters, f"{where}: cannot tell which code {argument.id} holds"
                index = parameters.index(argument.id)
                callers = [
                    node
                    for node in ast.walk(tree)
                    if isinstance(node, ast.Call) and _name(node) == scope.name
                ]
                assert callers and scope.name in functions, f"{where}: {scope.name} has no caller here"
                for caller in callers:
                    passed = _argument(caller, index, argument.id)
                    assert isinstance(passed, ast.Constant), f"{where}: a caller passes a non-literal code"
                    yield f"{where} via line {caller.lineno}", passed.value
            else:
                pytest.fail(f"{where}: the diagnostic code must be a literal or a module constant")


def test_every_diagnostic_call_uses_a_listed_code() -> None:
    written = list(_codes_written())
    assert len(written) > 40
    unknown = sorted({f"{code} ({where})" for where, code in written if code not in CODES})
    assert not unknown, f"add these codes to CODES in torchscan/report/codes.py: {unknown}"


def test_every_listed_code_is_written_somewhere() -> None:
    written = {code for _, code in _codes_written()}
    assert not set(CODES) - written, f"CODES lists codes nothing writes: {sorted(set(CODES) - written)}"


def test_every_code_has_a_meaning_and_an_action() -> None:
    for code, entry in CODES.items():
        assert code.isidentifier() and code == code.lower(), code
        assert entry.meaning.endswith(".") and entry.action.endswith("."), code


def test_method_and_scope_constants_are_listed() -> None:
    """Module-level constants named *METHOD* or *SCOPE* outside the views are report labels."""
    listed = set(METHODS) | set(SCOPES)
    missing = []
    for path, tree in _sources():
        if "views" in path.parts:  # view-model labels of derived rows, never in a report
            continue
        for name, value in _string_constants(tree).items():
            if ("METHOD" in name or "SCOPE" in name) and not name.endswith("PREFIX") and value not in listed:
                missing.append(f"{value} ({path.name}: {name})")
    assert not missing, f"add these labels to torchscan/report/vocabulary.py: {missing}"


def _results(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        if set(value) == set(METRIC_RESULT_KEYS):
            yield value
        for item in value.values():
            yield from _results(item)
    elif isinstance(value, list):
        for item in value:
            yield from _results(item)


def test_every_label_a_report_carries_is_listed(corpus: list[tuple[str, Any]]) -> None:
    problems = set()
    for label, report in corpus:
        for result in _results(report):
            method = result["method"]
            inner = method.removeprefix("sum_module_estimates[").removesuffix("]")
            family = any(inner.startswith(prefix) for prefix in METHOD_FAMILIES)
            if method not in METHODS and not family and method != "x":  # "x": a hand-made total's label
                problems.add(f"method {method!r} ({label})")
            # a throughput's unit is the caller's work unit per second (UNITS["<work_unit>/s"])
            if result["unit"] not in UNITS and not result["unit"].endswith("/s"):
                problems.add(f"unit {result['unit']!r} ({label})")
            if result["scope"] not in SCOPES:
                problems.add(f"scope {result['scope']!r} ({label})")
        for entry in _diagnostics(report):
            if entry["code"] not in CODES:
                problems.add(f"code {entry['code']!r} ({label})")
    assert not problems, f"add to torchscan/report/vocabulary.py or codes.py: {sorted(problems)}"


def _diagnostics(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "diagnostics" and isinstance(item, list):
                yield from item
            else:
                yield from _diagnostics(item)
    elif isinstance(value, list):
        for item in value:
            yield from _diagnostics(item)
