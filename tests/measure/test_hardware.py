"""hardware= on measure_workload: validation and utilization totals (training-and-hardware.md 3)."""

from __future__ import annotations

import math

import pytest
import torch

from tests.measure.test_measure_latency import fake_timer, ticks
from torchscan.measure import latency
from torchscan.measure.hardware import validate_hardware
from torchscan.measure.workload import measure_workload


def _never_called() -> None:
    raise AssertionError("the workload must not run")


@pytest.mark.parametrize(
    ("hardware", "error", "word"),
    [
        ([("name", "x")], TypeError, "hardware"),
        ({"name": "x"}, ValueError, "peak_flops_per_second"),
        ({"name": "x", "peak_flops_per_second": 1.0, "bogus": 1}, ValueError, "bogus"),
        ({"name": "x", "peak_flops_per_second": 0}, ValueError, "peak_flops_per_second"),
        ({"name": "x", "peak_flops_per_second": -1.0}, ValueError, "peak_flops_per_second"),
        ({"name": "x", "peak_flops_per_second": math.nan}, ValueError, "peak_flops_per_second"),
        ({"name": "x", "peak_flops_per_second": math.inf}, ValueError, "peak_flops_per_second"),
        ({"name": "x", "peak_flops_per_second": True}, TypeError, "peak_flops_per_second"),
        ({"name": 3, "peak_flops_per_second": 1.0}, TypeError, "name"),
        (
            {"name": "x", "peak_flops_per_second": 1.0, "memory_bandwidth_bytes_per_second": 0.0},
            ValueError,
            "memory_bandwidth_bytes_per_second",
        ),
    ],
)
def test_bad_hardware_refused_before_the_workload_runs(hardware, error, word) -> None:
    with pytest.raises(error, match=word):
        measure_workload(_never_called, device="cpu", hardware=hardware)


def test_validate_hardware_copies() -> None:
    stated = {"name": "t", "peak_flops_per_second": 2.0, "memory_bandwidth_bytes_per_second": 3}
    copied = validate_hardware(stated)
    assert copied == stated and copied is not stated


def test_utilization_is_flops_over_latency_over_peak(monkeypatch) -> None:
    # blocks of 4 calls: per-call 0.125, 0.25, 0.375 -> median latency 0.25 s
    monkeypatch.setattr(latency, "load_timer", lambda: fake_timer(4, [0.5, 1.0, 1.5]))
    ticks(monkeypatch, 1.0, 1.25)
    a, b = torch.ones(2, 3), torch.ones(3, 4)
    hardware = {"name": "test", "peak_flops_per_second": 1e9}
    report = measure_workload(
        lambda: a @ b, device="cpu", metrics=("flops", "latency"), warmup=0, hardware=hardware
    )
    totals = report["totals"]
    flops = totals["operator_flops"]["value"]
    assert flops == 2 * 2 * 3 * 4  # 2·M·K·N for one matmul
    lat = totals["latency"]["value"]
    assert lat == 0.25
    assert report["context"]["hardware"] == hardware
    assert totals["achieved_flops_per_second"]["value"] == flops / lat
    assert totals["achieved_flops_per_second"]["unit"] == "FLOPs/s"
    assert totals["hardware_flops_utilization"]["value"] == flops / lat / 1e9
    assert totals["hardware_flops_utilization"]["unit"] == "ratio"
    mfu = totals["model_flops_utilization"]
    if "by_phase" in report["operator_flops"]:
        assert mfu["value"] == flops / lat / 1e9  # no recompute in a plain matmul
    else:
        assert mfu["status"] == "unavailable"


def test_above_peak_keeps_value_and_warns(monkeypatch) -> None:
    monkeypatch.setattr(latency, "load_timer", lambda: fake_timer(1, [1.0]))
    ticks(monkeypatch, 1.0, 2.0)
    a, b = torch.ones(2, 3), torch.ones(3, 4)
    report = measure_workload(
        lambda: a @ b,
        device="cpu",
        metrics=("flops", "latency"),
        warmup=0,
        hardware={"name": "tiny", "peak_flops_per_second": 1.0},
    )
    hfu = report["totals"]["hardware_flops_utilization"]
    assert hfu["value"] == 48.0  # 48 FLOPs / 1 s / 1 FLOP/s
    codes = [entry["code"] for entry in report["diagnostics"] if entry["metric"] == "hardware_flops_utilization"]
    assert codes == ["utilization_above_peak"]


def test_without_latency_utilization_is_unavailable(monkeypatch) -> None:
    a, b = torch.ones(2, 3), torch.ones(3, 4)
    report = measure_workload(
        lambda: a @ b, device="cpu", metrics=("flops",), hardware={"name": "t", "peak_flops_per_second": 1e9}
    )
    assert report["totals"]["achieved_flops_per_second"]["status"] == "unavailable"
    assert report["totals"]["hardware_flops_utilization"]["status"] == "unavailable"


def test_without_hardware_keys_absent() -> None:
    report = measure_workload(lambda: None, device="cpu", metrics=("flops",))
    assert "achieved_flops_per_second" not in report["totals"]
    assert "hardware" not in report["context"]
