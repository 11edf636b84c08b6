"""profile_workload (workloads.md 8.3).

The CUDA tests replace ``torch.profiler.profile`` and CUDA functions with fakes: BOOKKEEPING checks
of row assembly and diagnostics only, never GPU evidence.
"""

from __future__ import annotations

import json
import types
from typing import ClassVar

import pytest
import torch

from torchscan.measure.profile import profile_workload


@pytest.fixture(scope="module")
def cpu_profile(tmp_path_factory):
    inputs = torch.ones(32, 64)
    weights = torch.ones(64, 64)
    calls: list[int] = []

    def workload() -> torch.Tensor:
        calls.append(1)
        return inputs @ weights

    trace = tmp_path_factory.mktemp("trace") / "t.json"
    report = profile_workload(workload, device="cpu", trace_path=trace)
    return report, workload, calls, trace


def test_cpu_profile(cpu_profile) -> None:
    report, _, calls, trace = cpu_profile
    assert len(calls) == 1
    assert list(report) == ["schema_version", "context", "operators", "diagnostics"]
    assert report["schema_version"] == 1
    assert report["diagnostics"] == []
    context = report["context"]
    assert context["method"] == "torch.profiler.profile"
    assert context["device"] == "cpu"
    assert context["limit"] == 20
    assert context["device_time_supported"] is False
    assert context["torch_version"] == torch.__version__
    assert context["operator_groups"] >= len(report["operators"])
    mm = [row for row in report["operators"] if row["operator"] == "aten::mm"]
    assert len(mm) == 1
    assert mm[0]["calls"] == 1
    assert mm[0]["input_shapes"] == [[32, 64], [64, 64]]
    assert all(row["device_self_seconds"] is None for row in report["operators"])
    cpu_times = [row["cpu_self_seconds"] for row in report["operators"]]
    assert cpu_times == sorted(cpu_times, reverse=True)
    json.loads(trace.read_text())
    assert json.loads(json.dumps(report, allow_nan=False)) == report
    assert str(trace) not in json.dumps(report) and "t.json" not in json.dumps(report)
    if torch.__version__.startswith("2.13."):  # observed with PyTorch 2.13 (spec 8.3.1)
        assert mm[0]["cpu_net_bytes"] == 8192
        assert any(row["operator"] == "[memory]" and row["cpu_net_bytes"] < 0 for row in report["operators"])


def test_existing_trace_path_is_never_overwritten(cpu_profile) -> None:
    _, workload, calls, trace = cpu_profile
    before = trace.read_text()
    with pytest.raises(FileExistsError, match=r"t\.json"):
        profile_workload(workload, device="cpu", trace_path=trace)
    assert len(calls) == 1
    assert trace.read_text() == before


def test_limit_truncates_after_counting_groups(cpu_profile) -> None:
    report, workload, _, _ = cpu_profile
    limited = profile_workload(workload, device="cpu", limit=1)
    assert len(limited["operators"]) <= 1
    assert limited["context"]["limit"] == 1
    assert limited["context"]["operator_groups"] == report["context"]["operator_groups"]


@pytest.mark.parametrize("limit", [0, True, 1.5, -3, "20"])
def test_invalid_limit(limit) -> None:
    with pytest.raises(ValueError, match="limit"):
        profile_workload(_never_called, device="cpu", limit=limit)


def _never_called() -> None:
    raise AssertionError("the workload must not run")


def test_invalid_workload_and_device() -> None:
    with pytest.raises(TypeError):
        profile_workload(None, device="cpu")  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="meta"):
        profile_workload(_never_called, device="meta")


# --- bookkeeping with a fake CUDA profiler (NOT hardware evidence) ---------------------------------


class _FakeProfile:
    """Stands in for ``torch.profiler.profile``; returns one fixed grouped event."""

    instances: ClassVar[list[_FakeProfile]] = []

    def __init__(self, **kwargs) -> None:
        self.kwargs = kwargs
        _FakeProfile.instances.append(self)

    def __enter__(self) -> _FakeProfile:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def key_averages(self, group_by_input_shape: bool = False):
        assert group_by_input_shape is True
        return [
            types.SimpleNamespace(
                key="aten::mm",
                count=1,
                input_shapes=[[2, 2]],
                self_cpu_time_total=40.0,
                self_device_time_total=250.0,
                self_cpu_memory_usage=16,
            )
        ]


@pytest.fixture
def fake_cuda_profiler(monkeypatch):
    log: list[str] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: log.append("sync"))
    monkeypatch.setattr(torch.profiler, "profile", _FakeProfile)
    _FakeProfile.instances.clear()
    return monkeypatch, log


