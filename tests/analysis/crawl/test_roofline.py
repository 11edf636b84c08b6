"""crawl_module(hardware=): arithmetic intensity and roofline time (training-and-hardware.md 3)."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from torch import nn

from torchscan import IncompleteAnalysisError, compare_reports, crawl_module
from torchscan.analysis.crawl.roofline import (
    arithmetic_intensity,
    call_element_size,
    roofline_seconds,
    to_bytes,
)
from torchscan.report.schema import metric_result
from torchscan.report.validate import validate_analysis_report

PEAK = "peak_flops_per_second"
BANDWIDTH = "memory_bandwidth_bytes_per_second"
FACTS = {"name": "test", PEAK: 100.0, BANDWIDTH: 50.0}


def _layer(report, path):
    return next(layer for layer in report["layers"] if layer["path"] == path)


def _values(metrics):
    return {name: metrics[name]["value"] for name in ("arithmetic_intensity", "roofline_seconds")}


def _model():
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU())


def test_linear_relu_by_hand() -> None:
    report = crawl_module(_model(), (2, 4), hardware=FACTS)  # input [1, 2, 4], float32 (4 bytes)
    linear, relu = _layer(report, "0")["metrics"], _layer(report, "1")["metrics"]
    # Linear: FLOPs 2·2·4·3 = 48; DMAs input 8 + weight 12 + bias 3 + output 6 = 29 -> 116 bytes.
    # Roofline: max(48 / 100, 116 / 50) = max(0.48, 2.32) = 2.32 s (memory bound).
    assert (linear["module_flops"]["value"], linear["dmas"]["value"]) == (48, 29)
    assert _values(linear) == {"arithmetic_intensity": 48 / 116, "roofline_seconds": 116 / 50}
    # ReLU: 6 FLOPs; DMAs 6 read + 6 written = 12 -> 48 bytes; max(0.06, 0.96) = 0.96 s.
    assert _values(relu) == {"arithmetic_intensity": 6 / 48, "roofline_seconds": 48 / 50}
    # Totals: 54 FLOPs over (29 + 12)·4 = 164 bytes; max(0.54, 3.28) = 3.28 s.
    assert _values(report["totals"]) == {"arithmetic_intensity": 54 / 164, "roofline_seconds": 164 / 50}
    intensity, roofline = report["totals"]["arithmetic_intensity"], report["totals"]["roofline_seconds"]
    assert (intensity["unit"], intensity["status"], intensity["scope"]) == (
        "FLOPs/byte",
        "complete",
        "forward",
    )
    assert (roofline["unit"], roofline["method"], roofline["status"]) == (
        "seconds",
        "roofline_model",
        "complete",
    )
    assert linear["roofline_seconds"]["scope"] == "module_call"
    # the container row carries no module FLOPs of its own, so no figure either
    assert "arithmetic_intensity" not in _layer(report, "")["metrics"]
    assert report["context"]["hardware"] == FACTS and report["context"]["hardware"] is not FACTS
    saved = json.loads(json.dumps(report))
    validate_analysis_report(saved)
    assert saved == report


def test_compute_bound_and_element_size() -> None:
    # float64: 8 bytes per element. Linear(4, 3): 29 DMAs -> 232 bytes; a peak of 10 FLOP/s and a
    # bandwidth of 1e6 B/s make it compute bound: max(48 / 10, 232 / 1e6) = 4.8 s.
    facts = {"name": "slow", PEAK: 10, BANDWIDTH: 1e6}
    report = crawl_module(nn.Linear(4, 3).double(), (2, 4), dtype=torch.float64, hardware=facts)
    assert _values(report["layers"][0]["metrics"]) == {
        "arithmetic_intensity": 48 / 232,
        "roofline_seconds": 4.8,
    }


def test_without_bandwidth_roofline_unavailable() -> None:
    report = crawl_module(_model(), (2, 4), hardware={"name": "peak only", PEAK: 100.0})
    for metrics in (report["totals"], _layer(report, "0")["metrics"]):
        assert metrics["roofline_seconds"]["status"] == "unavailable"
        assert metrics["roofline_seconds"]["method"] == "roofline_model"
        assert metrics["arithmetic_intensity"]["status"] == "complete"
    assert BANDWIDTH not in report["context"]["hardware"]
    with pytest.raises(IncompleteAnalysisError):  # strict: a requested figure is not complete
        crawl_module(_model(), (2, 4), hardware={"name": "peak only", PEAK: 100.0}, strict=True)


def test_embedding_takes_its_output_dtype() -> None:
    module = nn.Embedding(10, 4)
    report = crawl_module(module, args=(torch.tensor([[1, 2, 3]]),), hardware=FACTS)
    layer = report["layers"][0]
    assert call_element_size(layer) == 4  # int64 indices in, float32 rows out
    dmas, flops = layer["metrics"]["dmas"]["value"], layer["metrics"]["module_flops"]["value"]
    assert layer["metrics"]["roofline_seconds"]["value"] == max(flops / 100, dmas * 4 / 50)


def test_structure_mode_keeps_facts_adds_no_figures() -> None:
    report = crawl_module(_model(), (2, 4), mode="structure", hardware=FACTS)
    assert report["context"]["hardware"] == FACTS
    assert "roofline_seconds" not in report["totals"]
    validate_analysis_report(json.loads(json.dumps(report)))


class _Refuses(nn.Module):
    def forward(self, x):
        raise AssertionError("the forward must not run")


@pytest.mark.parametrize(
    ("hardware", "error", "word"),
    [
        (["name"], TypeError, "hardware"),
        ({"name": "x"}, ValueError, PEAK),
        ({"name": "x", PEAK: 1.0, "bandwidth": 2.0}, ValueError, "bandwidth"),
        ({"name": "x", PEAK: float("nan")}, ValueError, PEAK),
        ({"name": "x", PEAK: 1.0, BANDWIDTH: True}, TypeError, BANDWIDTH),
        ({"name": b"x", PEAK: 1.0}, TypeError, "name"),
    ],
)
def test_bad_hardware_refused_before_the_forward(hardware, error, word) -> None:
    with pytest.raises(error, match=word):
        crawl_module(_Refuses(), (2,), hardware=hardware)


def _result(status, value, unit):
    return metric_result(status, value, unit=unit, scope="module_call", method="m")


@pytest.mark.parametrize(
    ("flops", "dmas", "intensity", "roofline"),
    [
        # 10 FLOPs, 5 DMAs x 2 bytes = 10 bytes; peak 2 FLOP/s, bandwidth 1 B/s -> max(5, 10) = 10 s
        (("complete", 10), ("complete", 5), ("complete", 1.0), ("complete", 10.0)),
        # a partial FLOP count over known bytes is a lower bound on both figures
        (("partial", 10), ("complete", 5), ("partial", 1.0), ("partial", 10.0)),
        # partial bytes would make the ratio an upper bound: unavailable; the roofline stays a bound
        (("complete", 10), ("partial", 5), ("unavailable", None), ("partial", 10.0)),
        (("unavailable", None), ("complete", 5), ("unavailable", None), ("unavailable", None)),
        (("complete", 10), ("unavailable", None), ("unavailable", None), ("unavailable", None)),
        # nothing moved: intensity undefined, a compute-only roofline of 10 / 2 = 5 s
        (("complete", 10), ("complete", 0), ("unavailable", None), ("complete", 5.0)),
    ],
)
def test_statuses_follow_the_inputs(flops, dmas, intensity, roofline) -> None:
    counted = _result(*flops, "FLOPs")
    moved = to_bytes(_result(*dmas, "DMAs"), 2, "module_call")
    got = arithmetic_intensity(counted, moved, "module_call")
    assert (got["status"], got["known_value"]) == intensity
    got = roofline_seconds(counted, moved, 2, 1, "module_call")
    assert (got["status"], got["known_value"]) == roofline


def test_saved_figures_checked_and_compared() -> None:
    before = json.loads(json.dumps(crawl_module(_model(), (2, 4), hardware=FACTS)))
    after = json.loads(json.dumps(crawl_module(_model(), (4, 4), hardware=FACTS)))
    diff = compare_reports(before, after)
    # totals: (29 + 12)·4 = 164 bytes before; batch 4: Linear 16 + 12 + 3 + 12 = 43, ReLU 24 -> 268 bytes
    assert diff["totals"]["roofline_seconds"]["delta"] == pytest.approx(268 / 50 - 164 / 50)
    orphan = copy.deepcopy(before)
    del orphan["context"]["hardware"]
    with pytest.raises(ValueError, match=r"^totals\.arithmetic_intensity: .*context\.hardware"):
        validate_analysis_report(orphan)
    wrong = copy.deepcopy(before)
    wrong["layers"][1]["metrics"]["roofline_seconds"]["method"] = "measured"
    with pytest.raises(ValueError, match=r"^layers\[1\]\.metrics\.roofline_seconds\.method"):
        validate_analysis_report(wrong)
    bad = copy.deepcopy(before)
    bad["context"]["hardware"]["name"] = 1
    with pytest.raises(ValueError, match=r"^context\.hardware: .*name"):
        validate_analysis_report(bad)
