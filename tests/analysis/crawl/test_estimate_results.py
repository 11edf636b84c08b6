"""Leaf estimates become MetricResults at report time (issue #36): kept templates, fresh objects.

The validated results of one estimate are kept per process and copied for each report; the key
keeps every distinction a report can print: an integer and an equal float, and the sign of a zero.
"""

from __future__ import annotations

import json
import math

import torch
from torch import nn

import torchscan
from torchscan.analysis.crawl import estimate


def test_equal_numbers_of_other_types_or_signs_get_their_own_results() -> None:
    whole = estimate._estimate_results((6, 3, 9, (1, 1, 0)))
    floating = estimate._estimate_results((6, 3, 9, (1.0, 1.0, 0.0)))
    negative_zero = estimate._estimate_results((6, 3, 9, (1.0, 1.0, -0.0)))
    assert json.dumps(whole["effective_padding"]) != json.dumps(floating["effective_padding"])
    assert type(whole["receptive_field"]["value"]) is int
    assert type(floating["receptive_field"]["value"]) is float
    assert math.copysign(1.0, floating["effective_padding"]["value"]) == 1.0
    assert math.copysign(1.0, negative_zero["effective_padding"]["value"]) == -1.0
    # a fresh estimate computes what a kept one copies
    assert estimate._estimate_results((6, 3, 9, None)) == estimate._build_estimate_results((6, 3, 9, None))


def test_every_report_gets_its_own_result_objects() -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).eval()
    x = torch.randn(1, 3, 8, 8)
    with torch.no_grad():
        first = torchscan.crawl_module(model, args=(x,))
        second = torchscan.crawl_module(model, args=(x,))
    assert json.dumps(first) == json.dumps(second)
    for one, two in zip(first["layers"], second["layers"], strict=True):
        for name, result in one["metrics"].items():
            assert result is not two["metrics"][name], name
    first["layers"][1]["metrics"]["module_flops"]["value"] = -1  # a caller editing its own report
    assert second["layers"][1]["metrics"]["module_flops"]["value"] != -1
    with torch.no_grad():
        third = torchscan.crawl_module(model, args=(x,))
    assert json.dumps(third) == json.dumps(second)
