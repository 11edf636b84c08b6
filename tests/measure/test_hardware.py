"""hardware= on measure_workload: validation and utilization totals (training-and-hardware.md 3)."""

from __future__ import annotations

import copy
import json
import math

import pytest
import torch

from tests.measure.test_measure_latency import fake_timer, ticks
from torchscan.measure import latency
from torchscan.measure.compare import compare_benchmarks
from torchscan.measure.hardware import model_flops, utilization, validate_hardware
from torchscan.measure.workload import format_summary, measure_workload
from torchscan.report.schema import metric_result
from torchscan.report.validate import validate_benchmark_comparison, validate_benchmark_report

PEAK = "peak_flops_per_second"
BANDWIDTH = "memory_bandwidth_bytes_per_second"


def _never_called() -> None:
    raise AssertionError("the workload must not run")


BAD_HARDWARE = [
    ([("name", "x")], TypeError, "hardware must be a mapping"),
    ("gpu", TypeError, "hardware must be a mapping"),
    ({"name": "x"}, ValueError, PEAK),
    ({PEAK: 1.0}, ValueError, "'name'"),
    ({"name": "x", PEAK: 1.0, "bogus": 1}, ValueError, "bogus"),
    ({"name": "x", PEAK: 1.0, 7: 1}, ValueError, "7"),
    ({"name": "x", PEAK: 0}, ValueError, PEAK),
    ({"name": "x", PEAK: -1.0}, ValueError, PEAK),
    ({"name": "x", PEAK: math.nan}, ValueError, PEAK),
    ({"name": "x", PEAK: math.inf}, ValueError, PEAK),
    ({"name": "x", PEAK: 10**400}, ValueError, PEAK),  # beyond the float range, no OverflowError
    ({"name": "x", PEAK: True}, TypeError, PEAK),
    ({"name": "x", PEAK: "1e12"}, TypeError, PEAK),
    ({"name": 3, PEAK: 1.0}, TypeError, "name"),
    ({"name": "x", PEAK: 1.0, BANDWIDTH: 0.0}, ValueError, BANDWIDTH),
    ({"name": "x", PEAK: 1.0, BANDWIDTH: False}, TypeError, BANDWIDTH),
    ({"name": "x", PEAK: 1.0, BANDWIDTH: -math.inf}, ValueError, BANDWIDTH),
]


@pytest.mark.parametrize(("hardware", "error", "word"), BAD_HARDWARE)
def test_bad_hardware_refused_before_the_workload_runs(hardware, error, word) -> None:
    with pytest.raises(error, match=word):
        measure_workload(_never_called, device="cpu", hardware=hardware)


def test_validate_hardware_copies() -> None:
    stated = {"name": "t", PEAK: 2.0, BANDWIDTH: 3}
    copied = validate_hardware(stated)
    assert copied == stated and copied is not stated
    assert validate_hardware(None) is None


def _matmul_report(monkeypatch, blocks, number, hardware, *, clock=(1.0, 1.25)):
    monkeypatch.setattr(latency, "load_timer", lambda: fake_timer(number, blocks))
    ticks(monkeypatch, *clock)
    a, b = torch.ones(2, 3), torch.ones(3, 4)
    return measure_workload(
        lambda: a @ b, device="cpu", inputs=(a, b), metrics=("flops", "latency"), warmup=0, hardware=hardware
    )


