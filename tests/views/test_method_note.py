"""Issue 23 item 7: the operator-FLOPs method label explained (views/method_note.py)."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from torchscan import crawl_module, measure_flops
from torchscan.views.method_note import FLOP_COUNTER_OPERATORS, method_note, method_split


def _flop_report(
    by_operator: dict[str, int], method: str = "torch.utils.flop_counter.FlopCounterMode"
) -> dict:
    total = sum(by_operator.values())
    return {
        "context": {"counting_convention": "torchscan_flops_v1", "method": method},
        "total": {"status": "complete", "value": total, "known_value": total, "method": method},
        "by_operator": by_operator,
    }


def test_the_fixed_list_covers_every_formula_flop_counter_mode_has() -> None:
    # Never call an operator "scored 0 by FlopCounterMode" when this torch has a formula for it.
    assert {str(name) for name in flop_registry} <= FLOP_COUNTER_OPERATORS


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
        }
    )
    split = method_split(report)
    assert split["flop_counter_flops"] == 3_145_728 and split["added_flops"] == 290_848
    assert split["added_operators"][:2] == [
        ("aten._scaled_dot_product_flash_attention_for_cpu", 138_112),
        ("aten.tanh", 49_152),
    ]
    # 3,436,576 / 3,145,728 = 1.0925 -> 1.09x
    assert method_note(report) == (
        "Operator FLOPs use torchscan_flops_v1 on top of FlopCounterMode's dispatch: 1.09× what "
        "FlopCounterMode alone reports (3.15 MFLOPs); FlopCounterMode alone scores 0 for "
        "aten._scaled_dot_product_flash_attention_for_cpu 138 kFLOPs, aten.tanh 49.2 kFLOPs, "
        "aten.native_layer_norm 41.1 kFLOPs, +3 more (291 kFLOPs in all)."
    )
    assert method_note(report, limit=0).endswith("scores 0 for 6 operator(s) (291 kFLOPs in all).")
    assert "FlopCounterMode alone reports 0 here" in method_note(_flop_report({"aten.add": 10}))
    assert "equal what FlopCounterMode alone counts" in method_note(
        _flop_report({"aten.mm": 10, "aten.view": 0})
    )
    assert method_note(_flop_report({"aten.mm": 1}, method="not_requested")) is None
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
    assert method_note(report).startswith("Operator FLOPs use torchscan_flops_v1 on top of")
