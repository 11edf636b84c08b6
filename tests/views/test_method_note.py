"""The operator-FLOPs method label explained against FlopCounterMode alone (views/common/method_note.py).

What FlopCounterMode counts is read from the running torch's registry when the report is made
(``context.flop_counter_operators``, torch-versions.md 1), never from a list fixed in code.
"""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from torchscan import crawl_module, measure_flops
from torchscan.report.schema import LEGACY_OPERATOR_METHOD, OPERATOR_METHOD
from torchscan.views.common.method_note import method_note, method_split


def _flop_report(by_operator: dict[str, int], covered: list[str], method: str = OPERATOR_METHOD) -> dict:
    total = sum(by_operator.values())
    return {
        "context": {
            "counting_convention": "torchscan_flops_v1",
            "method": method,
            "torch_version": "2.15.0",
            "flop_counter_operators": covered,
        },
        "total": {"status": "complete", "value": total, "known_value": total, "method": method},
        "by_operator": by_operator,
    }


def test_the_report_names_what_the_installed_flop_counter_mode_covers() -> None:
    x, conv, lin = torch.randn(1, 3, 8, 8), nn.Conv2d(3, 4, 3), nn.Linear(36, 5)
    report = measure_flops(lambda: lin(conv(x).relu().flatten(1)[:, :36]))
    registry = {str(packet) for packet in flop_registry}
    expected = sorted(name for name in report["by_operator"] if name in registry)
    assert report["context"]["flop_counter_operators"] == expected
    assert {"aten.convolution", "aten.addmm"} <= set(expected) and "aten.relu" not in expected
    assert report["context"]["attention"] == "mask-aware"


def test_split_and_note_hand_derived() -> None:
    report = _flop_report(
        {
            "aten.addmm": 3_145_728,
            "aten._scaled_dot_product_flash_attention_for_cpu": 138_112,
            "aten.tanh": 49_152,
            "aten.native_layer_norm": 41_120,
            "aten.mul": 32_768,
            "aten.add": 21_504,
            "aten.pow": 8_192,
        },
        covered=["aten.addmm"],
    )
    split = method_split(report)
    assert split["flop_counter_flops"] == 3_145_728 and split["added_flops"] == 290_848
    assert split["added_operators"][:2] == [
        ("aten._scaled_dot_product_flash_attention_for_cpu", 138_112),
        ("aten.tanh", 49_152),
    ]
    assert method_note(report) == (
        # the page style (views-3.md 5): four significant digits, 290,848 -> 290.8 kFLOPs
        "Operator FLOPs use torchscan_flops_v1: 3.146 MFLOPs are in operators that FlopCounterMode "
        "(torch 2.15.0) also has formulas for; FlopCounterMode alone scores 0 for "
        "aten._scaled_dot_product_flash_attention_for_cpu 138.1 kFLOPs, aten.tanh 49.15 kFLOPs, "
        "aten.native_layer_norm 41.12 kFLOPs, +3 more (290.8 kFLOPs in all)."
    )
    # on torch 2.15 FlopCounterMode also has a formula for the CPU attention kernel: it is not "scored 0"
    newer = _flop_report(
        report["by_operator"], covered=["aten._scaled_dot_product_flash_attention_for_cpu", "aten.addmm"]
    )
    assert "scores 0 for aten.tanh 49.15 kFLOPs, aten.native_layer_norm" in method_note(newer)
    assert method_note(report, limit=0).endswith("scores 0 for 6 operator(s) (290.8 kFLOPs in all).")
    none = method_note(_flop_report({"aten.add": 10}, []))
    assert "no counted operator has a FlopCounterMode formula" in none
    assert "also has a formula for every counted operator" in method_note(
        _flop_report({"aten.mm": 10, "aten.view": 0}, ["aten.mm"])
    )
    assert method_note(_flop_report({"aten.mm": 1}, [], method="not_requested")) is None
    # a report made before the list existed (legacy method label) gets no note rather than a guess
    assert method_note(_flop_report({"aten.mm": 1}, [], method=LEGACY_OPERATOR_METHOD)) is None
    assert method_note({"layers": []}) is None
    with pytest.raises(ValueError, match="limit"):
        method_note(report, limit=-1)


def test_note_matches_flop_counter_mode_alone_on_a_real_model() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4)).eval()
    x = torch.randn(1, 8)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(x)
    alone = counter.get_total_flops()
    report = json.loads(json.dumps(crawl_module(model, input_shape=(8,))))
    assert method_split(report["operator_flops"])["flop_counter_flops"] == alone == 2 * 8 * 16 + 2 * 16 * 4
    assert method_note(report) == method_note(report["operator_flops"])
    with torch.no_grad():
        flops = measure_flops(lambda: model(x))
    assert method_note(flops) == method_note(report)
    assert method_note(report).startswith("Operator FLOPs use torchscan_flops_v1: ")