def test_cuda_rows_with_device_time_bookkeeping(fake_cuda_profiler) -> None:
    monkeypatch, log = fake_cuda_profiler
    activity = torch.profiler.ProfilerActivity
    monkeypatch.setattr(torch.profiler, "supported_activities", lambda: {activity.CPU, activity.CUDA})
    report = profile_workload(lambda: log.append("work"), device="cuda")
    assert log == ["sync", "work", "sync"]
    assert _FakeProfile.instances[0].kwargs["activities"] == [activity.CPU, activity.CUDA]
    (row,) = report["operators"]
    assert row["cpu_self_seconds"] == pytest.approx(4e-05)
    assert row["device_self_seconds"] == pytest.approx(2.5e-04)
    assert row["calls"] == 1 and row["input_shapes"] == [[2, 2]] and row["cpu_net_bytes"] == 16
    assert report["context"]["device_time_supported"] is True
    assert report["context"]["device"] == "cuda:0"
    assert report["diagnostics"] == []


def test_cuda_without_cuda_activity_bookkeeping(fake_cuda_profiler) -> None:
    monkeypatch, log = fake_cuda_profiler
    activity = torch.profiler.ProfilerActivity
    monkeypatch.setattr(torch.profiler, "supported_activities", lambda: {activity.CPU})
    report = profile_workload(lambda: log.append("work"), device="cuda:0")
    (row,) = report["operators"]
    assert row["device_self_seconds"] is None
    assert report["context"]["device_time_supported"] is False
    assert [(d["code"], d["severity"], d["metric"]) for d in report["diagnostics"]] == [
        ("cuda_gpu_trace_unavailable", "warning", "device_time")
    ]


def test_mps_diagnostic_bookkeeping(monkeypatch) -> None:
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.mps, "synchronize", lambda: None)
    monkeypatch.setattr(torch.profiler, "profile", _FakeProfile)
    report = profile_workload(lambda: None, device="mps")
    assert report["context"]["device"] == "mps"
    assert report["operators"][0]["device_self_seconds"] is None
    assert [d["code"] for d in report["diagnostics"]] == ["mps_gpu_trace_unavailable"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a real CUDA device")
def test_real_cuda_profile_has_device_times() -> None:
    x = torch.randn(256, 256, device="cuda")
    report = profile_workload(lambda: x @ x, device="cuda")
    if report["context"]["device_time_supported"]:
        assert any((row["device_self_seconds"] or 0) > 0 for row in report["operators"])


# --- issue #11: arguments refused by type (TypeError) or value (ValueError) before the call -------


@pytest.mark.parametrize("limit", [True, 1.5, "20", None])
def test_limit_of_the_wrong_type_is_a_type_error(limit) -> None:
    with pytest.raises(TypeError, match="limit"):
        profile_workload(_never_called, device="cpu", limit=limit)


@pytest.mark.parametrize("trace_path", [3, b"trace.json", ["t.json"]])
def test_trace_path_of_the_wrong_type_is_a_type_error(trace_path) -> None:
    with pytest.raises(TypeError, match="trace_path"):
        profile_workload(_never_called, device="cpu", trace_path=trace_path)


def test_trace_path_in_a_missing_folder_is_refused_before_the_call(tmp_path) -> None:
    # The old code ran the workload and silently wrote no trace.
    target = tmp_path / "missing" / "trace.json"
    with pytest.raises(ValueError, match="trace_path"):
        profile_workload(_never_called, device="cpu", trace_path=target)
    assert not target.parent.exists()


def test_trace_path_under_a_file_or_naming_a_directory_is_refused(tmp_path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    with pytest.raises(ValueError, match="trace_path"):
        profile_workload(_never_called, device="cpu", trace_path=plain / "trace.json")
    with pytest.raises(ValueError, match="trace_path"):
        profile_workload(_never_called, device="cpu", trace_path=tmp_path)
    with pytest.raises(ValueError, match="trace_path"):
        profile_workload(_never_called, device="cpu", trace_path="")


def test_trace_path_as_str_is_written(tmp_path) -> None:
    target = tmp_path / "trace.json"
    profile_workload(lambda: torch.ones(4, 4) @ torch.ones(4, 4), device="cpu", trace_path=str(target))
    assert isinstance(json.loads(target.read_text()), dict | list)


@pytest.mark.parametrize("device", ["bogus", "cuda:0"])
def test_bad_device_value_is_a_value_error(device) -> None:
    if device == "cuda:0" and torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(ValueError, match=device):
        profile_workload(_never_called, device=device)
