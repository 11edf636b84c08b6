"""Issue #11 (5): mapping keys that are not identifiers (paths, secrets) never reach a report."""

from __future__ import annotations

import json

import torch
from torch import nn

from torchscan import crawl_module
from torchscan.analysis.crawl.inputs import describe
from torchscan.report.validate import validate_analysis_report

PATH_KEY = "/private/model.pt"  # 17 characters


class TakesConfig(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x, config=None, **extra):
        return self.lin(x)


def test_a_non_identifier_key_is_recorded_by_length_only():
    meta = describe({PATH_KEY: 1, "ok": 2, 3: 4, "": 5})
    assert meta["items"] == [
        {"key": {"type": "str", "length": 17}, "key_type": "str", "value": {"kind": "scalar", "type": "int"}},
        {"key": "ok", "key_type": "str", "value": {"kind": "scalar", "type": "int"}},
        {"key": 3, "key_type": "int", "value": {"kind": "scalar", "type": "int"}},
        {"key": {"type": "str", "length": 0}, "key_type": "str", "value": {"kind": "scalar", "type": "int"}},
    ]


def test_path_keys_in_args_and_kwargs_never_appear_in_the_report():
    x = torch.ones(1, 2)
    config = {PATH_KEY: torch.ones(1), "weights": {"s3://bucket/key": 1}}
    for options in (
        {"args": (x, config)},
        {"args": (x,), "kwargs": {"config": config}},
        {"kwargs": {"x": x, "config": {"nested": [config]}}},
    ):
        report = crawl_module(TakesConfig(), **options)
        text = json.dumps(report)
        assert "/private" not in text and "model.pt" not in text and "s3://" not in text
        assert '{"type": "str", "length": 17}' in text  # the path key, by length
        assert '{"type": "str", "length": 15}' in text  # "s3://bucket/key"
        assert '"key": "weights"' in text  # identifiers are kept
        validate_analysis_report(report)  # the schema accepts the recorded form
