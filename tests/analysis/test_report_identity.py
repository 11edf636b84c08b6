"""Reports stay byte-identical to the golden written by the code before issue #24's optimisations.

The golden (``data/report_identity.json.gz``, made by ``identity_cases.py --write`` on main's code
before the counting paths were made faster) holds each case's JSON text. A release of torch,
torchvision or transformers other than the golden's may legitimately dispatch other operators, so
the comparison runs only under the versions recorded with it (it skips elsewhere, saying so).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")
pytest.importorskip("torchvision")

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import identity_cases
finally:
    sys.path.pop(0)

GOLDEN: dict[str, Any] = json.loads(gzip.decompress(identity_cases.GOLDEN.read_bytes()))
CASES = identity_cases.cases()


def _first_difference(before: Any, after: Any, path: str = "") -> str:
    """The first JSON path where two documents differ (for a readable failure)."""
    if type(before) is not type(after):
        return f"{path}: {before!r} != {after!r}"
    if isinstance(before, dict):
        if list(before) != list(after):
            return f"{path}: keys {list(before)} != {list(after)}"
        for key in before:
            if before[key] != after[key]:
                return _first_difference(before[key], after[key], f"{path}.{key}")
    if isinstance(before, list):
        if len(before) != len(after):
            return f"{path}: {len(before)} items != {len(after)}"
        for index, (a, b) in enumerate(zip(before, after, strict=True)):
            if a != b:
                return _first_difference(a, b, f"{path}[{index}]")
    return f"{path}: {before!r} != {after!r}"


def test_golden_covers_every_case() -> None:
    assert sorted(GOLDEN["reports"]) == sorted(CASES)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(CASES))
def test_report_is_byte_identical_to_the_golden(name: str) -> None:
    if identity_cases.versions() != GOLDEN["versions"]:
        pytest.skip(f"golden made under {GOLDEN['versions']}, running {identity_cases.versions()}")
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        text = identity_cases.render(CASES[name]())
    finally:
        torch.set_num_threads(threads)
    expected = GOLDEN["reports"][name]
    # The golden predates the rows of modules that never ran as a module call (views-3.md 1: a
    # deliberate change of what a report holds, not of how it is computed); the rest must match.
    report = json.loads(text)
    if "layers" in report:
        report["layers"] = [layer for layer in report["layers"] if layer.get("called", True)]
        text = json.dumps(report)
    if text != expected:
        pytest.fail(f"{name} differs: {_first_difference(json.loads(expected), json.loads(text))}")