def test_utilization_is_flops_over_latency_over_peak(monkeypatch) -> None:
    # blocks of 4 calls: per-call 0.125, 0.25, 0.375 -> median latency 0.25 s
    hardware = {"name": "test", PEAK: 1e9}
    report = _matmul_report(monkeypatch, [0.5, 1.0, 1.5], 4, hardware)
    totals = report["totals"]
    flops = totals["operator_flops"]["value"]
    assert flops == 2 * 2 * 3 * 4  # 2·M·K·N for one matmul = 48
    assert totals["latency"]["value"] == 0.25
    assert report["context"]["hardware"] == hardware
    assert report["context"]["hardware"] is not hardware
    achieved = totals["achieved_flops_per_second"]
    assert achieved == metric_result(
        "complete",
        48 / 0.25,
        unit="FLOPs/s",
        scope="warmed_block_average",
        method="operator_flops_over_block_average_latency",
    )
    for name in ("hardware_flops_utilization", "model_flops_utilization"):
        # no backward, optimizer or checkpoint: model FLOPs are the operator FLOPs
        assert totals[name]["status"] == "complete"
        assert totals[name]["value"] == 48 / 0.25 / 1e9
        assert totals[name]["unit"] == "ratio"
    assert not [d for d in report["diagnostics"] if d["code"] == "utilization_above_peak"]
    validate_benchmark_report(json.loads(json.dumps(report)))
    text = format_summary(report)
    assert "MFU (stated peak)" in text and "caller's stated peak" in text


def test_above_peak_keeps_value_and_warns(monkeypatch) -> None:
    report = _matmul_report(monkeypatch, [1.0], 1, {"name": "tiny", PEAK: 1.0}, clock=(1.0, 2.0))
    hfu = report["totals"]["hardware_flops_utilization"]
    assert hfu["value"] == 48.0  # 48 FLOPs / 1 s / 1 FLOP/s: kept, never clipped to 1
    codes = sorted(
        (entry["metric"], entry["code"])
        for entry in report["diagnostics"]
        if entry["code"] == "utilization_above_peak"
    )
    assert codes == [
        ("hardware_flops_utilization", "utilization_above_peak"),
        ("model_flops_utilization", "utilization_above_peak"),
    ]


def test_without_latency_utilization_is_unavailable() -> None:
    a, b = torch.ones(2, 3), torch.ones(3, 4)
    report = measure_workload(
        lambda: a @ b, device="cpu", metrics=("flops",), hardware={"name": "t", PEAK: 1e9}
    )
    for name in ("achieved_flops_per_second", "hardware_flops_utilization", "model_flops_utilization"):
        assert report["totals"][name]["status"] == "unavailable"
    validate_benchmark_report(json.loads(json.dumps(report)))


def test_without_hardware_keys_absent() -> None:
    report = measure_workload(lambda: None, device="cpu", metrics=("flops",))
    for name in ("achieved_flops_per_second", "model_flops_utilization", "hardware_flops_utilization"):
        assert name not in report["totals"]
    assert "hardware" not in report["context"]


def _flops(status, value):
    return metric_result(status, value, unit="FLOPs", scope="workload", method="m")


def _phases(forward, backward, optimizer, recompute):
    return {
        "by_phase": {
            name: metric_result(status, value, unit="FLOPs", scope="workload_phase", method="m")
            for name, (status, value) in zip(
                ("forward", "backward", "optimizer", "recompute"),
                (forward, backward, optimizer, recompute),
                strict=True,
            )
        }
    }


def test_model_flops_leave_out_recompute() -> None:
    # 10 + 20 + 5 model FLOPs; the 7 recomputed forward FLOPs are hardware work, not model work
    report = _phases(("complete", 10), ("complete", 20), ("complete", 5), ("complete", 7))
    assert model_flops(_flops("complete", 42), report)["value"] == 35
    # a partial recompute does not matter: model FLOPs are the other three phases
    report = _phases(("complete", 10), ("complete", 20), ("complete", 5), ("partial", 7))
    assert model_flops(_flops("partial", 42), report) == _flops("complete", 35)
    report = _phases(("complete", 10), ("partial", 20), ("complete", 5), ("complete", 0))
    assert model_flops(_flops("partial", 35), report) == _flops("partial", 35)
    assert model_flops(_flops("complete", 1), {}) is None


