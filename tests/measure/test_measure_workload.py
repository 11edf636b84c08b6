"""measure_workload (workloads.md 8.6)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import pytest
import torch
from torch import nn

from torchscan.measure import latency
from torchscan.measure.compare import compare_benchmarks
from torchscan.measure.workload import measure_workload

TOTALS = [
    "first_call_latency",
    "latency",
    "latency_iqr",
    "throughput",
    "operator_flops",
    "peak_memory",
    "process_peak_rss",
]
FAST = {"min_run_time": 0.001, "min_repeats": 2, "warmup": 1}
needs_flops = pytest.mark.skipif(
    importlib.util.find_spec("torchscan.measure.flops") is None, reason="measure_flops not available yet"
)
rss_supported = sys.platform in ("linux", "darwin")


def _never_called() -> None:
    raise AssertionError("the workload must not run")


def test_nothing_requested(capsys) -> None:
    report = measure_workload(_never_called, device="cpu", metrics=(), print_summary=False)
    assert list(report["totals"]) == TOTALS
    for result in report["totals"].values():
        assert result["status"] == "unavailable" and result["method"] == "not_requested"
    assert report["totals"]["operator_flops"]["scope"] == "workload"
    assert report["totals"]["peak_memory"]["scope"] == "workload"
    assert report["measurement"] == {}
    assert report["diagnostics"] == []
    assert report["context"]["profile_status"] == "not_requested"
    assert len(report["context"]) == 18
    assert report["context"]["work_unit"] == "samples"
    assert report["inputs"] == {"kind": "none"}
    assert capsys.readouterr().out == ""


def test_only_throughput() -> None:
    report = measure_workload(lambda: None, device="cpu", metrics=("throughput",), **FAST)
    totals = report["totals"]
    assert totals["throughput"]["status"] == "complete"
    assert totals["throughput"]["unit"] == "samples/s"
    for name in ("first_call_latency", "latency", "latency_iqr"):
        assert totals[name]["status"] == "unavailable" and totals[name]["method"] == "not_requested"
    assert report["measurement"]["measured_calls"] >= 2


def test_memory_without_events_is_unavailable() -> None:
    existing = torch.ones(4)
    report = measure_workload(lambda: existing, device="cpu", metrics=("memory",))
    peak = report["totals"]["peak_memory"]
    assert peak["status"] == "unavailable"
    assert (peak["unit"], peak["scope"], peak["method"]) == (
        "bytes",
        "pytorch_tensor_bytes",
        "torch.profiler.memory_timeline",
    )
    assert [(d["code"], d["metric"]) for d in report["diagnostics"]] == [
        ("measurement_unavailable", "peak_memory")
    ]
    assert "memory" not in report


@needs_flops
def test_full_cpu_run(capsys) -> None:
    model = nn.Linear(4, 2).double()
    model.train()
    x = torch.ones(3, 4, dtype=torch.float64)
    calls: list[int] = []
    threads = torch.get_num_threads()

    def workload() -> torch.Tensor:
        calls.append(1)
        return model(x).sinc()

    with torch.no_grad():
        report = measure_workload(
            workload,
            device="cpu",
            inputs=x,
            work_units=3,
            min_run_time=0.001,
            min_repeats=2,
            profile=True,
            rss_command=[sys.executable, "-c", "b = bytearray(1024 * 1024)"],
            print_summary=True,
        )
        assert not torch.is_grad_enabled()
    assert len(calls) > 3
    assert model.training is True
    assert model.weight.dtype == torch.float64
    assert torch.get_num_threads() == threads
    assert report["inputs"]["shape"] == [3, 4] and report["inputs"]["dtype"] == "torch.float64"
    totals = report["totals"]
    assert list(totals) == TOTALS
    assert totals["throughput"]["unit"] == "samples/s"
    assert totals["operator_flops"] == report["operator_flops"]["total"]
    out = capsys.readouterr().out
    if totals["operator_flops"]["status"] == "partial":  # aten.sinc has no formula: the expected case
        assert totals["operator_flops"]["value"] is None and totals["operator_flops"]["known_value"] > 0
        assert "known ≥" in out
    assert totals["peak_memory"]["value"] == report["memory"]["peak_bytes"] > 0
    assert totals["peak_memory"]["scope"] == "pytorch_tensor_bytes"
    assert report["profile"]["operators"]
    assert report["context"]["profile_status"] == "complete"
    rss = totals["process_peak_rss"]
    if rss_supported:
        assert rss["status"] == "complete" and rss["value"] > 0
    else:
        assert rss["status"] == "unavailable"
        assert any(d["metric"] == "process_peak_rss" for d in report["diagnostics"])
    for text in ("samples/s", "MiB"):
        assert text in out
    # issue 23 item 5: durations in the readable unit (ms or µs here), never raw seconds
    assert re.search(r"latency \(block median\) +[\d.,]+ (ms|µs)\n", out)
    assert json.loads(json.dumps(report, allow_nan=False)) == report
    same = compare_benchmarks(report, json.loads(json.dumps(report)), check=lambda: True)
    assert same["totals"]["peak_memory"]["delta"] == 0


@pytest.mark.parametrize(
    "arguments",
    [
        {"metrics": "latency"},
        {"metrics": ("speed",)},
        {"metrics": b"flops"},
        {"rss_command": "python"},
        {"rss_command": []},
        {"rss_command": [sys.executable, 3]},
        {"warmup": -1},
        {"work_unit": " "},
    ],
)
def test_invalid_arguments(arguments) -> None:
    with pytest.raises(ValueError):
        measure_workload(_never_called, device="cpu", **arguments)


def test_invalid_workload_and_device() -> None:
    with pytest.raises(TypeError):
        measure_workload(None, device="cpu")  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError):
        measure_workload(_never_called, device="meta")


@pytest.mark.parametrize("error_type", [RuntimeError, NotImplementedError, ImportError])
@pytest.mark.parametrize("metrics", [("latency",), ("memory",), ("flops",)])
def test_workload_errors_propagate_unchanged(error_type, metrics) -> None:
    if metrics == ("flops",) and importlib.util.find_spec("torchscan.measure.flops") is None:
        pytest.skip("measure_flops not available yet")
    err = error_type("raised by the workload")

    def workload() -> None:
        torch.ones(4)
        raise err

    with pytest.raises(error_type) as caught:
        measure_workload(workload, device="cpu", metrics=metrics, **FAST)
    assert caught.value is err


def test_workload_errors_propagate_from_profile() -> None:
    err = NotImplementedError("raised by the workload")

    def workload() -> None:
        raise err

    with pytest.raises(NotImplementedError) as caught:
        measure_workload(workload, device="cpu", metrics=(), profile=True)
    assert caught.value is err


@pytest.mark.skipif(not rss_supported, reason="Linux/macOS only")
def test_failing_rss_command_propagates() -> None:
    with pytest.raises(subprocess.CalledProcessError):
        measure_workload(
            lambda: None, device="cpu", metrics=(), rss_command=[sys.executable, "-c", "raise SystemExit(3)"]
        )


def test_broken_timer_is_a_collector_limitation(monkeypatch) -> None:
    def broken_timer():
        raise ImportError("benchmark utilities missing; upgrade PyTorch")

    monkeypatch.setattr(latency, "load_timer", broken_timer)
    report = measure_workload(_never_called, device="cpu", metrics=("latency", "throughput"))
    for name in ("first_call_latency", "latency", "latency_iqr", "throughput"):
        assert report["totals"][name]["status"] == "unavailable"
        assert report["totals"][name]["method"] == "unavailable"
    assert [(d["code"], d["metric"]) for d in report["diagnostics"]] == [
        ("measurement_unavailable", "latency")
    ]
    assert report["measurement"] == {}
    assert len(report["context"]) == 18


def test_unsupported_rss_platform_is_a_collector_limitation(monkeypatch) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    report = measure_workload(
        lambda: None, device="cpu", metrics=(), rss_command=[sys.executable, "-c", "pass"]
    )
    rss = report["totals"]["process_peak_rss"]
    assert (rss["status"], rss["method"], rss["scope"]) == (
        "unavailable",
        "unavailable",
        "child_process_lifetime",
    )
    assert [d["metric"] for d in report["diagnostics"]] == ["process_peak_rss"]


def test_reports_compare_with_compare_benchmarks() -> None:
    x = torch.ones(16, 16)
    before = measure_workload(lambda: x @ x, device="cpu", inputs=x, metrics=("latency", "memory"), **FAST)
    existing = x @ x
    after = measure_workload(lambda: existing, device="cpu", inputs=x, metrics=("latency", "memory"), **FAST)
    assert before["totals"]["peak_memory"]["status"] == "complete"
    assert after["totals"]["peak_memory"]["status"] == "unavailable"
    result = compare_benchmarks(before, after, check=lambda: None)
    assert result["totals"]["peak_memory"]["delta"] is None
    assert result["totals"]["latency"]["status"] == "complete"


# --- issue #11: booleans are checked as booleans, wrong types are TypeErrors ------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        {"profile": "yes"},
        {"profile": 1},
        {"profile": None},
        {"print_summary": 1},
        {"print_summary": "no"},
        {"metrics": "flops"},
        {"metrics": ("flops", 3)},
        {"metrics": 3},
        {"rss_command": "python"},
        {"rss_command": [sys.executable, 3]},
        {"warmup": True},
        {"work_units": "1"},
    ],
)
def test_wrong_argument_types_are_type_errors(arguments) -> None:
    (name,) = arguments
    with pytest.raises(TypeError, match=name):
        measure_workload(_never_called, device="cpu", **arguments)


@pytest.mark.parametrize("device", ["bogus", "cuda:0"])
def test_bad_device_value_is_a_value_error(device, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=device):
        measure_workload(_never_called, device=device, metrics=())
