"""measure_peak_memory (workloads.md 8.1).

The CUDA and MPS tests below replace public PyTorch attributes with fakes: they are BOOKKEEPING
checks of call order and result assembly only, never accelerator evidence. Real-CUDA tests skip
cleanly without hardware.
"""

from __future__ import annotations

import json
import tempfile
import types

import pytest
import torch
from torch import nn

from torchscan.process import measure_peak_memory

CPU_KEYS = {"device", "metric", "baseline_bytes", "peak_bytes", "delta_bytes"}


def _check_cpu_result(result: dict) -> None:
    assert set(result) == CPU_KEYS
    assert result["device"] == "cpu"
    assert result["metric"] == "pytorch_tensor_bytes"
    for key in ("baseline_bytes", "peak_bytes", "delta_bytes"):
        assert type(result[key]) is int
    assert result["peak_bytes"] >= result["baseline_bytes"]
    assert result["delta_bytes"] == result["peak_bytes"] - result["baseline_bytes"]
    assert json.loads(json.dumps(result, allow_nan=False)) == result


def test_cpu_inference_mlp() -> None:
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32))
    x = torch.randn(16, 64)
    calls = []

    def workload() -> torch.Tensor:
        calls.append(1)
        with torch.inference_mode():
            return model(x)

    result = measure_peak_memory(workload, device=torch.device("cpu:0"))
    _check_cpu_result(result)
    assert result["delta_bytes"] > 0
    assert len(calls) == 1


def test_cpu_baseline_counts_resident_tensors() -> None:
    # Parameters 64*128*4 = 32,768 + bias 512 bytes, input 16*64*4 = 4,096; output 16*128*4 = 8,192.
    model = nn.Linear(64, 128)
    x = torch.randn(16, 64)

    def workload() -> torch.Tensor:
        with torch.inference_mode():
            return model(x)

    result = measure_peak_memory(workload, device="cpu")
    _check_cpu_result(result)
    assert result["baseline_bytes"] >= 4_096
    assert result["delta_bytes"] >= 8_192
    if torch.__version__.startswith("2.13."):  # figures observed with PyTorch 2.13 CPU (spec 8.1.2)
        assert (result["baseline_bytes"], result["peak_bytes"], result["delta_bytes"]) == (
            37_376,
            45_568,
            8_192,
        )


MIB4 = 4 * 2**20  # torch.ones(2**20) is 2**20 float32 values * 4 bytes = 4,194,304 bytes


def test_cpu_tensor_created_by_the_workload_is_not_baseline() -> None:
    # Issue #11 (a): the old code reported baseline 4,194,304, peak 4,194,316, delta 12.
    def workload() -> torch.Tensor:
        t = torch.ones(2**20)
        return t.sum()

    result = measure_peak_memory(workload, device="cpu")
    _check_cpu_result(result)
    assert result["baseline_bytes"] == 0
    assert result["delta_bytes"] >= MIB4


def test_cpu_three_workload_tensors_peak_over_zero_baseline() -> None:
    # Issue #11 (b): t, u = t * 2 and u + t are three 4 MiB tensors alive together at the return:
    # 3 * 4,194,304 = 12,582,912 bytes. The old code said baseline 4 MiB, delta 8 MiB.
    def workload() -> torch.Tensor:
        t = torch.ones(2**20)
        u = t * 2
        return u + t

    result = measure_peak_memory(workload, device="cpu")
    _check_cpu_result(result)
    assert result["baseline_bytes"] == 0
    assert result["peak_bytes"] == 3 * MIB4
    assert result["delta_bytes"] == 3 * MIB4


def test_cpu_pre_existing_tensor_stays_baseline() -> None:
    # Issue #11 (c): a 4 MiB tensor allocated before the call and alive across it is baseline;
    # the workload's own 4 MiB product is not.
    resident = torch.ones(2**20)

    def workload() -> torch.Tensor:
        return resident * 2

    result = measure_peak_memory(workload, device="cpu")
    _check_cpu_result(result)
    assert result["baseline_bytes"] == MIB4
    assert result["delta_bytes"] >= MIB4
    assert resident.shape == (2**20,)  # alive across the call