def test_partial_flops_give_a_lower_bound_utilization() -> None:
    seconds = metric_result("complete", 0.5, unit="seconds", scope="s", method="m")
    result, notes = utilization(_flops("partial", 100), seconds, 1e3, "hardware_flops_utilization")
    assert result["status"] == "partial" and result["known_value"] == 100 / 0.5 / 1e3
    assert notes == []
    missing = metric_result("unavailable", unit="seconds", scope="s", method="m")
    assert utilization(_flops("complete", 100), missing, 1e3, "x")[0]["status"] == "unavailable"


def test_saved_hardware_checked_by_the_validator(monkeypatch) -> None:
    report = json.loads(json.dumps(_matmul_report(monkeypatch, [0.5, 1.0, 1.5], 4, {"name": "t", PEAK: 1e9})))
    bad = copy.deepcopy(report)
    bad["context"]["hardware"][PEAK] = -1
    with pytest.raises(ValueError, match=r"report\.context\.hardware: .*peak_flops_per_second"):
        validate_benchmark_report(bad)
    orphan = copy.deepcopy(report)
    del orphan["context"]["hardware"]
    with pytest.raises(ValueError, match=r"report\.totals\.achieved_flops_per_second: .*context\.hardware"):
        validate_benchmark_report(orphan)
    wrong = copy.deepcopy(report)
    wrong["totals"]["model_flops_utilization"]["unit"] = "%"
    with pytest.raises(ValueError, match=r"report\.totals\.model_flops_utilization\.unit"):
        validate_benchmark_report(wrong)


def test_compare_benchmarks_carries_the_figures(monkeypatch) -> None:
    hardware = {"name": "t", PEAK: 1e9}
    before = json.loads(json.dumps(_matmul_report(monkeypatch, [0.5, 1.0, 1.5], 4, hardware)))
    after = json.loads(json.dumps(_matmul_report(monkeypatch, [0.25, 0.5, 0.5, 0.5, 0.75], 4, hardware)))
    comparison = compare_benchmarks(before, after, check=lambda: None)
    hfu = comparison["totals"]["hardware_flops_utilization"]
    # 48 FLOPs over 0.25 s, then over 0.125 s (median of five 4-call blocks), against 1e9 FLOP/s
    assert hfu["delta"] == pytest.approx(48 / 0.125 / 1e9 - 48 / 0.25 / 1e9)
    validate_benchmark_comparison(json.loads(json.dumps(comparison)))


ERRORS = {"backward": KeyError("inside backward"), "optimizer": KeyError("inside the optimizer step")}


class _BackwardFails(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise ERRORS["backward"]


class _StepFails(torch.optim.SGD):
    def step(self, closure=None):
        raise ERRORS["optimizer"]


def _global_state() -> tuple[object, ...]:
    """Sizes of every global module and optimizer-step hook table, and the active dispatch mode."""
    from torch.nn.modules import module as module_globals
    from torch.optim import optimizer as optimizer_globals
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    tables = [getattr(module_globals, name) for name in dir(module_globals) if name.startswith("_global_")]
    tables += [optimizer_globals._global_optimizer_pre_hooks, optimizer_globals._global_optimizer_post_hooks]
    return (*(len(table) for table in tables if isinstance(table, dict)), _get_current_dispatch_mode())


@pytest.mark.parametrize("where", sorted(ERRORS))
def test_an_error_in_backward_or_step_leaves_no_hook_and_propagates(where: str) -> None:
    weight = torch.ones(3, requires_grad=True)
    optimizer = _StepFails([weight], lr=0.1)

    def step() -> None:
        loss = (_BackwardFails.apply(weight) if where == "backward" else weight * 2).sum()
        loss.backward()
        optimizer.step()

    before = _global_state()
    with pytest.raises(KeyError) as caught:
        measure_workload(step, device="cpu", metrics=("flops",), hardware={"name": "t", PEAK: 1e9})
    assert caught.value is ERRORS[where]  # the workload's own exception object, re-raised
    assert _global_state() == before
