"""Diagnostics grouped for people (issue 15 item 2): grouping, order, hints, text lines."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from torchscan import crawl_module
from torchscan.views.common.diagnostic_groups import escape_control, format_groups, group_diagnostics


def _unsupported(path: str, metric: str) -> dict[str, str]:
    return {
        "code": "unsupported_module_metric",
        "severity": "warning",
        "metric": metric,
        "message": "Module type not supported: Conv1D",
        "path": path,
        "class_path": "transformers.pytorch_utils.Conv1D",
    }


def _report() -> dict[str, object]:
    layers = [{"path": "", "type": "Net"}] + [{"path": f"h.{i}.c", "type": "Conv1D"} for i in range(5)]
    layers.append({"path": "act", "type": "Mystery"})
    diagnostics = [_unsupported(f"h.{i}.c", m) for i in range(5) for m in ("module_flops", "macs")]
    diagnostics += [
        {
            "code": "unestimated_functional_work",
            "severity": "warning",
            "metric": "module_flops",
            "message": "Mystery ran operators ...",
            "path": "act",
        },
        {
            "code": "uncounted_operator",
            "severity": "warning",
            "metric": "flops",
            "message": "aten.foo was observed 2 time(s), but no FLOP formula is registered.",
            "operator": "aten.foo",
        },
        {"code": "unattributed_operator", "severity": "warning", "metric": "operator_flops", "message": "x"},
    ]
    return {"layers": layers, "diagnostics": diagnostics}


def test_groups_fold_by_code_and_subject_largest_first() -> None:
    groups = group_diagnostics(_report())
    # 5 paths x 2 metrics = 10 Conv1D entries; the three singletons sort by code.
    assert [(g["code"], g["subject"], g["count"]) for g in groups] == [
        ("unsupported_module_metric", "Conv1D", 10),
        ("unattributed_operator", "", 1),
        ("uncounted_operator", "aten.foo", 1),
        ("unestimated_functional_work", "Mystery", 1),
    ]
    conv = groups[0]
    assert conv["class_path"] == "transformers.pytorch_utils.Conv1D"
    assert conv["metrics"] == ["module_flops", "macs"]
    assert conv["example_paths"] == ["h.0.c", "h.1.c", "h.2.c"]
    assert conv["path_count"] == 5
    assert conv["action"] == "custom_modules={transformers.pytorch_utils.Conv1D: ModuleHandler(...)}"
    assert groups[1]["action"] is None and groups[1]["example_paths"] == []
    assert groups[2]["action"] == "custom_mapping={torch.ops.aten.foo: <formula>}"
    # No class path recorded: the layer's type names the subject and the hint.
    assert groups[3]["class_path"] is None
    assert groups[3]["action"] == "custom_modules={Mystery: ModuleHandler(...)}"


def test_grouping_leaves_the_report_list_untouched() -> None:
    report = _report()
    before = json.dumps(report, sort_keys=True)
    group_diagnostics(report)
    assert json.dumps(report, sort_keys=True) == before


def test_format_groups_limits_and_counts_the_rest() -> None:
    lines = format_groups(group_diagnostics(_report()), limit=2)
    assert lines == [
        "10 × unsupported_module_metric: Conv1D (transformers.pytorch_utils.Conv1D) [module_flops, macs]"
        " at h.0.c, h.1.c, h.2.c (+2 more)"
        " -> custom_modules={transformers.pytorch_utils.Conv1D: ModuleHandler(...)}",
        "1 × unattributed_operator [operator_flops]",
        "2 more diagnostic group(s) (2 diagnostic(s)); every diagnostic is listed in the report's"
        " 'diagnostics' list",
    ]
    assert format_groups([], limit=5) == []
    with pytest.raises(ValueError, match="limit"):
        format_groups([], limit=-1)
    with pytest.raises(ValueError, match="limit"):
        format_groups([], limit=True)


def test_control_and_bidi_characters_are_shown_escaped() -> None:
    assert escape_control("a\x1b[31mb\x07\x9bc") == "a\\x1b[31mb\\x07\\x9bc"
    assert escape_control("x\u202ey") == "x<U+202E>y"
    report = {"layers": [], "diagnostics": [{**_unsupported("bad\x1bname", "macs")}]}
    (line,) = format_groups(group_diagnostics(report))
    assert "\x1b" not in line and "bad\\x1bname" in line


class Opaque(nn.Module):
    """A leaf no formula recognises: its receptive field cannot be estimated."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


def test_crawl_records_the_class_path_of_an_unsupported_module() -> None:
    model = nn.Sequential(nn.Linear(4, 4), Opaque(), Opaque())
    report = json.loads(json.dumps(crawl_module(model, input_shape=(4,))))
    groups = [g for g in group_diagnostics(report) if g["code"] == "unsupported_module_metric"]
    assert len(groups) == 1
    (group,) = groups
    assert group["subject"] == "Opaque"
    assert group["class_path"] == f"{__name__}.Opaque"
    assert group["example_paths"] == ["1", "2"]
    assert group["action"] == f"custom_modules={{{__name__}.Opaque: ModuleHandler(...)}}"
