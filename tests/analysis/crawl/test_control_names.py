"""Control characters in module/class names and labels: producers and renderer agree (issue #20, item 5).

Names are model text; producers escape them (report/names.py), so the report always renders and
never carries a raw control character. ``work_unit`` is the caller's own argument: refused up front.
"""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from torchscan import crawl_module, measure_flops, measure_latency, measure_workload, render_report

ESC = "\x1b[31m"


def _evil_model() -> nn.Module:
    evil = type(f"Ev{ESC}il\x07", (nn.Module,), {"forward": lambda self, x: self.inner(x)})
    model = evil()
    model.add_module(f"li{ESC}n\x00", nn.Linear(3, 2))
    model.inner = getattr(model, f"li{ESC}n\x00")
    return model


def _no_raw_control(text: str, allowed: str = "") -> None:
    bad = [c for c in text if (ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0) and c not in allowed]
    assert not bad, bad[:5]


def test_analysis_report_escapes_names_and_renders() -> None:
    report = crawl_module(_evil_model(), (3,))
    saved = json.dumps(report, ensure_ascii=False)
    _no_raw_control(saved)
    assert [layer["path"] for layer in report["layers"]][1] == "li\\x1b[31mn\\x00"
    assert report["layers"][0]["type"] == "Ev\\x1b[31mil\\x07"
    assert report["context"]["model_type"].endswith("Ev\\x1b[31mil\\x07")
    loaded = json.loads(saved)
    for fmt in ("html", "svg"):
        _no_raw_control(render_report(loaded, format=fmt), allowed="\n")


def test_flop_report_by_module_names_are_escaped() -> None:
    model = _evil_model()
    report = measure_flops(lambda: model(torch.ones(1, 3)))
    _no_raw_control(json.dumps(report, ensure_ascii=False))
    if report["by_module"]:  # PyTorch 2.1 has no module tracker
        assert "Ev\\x1b[31mil\\x07.li\\x1b[31mn\\x00" in report["by_module"]


@pytest.mark.parametrize("api", ["latency", "workload"])
def test_control_characters_in_work_unit_are_refused_before_the_workload_runs(api: str) -> None:
    calls = []
    options = {"device": "cpu", "work_unit": f"{ESC}images", "min_run_time": 0.01}
    with pytest.raises(ValueError, match="work_unit must not contain control characters"):
        if api == "latency":
            measure_latency(lambda: calls.append(1), **options)
        else:
            measure_workload(lambda: calls.append(1), print_summary=True, **options)
    assert calls == []