def test_cpu_training_step() -> None:
    model = nn.Linear(8, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, target = torch.randn(4, 8), torch.randn(4, 4)

    def step() -> None:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), target)
        loss.backward()
        optimizer.step()

    result = measure_peak_memory(step, device="cpu")
    _check_cpu_result(result)
    assert result["delta_bytes"] > 0


@pytest.mark.parametrize("kind", ["none", "existing_tensor"])
def test_cpu_without_memory_events_raises(kind: str) -> None:
    existing = torch.ones(4)
    workload = (lambda: None) if kind == "none" else (lambda: existing)
    with pytest.raises(RuntimeError) as caught:
        measure_peak_memory(workload, device="cpu")
    assert "no memory timeline points for 'cpu'" in str(caught.value)
    assert torch.__version__ in str(caught.value)


def test_cpu_workload_error_propagates_and_timeline_file_is_removed(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    err = RuntimeError("boom")

    def workload() -> None:
        torch.ones(8)  # some memory activity before failing
        raise err

    with pytest.raises(RuntimeError) as caught:
        measure_peak_memory(workload, device="cpu")
    assert caught.value is err
    assert list(tmp_path.iterdir()) == []


def test_cpu_timeline_file_is_removed_after_success(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    measure_peak_memory(lambda: torch.ones(16), device="cpu")
    assert list(tmp_path.iterdir()) == []


def test_non_callable_workload() -> None:
    with pytest.raises(TypeError, match="callable"):
        measure_peak_memory(None, device="cpu")  # type: ignore[arg-type]


# --- bookkeeping with fake accelerators (NOT hardware evidence) -----------------------------------


@pytest.fixture
def fake_cuda(monkeypatch):
    """Two fake CUDA devices whose allocator functions log ``(name, device)``. Bookkeeping only."""
    log: list[tuple[str, object]] = []
    counters = {"current_device": 0}

    def current_device() -> int:
        counters["current_device"] += 1
        return 1

    def recorder(name, value=None):
        def function(device=None):
            log.append((name, device))
            return value

        return function

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", current_device)
    monkeypatch.setattr(torch.cuda, "synchronize", recorder("synchronize"))
    monkeypatch.setattr(torch.cuda, "memory_reserved", recorder("memory_reserved", 1000))
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", recorder("reset_peak_memory_stats"))
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", recorder("max_memory_reserved", 1600))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", recorder("max_memory_allocated", 1200))
    monkeypatch.setattr(torch.cuda, "empty_cache", recorder("empty_cache"))
    return log, counters


ORDER = [
    "synchronize",
    "memory_reserved",
    "reset_peak_memory_stats",
    "workload",
    "synchronize",
    "max_memory_reserved",
    "max_memory_allocated",
]


def test_cuda_call_order_bookkeeping(fake_cuda) -> None:
    log, counters = fake_cuda
    result = measure_peak_memory(lambda: log.append(("workload", None)), device="cuda")
    assert result == {
        "device": "cuda:1",
        "metric": "pytorch_reserved_bytes",
        "baseline_bytes": 1000,
        "peak_bytes": 1600,
        "delta_bytes": 600,
        "allocated_peak_bytes": 1200,
    }
    assert [name for name, _ in log] == ORDER
    assert all(device == torch.device("cuda:1") for name, device in log if name != "workload")
    assert counters["current_device"] == 1
    assert "empty_cache" not in [name for name, _ in log]


@pytest.fixture
def fake_mps(monkeypatch):
    """A fake MPS backend and ``torch.accelerator.memory`` namespace. Bookkeeping only."""
    log: list[tuple[str, object]] = []

    def recorder(name, value=None):
        def function(device=None):
            log.append((name, device))
            return value

        return function

    memory = types.SimpleNamespace(
        memory_reserved=recorder("memory_reserved", 300),
        reset_peak_memory_stats=recorder("reset_peak_memory_stats"),
        max_memory_reserved=recorder("max_memory_reserved", 420),
        max_memory_allocated=recorder("max_memory_allocated", 350),
    )
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.mps, "synchronize", lambda: log.append(("synchronize", None)))
    monkeypatch.setattr(torch, "accelerator", types.SimpleNamespace(memory=memory), raising=False)
    return log, memory


