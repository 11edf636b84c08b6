"""measure_latency (workloads.md 8.4).

Statistics and labels are checked through the timer seam (``load_timer``) with synthetic blocks. The
CUDA/MPS synchronisation tests use fake device functions: BOOKKEEPING of call order only, never
accelerator evidence.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from typing import ClassVar

import pytest
import torch

from torchscan.measure import latency
from torchscan.measure.latency import measure_latency

CONTEXT_KEYS = {
    "torchscan_version",
    "torch_version",
    "python_version",
    "platform",
    "machine",
    "processor",
    "device",
    "device_name",
    "num_threads",
    "num_interop_threads",
    "cuda_version",
    "inputs_source",
    "work_units",
    "work_unit",
    "warmup",
    "min_run_time",
    "min_repeats",
}


class FakeMeasurement:
    def __init__(self, number_per_run: int, raw_times: list[float]) -> None:
        self.number_per_run = number_per_run
        self.raw_times = raw_times


def fake_timer(number: int, autorange_blocks: list[float], timeit_block: float = 1.0, on_autorange=None):
    """A stand-in for ``torch.utils.benchmark.Timer`` returning fixed blocks without reading a clock."""

    class FakeTimer:
        timeit_calls: ClassVar[list[int]] = []
        instances: ClassVar[list[FakeTimer]] = []

        def __init__(self, *, stmt, globals, timer, num_threads) -> None:
            self.stmt, self.globals, self.timer, self.num_threads = stmt, globals, timer, num_threads
            FakeTimer.instances.append(self)

        def blocked_autorange(self, min_run_time):
            if on_autorange is not None:
                on_autorange(self)
            return FakeMeasurement(number, list(autorange_blocks))

        def timeit(self, count):
            FakeTimer.timeit_calls.append(count)
            return FakeMeasurement(count, [timeit_block])

    return FakeTimer


def ticks(monkeypatch, *values: float) -> None:
    """Make ``time.perf_counter`` return ``values`` in order, then repeat the last one."""
    remaining = list(values)

    def perf_counter() -> float:
        return remaining.pop(0) if len(remaining) > 1 else remaining[0]

    monkeypatch.setattr(time, "perf_counter", perf_counter)


def _never_called() -> None:
    raise AssertionError("the workload must not run")


def test_real_cpu_timing(monkeypatch) -> None:
    inputs = torch.ones(8, 4)
    calls: list[int] = []
    syncs: list[str] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: syncs.append("cuda"))
    monkeypatch.setattr(torch.mps, "synchronize", lambda *a: syncs.append("mps"))

    def workload() -> torch.Tensor:
        time.sleep(0.05 if not calls else 0.002)
        calls.append(1)
        return inputs + 1

    threads = torch.get_num_threads()
    report = measure_latency(
        workload, device="cpu", inputs=inputs, work_units=8, work_unit="images", min_run_time=0.03
    )
    assert list(report) == ["schema_version", "context", "inputs", "totals", "measurement"]
    totals = report["totals"]
    assert {name: (r["status"], r["unit"], r["scope"], r["method"]) for name, r in totals.items()} == {
        "first_call_latency": ("complete", "seconds", "first_call", "synchronized_perf_counter"),
        "latency": ("complete", "seconds", "warmed_block_average", "torch.utils.benchmark.Timer"),
        "latency_iqr": ("complete", "seconds", "warmed_block_average", "torch.utils.benchmark.Timer"),
        "throughput": ("complete", "images/s", "warmed_blocks", "torch.utils.benchmark.Timer"),
    }
    measurement = report["measurement"]
    blocks = measurement["raw_times_seconds"]
    assert totals["first_call_latency"]["value"] >= 0.05
    assert totals["latency"]["value"] >= 0.002
    assert totals["throughput"]["value"] == pytest.approx(8 * measurement["measured_calls"] / sum(blocks))
    assert len(blocks) >= 5
    assert measurement["measured_calls"] == measurement["number_per_run"] * len(blocks)
    assert len(calls) > 1 + 5 + measurement["measured_calls"]
    assert report["inputs"] == {
        "kind": "tensor",
        "shape": [8, 4],
        "dtype": "torch.float32",
        "device": "cpu",
        "requires_grad": False,
    }
    context = report["context"]
    assert set(context) == CONTEXT_KEYS
    assert context["inputs_source"] == "caller_supplied"
    assert context["device"] == "cpu"
    assert context["torch_version"] == torch.__version__
    assert context["num_threads"] == threads == torch.get_num_threads()
    assert syncs == []
    assert json.loads(json.dumps(report, allow_nan=False)) == report


def test_statistics_from_synthetic_blocks(monkeypatch) -> None:
    monkeypatch.setattr(latency, "load_timer", lambda: fake_timer(4, [0.5, 1.0, 1.5, 3.0, 2.0]))
    ticks(monkeypatch, 1.0, 1.25)
    report = measure_latency(lambda: None, device="cpu", warmup=0, work_units=2)
    totals, measurement = report["totals"], report["measurement"]
    # per-call averages 0.125, 0.25, 0.375, 0.75, 0.5: median 0.375, IQR 0.5 - 0.25
    assert totals["latency"]["value"] == 0.375
    assert totals["latency_iqr"]["value"] == 0.25
    assert measurement["measured_calls"] == 20
    assert totals["throughput"]["value"] == 5.0  # 2 * 20 / 8.0
    assert totals["first_call_latency"]["value"] == 0.25
    assert measurement["raw_times_seconds"] == [0.5, 1.0, 1.5, 3.0, 2.0]
    assert totals["throughput"]["unit"] == "calls/s"


def test_top_up_blocks(monkeypatch) -> None:
    timer_class = fake_timer(8, [0.5], timeit_block=0.5)
    monkeypatch.setattr(latency, "load_timer", lambda: timer_class)
    report = measure_latency(lambda: None, device="cpu", min_repeats=4, warmup=0)
    assert timer_class.timeit_calls == [8, 8, 8]
    assert report["measurement"]["measured_calls"] == 32
    assert report["inputs"] == {"kind": "none"}
    assert report["context"]["inputs_source"] == "not_provided"
    assert timer_class.instances[0].num_threads == torch.get_num_threads()
    assert timer_class.instances[0].stmt == "workload()"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("work_units", 0),
        ("work_units", -1),
        ("work_units", math.nan),
        ("work_units", math.inf),
        ("work_units", True),
        ("work_units", 10**1000),
        ("work_unit", ""),
        ("work_unit", "  "),
        ("warmup", -1),
        ("warmup", 1.5),
        ("warmup", True),
        ("min_run_time", 0),
        ("min_run_time", math.inf),
        ("min_repeats", 1),
        ("min_repeats", 2.0),
    ],
)
def test_invalid_settings(name, value) -> None:
    with pytest.raises(ValueError, match=name):
        measure_latency(_never_called, device="cpu", **{name: value})


def test_non_callable_workload() -> None:
    with pytest.raises(TypeError, match="workload must be callable"):
        measure_latency(None, device="cpu")  # type: ignore[arg-type]


def test_devices_rejected_before_any_call(monkeypatch) -> None:
    for device in ("meta", "xpu"):
        with pytest.raises(NotImplementedError, match=device):
            measure_latency(_never_called, device=device)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    for device in ("cuda:0", "mps:0", "mps:1"):
        with pytest.raises(RuntimeError):
            measure_latency(_never_called, device=device)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(RuntimeError, match="cuda:1"):
        measure_latency(_never_called, device="cuda:1")


def _sync_order_timer(log: list):
    def on_autorange(timer) -> None:
        timer.timer()
        timer.globals["workload"]()
        timer.timer()

    return fake_timer(1, [0.1, 0.2, 0.3], on_autorange=on_autorange)


def test_cuda_synchronisation_order_bookkeeping(monkeypatch) -> None:
    log: list = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "test GPU")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: log.append(("sync", str(device))))
    monkeypatch.setattr(latency, "load_timer", lambda: _sync_order_timer(log))
    report = measure_latency(lambda: log.append("work"), device="cuda", warmup=1, min_repeats=3)
    sync = ("sync", "cuda:1")
    assert log == [sync, "work", sync, "work", sync, "work", sync]
    assert report["context"]["device"] == "cuda:1"
    assert report["context"]["device_name"] == "test GPU"


def test_mps_synchronisation_order_bookkeeping(monkeypatch) -> None:
    log: list = []
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.mps, "synchronize", lambda: log.append(("sync", "mps")))
    monkeypatch.setattr(latency, "load_timer", lambda: _sync_order_timer(log))
    report = measure_latency(lambda: log.append("work"), device="mps:0", warmup=1, min_repeats=3)
    sync = ("sync", "mps")
    assert log == [sync, "work", sync, "work", sync, "work", sync]
    assert report["context"]["device"] == "mps"
    assert report["context"]["device_name"] == report["context"]["processor"]


def test_zero_durations_and_overflowing_throughput(monkeypatch) -> None:
    monkeypatch.setattr(latency, "load_timer", lambda: fake_timer(2, [0.5, 0.5]))
    ticks(monkeypatch, 3.0)
    with pytest.raises(RuntimeError, match="durations"):
        measure_latency(lambda: None, device="cpu", min_repeats=2)
    monkeypatch.undo()
    monkeypatch.setattr(latency, "load_timer", lambda: fake_timer(2, [0.5, 0.5]))
    with pytest.raises(RuntimeError, match="Throughput"):
        measure_latency(lambda: None, device="cpu", min_repeats=2, work_units=1e308)


def test_workload_error_propagates_and_threads_are_unchanged() -> None:
    threads = torch.get_num_threads()
    err = ValueError("workload failed")
    calls: list[int] = []

    def workload() -> None:
        calls.append(1)
        if len(calls) > 3:
            raise err

    with pytest.raises(ValueError) as caught:
        measure_latency(workload, device="cpu", min_run_time=0.001)
    assert caught.value is err
    assert torch.get_num_threads() == threads


def test_broken_benchmark_utilities(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch.utils.benchmark", None)
    with pytest.raises(ImportError, match="upgrade PyTorch") as caught:
        measure_latency(_never_called, device="cpu")
    assert caught.value.__cause__ is not None


def test_broken_benchmark_utilities_do_not_break_analysis() -> None:
    script = (
        "import sys\n"
        "sys.modules['torch.utils.benchmark'] = None\n"
        "import torchscan\n"
        "from torch import nn\n"
        "torchscan.crawl_module(nn.Linear(4, 2), (4,))\n"
        "print('analysis ok')\n"
    )
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert "analysis ok" in completed.stdout


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a real CUDA device")
def test_real_cuda_latency() -> None:
    x = torch.randn(512, 512, device="cuda")
    report = measure_latency(lambda: x @ x, device="cuda", inputs=x, min_run_time=0.05)
    assert report["context"]["device"].startswith("cuda:")
    assert report["totals"]["latency"]["value"] > 0


# --- issue #11: wrong types are TypeErrors (still ValueErrors for 5.1 callers), values ValueErrors --


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("work_units", True),
        ("work_units", "8"),
        ("min_run_time", "1"),
        ("min_run_time", None),
        ("warmup", 1.5),
        ("warmup", True),
        ("min_repeats", True),
        ("min_repeats", 2.0),
        ("work_unit", 3),
    ],
)
def test_wrong_setting_types_are_type_errors(name, value) -> None:
    with pytest.raises(TypeError, match=name) as caught:
        measure_latency(_never_called, device="cpu", **{name: value})
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("name", "value"),
    [("warmup", -1), ("min_repeats", 1), ("work_units", 0), ("min_run_time", math.nan), ("work_unit", " ")],
)
def test_bad_setting_values_are_plain_value_errors(name, value) -> None:
    with pytest.raises(ValueError, match=name) as caught:
        measure_latency(_never_called, device="cpu", **{name: value})
    assert not isinstance(caught.value, TypeError)


@pytest.mark.parametrize("device", ["bogus", "cuda:0"])
def test_bad_device_value_is_a_value_error(device, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=device):
        measure_latency(_never_called, device=device)
