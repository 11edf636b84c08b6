"""MetricResults are compact dicts that behave exactly like dict literals (spec README memory target)."""

import json

import torch
from torch import nn

import torchscan
from torchscan.report.metric import metric_result


def _literal(**items: object) -> dict:
    return dict(items)


def test_metric_result_is_a_plain_dict_equal_to_the_literal() -> None:
    result = metric_result("partial", known_value=7, unit="FLOPs", scope="module_call", method="m")
    expected = _literal(
        status="partial", value=None, known_value=7, unit="FLOPs", scope="module_call", method="m"
    )
    assert type(result) is dict
    assert result == expected
    assert list(result) == list(expected)
    assert json.dumps(result) == json.dumps(expected)


def test_mutating_one_result_leaves_others_alone() -> None:
    first = metric_result("complete", 3, unit="FLOPs", scope="module_call", method="m")
    second = metric_result("complete", 3, unit="FLOPs", scope="module_call", method="m")
    plain = dict(second)
    for target in (first, plain):
        target["status"] = "partial"
        target["extra"] = 1
        del target["value"]
        target["value"] = None
    assert first == plain and list(first) == list(plain)
    assert second == _literal(
        status="complete", value=3, known_value=3, unit="FLOPs", scope="module_call", method="m"
    )


def test_report_json_matches_a_plain_dict_rebuild() -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 2))
    report = torchscan.crawl_module(model, args=(torch.rand(1, 3, 8, 8),))
    rebuilt = json.loads(json.dumps(report))
    assert rebuilt == report
    assert json.dumps(rebuilt) == json.dumps(report)