def test_mps_call_order_bookkeeping(fake_mps) -> None:
    log, _ = fake_mps
    result = measure_peak_memory(lambda: log.append(("workload", None)), device="mps:0")
    assert result == {
        "device": "mps",
        "metric": "pytorch_reserved_bytes",
        "baseline_bytes": 300,
        "peak_bytes": 420,
        "delta_bytes": 120,
        "allocated_peak_bytes": 350,
    }
    assert [name for name, _ in log] == ORDER
    for name, device in log:
        if name not in ("workload", "synchronize"):
            assert device == torch.device("mps")


def _never_called() -> None:
    raise AssertionError("the workload must not run")


def test_errors_before_the_workload_runs(monkeypatch) -> None:
    with pytest.raises(NotImplementedError, match="not implemented for 'meta'"):
        measure_peak_memory(_never_called, device="meta")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="CUDA device 'cuda:0' is unavailable"):
        measure_peak_memory(_never_called, device="cuda:0")
    with pytest.raises(RuntimeError, match="MPS device 'mps:1' is unavailable"):
        measure_peak_memory(_never_called, device="mps:1")
    with pytest.raises(RuntimeError, match="MPS device 'mps' is unavailable"):
        measure_peak_memory(_never_called, device="mps")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    with pytest.raises(RuntimeError, match="cuda:2"):
        measure_peak_memory(_never_called, device="cuda:2")


def test_missing_cuda_allocator_api_bookkeeping(fake_cuda, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", None)
    with pytest.raises(NotImplementedError) as caught:
        measure_peak_memory(_never_called, device="cuda:0")
    text = str(caught.value)
    assert "torch.cuda.max_memory_reserved" in text and "cuda:0" in text and torch.__version__ in text


def test_unimplemented_mps_allocator_bookkeeping(fake_mps) -> None:
    _, memory = fake_mps

    def unimplemented(device=None):
        raise RuntimeError("MPS allocator does not implement this")

    memory.memory_reserved = unimplemented
    with pytest.raises(NotImplementedError, match=r"torch\.accelerator\.memory\.memory_reserved") as caught:
        measure_peak_memory(_never_called, device="mps")
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_missing_mps_api_bookkeeping(fake_mps, monkeypatch) -> None:
    _, memory = fake_mps
    del memory.max_memory_allocated
    monkeypatch.setattr(torch.mps, "synchronize", None)
    with pytest.raises(NotImplementedError) as caught:
        measure_peak_memory(_never_called, device="mps")
    text = str(caught.value)
    assert "torch.accelerator.memory.max_memory_allocated" in text and "torch.mps.synchronize" in text
    assert "'mps'" in text and torch.__version__ in text


# --- real hardware --------------------------------------------------------------------------------


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a real CUDA device")
def test_real_cuda_peak_memory() -> None:
    model = nn.Linear(256, 256).cuda()
    x = torch.randn(64, 256, device="cuda")
    result = measure_peak_memory(lambda: model(x), device="cuda")
    assert result["metric"] == "pytorch_reserved_bytes"
    assert result["peak_bytes"] >= result["baseline_bytes"]
    assert result["allocated_peak_bytes"] >= 64 * 256 * 4


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a real CUDA device")
def test_real_cuda_tensor_created_by_the_workload_is_not_baseline() -> None:
    # The test (never TorchScan) empties the cache so the workload's 4 MiB must be newly reserved.
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_reserved()

    def workload() -> torch.Tensor:
        t = torch.ones(2**20, device="cuda")
        return t.sum()

    result = measure_peak_memory(workload, device="cuda")
    assert result["baseline_bytes"] == before
    assert result["delta_bytes"] >= MIB4
    assert result["allocated_peak_bytes"] >= MIB4


@pytest.mark.parametrize("device", ["bogus", "cuda:0"])
def test_bad_device_value_is_a_value_error(device, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=device):
        measure_peak_memory(_never_called, device=device)
