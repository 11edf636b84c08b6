"""``token_dependencies`` on layer rows is validated (issue #20, item 11; extensions-and-transformers.md 16).

Before the fix, ``render_report`` and the validators accepted any value there: a string, a relation
with an unknown kind, a negative length, a missing ``sources``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import torch
from torch import nn

from torchscan import compare_reports, crawl_module, render_report
from torchscan.report.schema import ASSUMPTIONS_V1, TOKEN_METHOD
from torchscan.report.validate import validate_report


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    return json.loads(json.dumps(crawl_module(layer, (3, 8))))


def _row(report: dict[str, Any]) -> int:
    return next(i for i, layer in enumerate(report["layers"]) if "token_dependencies" in layer)


def test_real_objects_validate(report):
    tokens = report["layers"][_row(report)]["token_dependencies"]
    assert tokens["status"] == "complete" and tokens["method"] == TOKEN_METHOD
    assert tokens["assumptions"] == list(ASSUMPTIONS_V1)
    validate_report(report)
    render_report(report)


def test_the_unavailable_object_validates(report):
    changed = copy.deepcopy(report)
    changed["layers"][_row(changed)]["token_dependencies"] = {
        "status": "unavailable",
        "scope": "module_call",
        "method": TOKEN_METHOD,
        "assumptions": [],
    }
    validate_report(changed)


def _set(tokens: dict[str, Any], path: tuple, value: Any) -> None:
    *parents, last = path
    for key in parents:
        tokens = tokens[key]
    if value is KeyError:
        del tokens[last]
    else:
        tokens[last] = value


MALFORMED = [
    ((), "not an object", r"token_dependencies: must be a token-dependency object"),
    (("status",), "partial", r"token_dependencies\.status"),
    (("scope",), "subtree", r"token_dependencies\.scope"),
    (("method",), "other", r"token_dependencies\.method"),
    (("assumptions",), [], r"token_dependencies\.assumptions"),
    (("sources",), KeyError, r"missing the key 'sources'"),
    (("sources",), [], r"token_dependencies\.sources"),
    (("sources",), "all", r"token_dependencies\.sources"),
    (("extra",), 1, r"unknown key 'extra'"),
    (("output", "length"), -1, r"output\.length"),
    (("output", "sequence_axis"), 2, r"output\.sequence_axis"),
    (("output", "sequence_axis"), True, r"output\.sequence_axis"),
    (("sources", 0), [], r"sources\[0\]: must be a source object"),
    (("sources", 0, "arguments"), [], r"sources\[0\]\.arguments"),
    (("sources", 0, "arguments"), [1], r"sources\[0\]\.arguments"),
    (("sources", 0, "length"), 1.5, r"sources\[0\]\.length"),
    (("sources", 0, "sequence_axis"), 0, r"sources\[0\]\.sequence_axis"),
    (("sources", 0, "relation"), None, r"sources\[0\]\.relation"),
    (("sources", 0, "relation", "kind"), "everything", r"relation\.kind"),
    (("sources", 0, "relation", "limit"), 3, r"relation\.limit"),
    (("sources", 0, "relation", "limit"), -1, r"relation\.limit"),
    (("sources", 0, "relation", "first_position"), 0, r"relation\.first_position"),
    (("sources", 0, "relation", "why"), 0, r"unknown key 'why'"),
]


@pytest.mark.parametrize(("path", "value", "message"), MALFORMED)
def test_malformed_objects_are_refused_everywhere(report, path, value, message):
    changed = copy.deepcopy(report)
    row = _row(changed)
    if path:
        _set(changed["layers"][row]["token_dependencies"], path, value)
    else:
        changed["layers"][row]["token_dependencies"] = value
    location = rf"layers\[{row}\]\.token_dependencies"
    with pytest.raises(ValueError, match=location):
        validate_report(changed)
    with pytest.raises(ValueError, match=message):
        render_report(changed)
    with pytest.raises(ValueError, match=message):
        render_report(changed, format="svg")
    with pytest.raises(ValueError, match=message):
        compare_reports(report, changed)


def test_a_none_relation_has_no_bounds(report):
    changed = copy.deepcopy(report)
    source = changed["layers"][_row(changed)]["token_dependencies"]["sources"][0]
    source["relation"] = {"kind": "none", "first_position": 1}
    with pytest.raises(ValueError, match="a none relation"):
        validate_report(changed)


def test_unavailable_with_extra_keys_is_refused(report):
    changed = copy.deepcopy(report)
    changed["layers"][_row(changed)]["token_dependencies"] = {
        "status": "unavailable",
        "scope": "module_call",
        "method": TOKEN_METHOD,
        "assumptions": [],
        "sources": [],
    }
    with pytest.raises(ValueError, match="unknown key 'sources'"):
        validate_report(changed)
