"""Device normalisation shared by the workload APIs (workloads.md 1.3).

Accelerators are faked by replacing public PyTorch attributes: bookkeeping only, not hardware evidence.
"""

from __future__ import annotations

import pytest
import torch

from torchscan.runtime.device import processor_name, resolve_device, synchronizer


@pytest.mark.parametrize("device", ["cpu", "cpu:0", torch.device("cpu"), torch.device("cpu:0")])
def test_cpu(device) -> None:
    resolved = resolve_device(device)
    assert resolved.name == "cpu" and resolved.type == "cpu"
    assert synchronizer(resolved)() is None


def test_cuda_normalisation_bookkeeping(monkeypatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: calls.append(1) or 2)
    assert resolve_device("cuda").name == "cuda:2"
    assert resolve_device(torch.device("cuda", 0)).name == "cuda:0"
    assert calls == [1]
    with pytest.raises(RuntimeError, match=r"CUDA device 'cuda:3' is unavailable.*3"):
        resolve_device("cuda:3")


def test_unavailable_and_unsupported(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match=r"CUDA device 'cuda' is unavailable"):
        resolve_device("cuda")
    with pytest.raises(RuntimeError, match=r"MPS device 'mps' is unavailable"):
        resolve_device("mps:0")
    with pytest.raises(RuntimeError, match=r"MPS device 'mps:1' is unavailable"):
        resolve_device("mps:1")
    for device in ("meta", "xpu", torch.device("meta")):
        with pytest.raises(NotImplementedError, match=r"not implemented for '(meta|xpu)'"):
            resolve_device(device)
    with pytest.raises(TypeError):
        resolve_device(0)
    with pytest.raises(ValueError):
        resolve_device("not-a-device")


def test_processor_name_is_text() -> None:
    assert isinstance(processor_name(), str)


# --- issue #11: an unusable device is a bad value (ValueError), still a RuntimeError for old callers ---


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "mps:1"])
def test_unavailable_device_is_a_value_error_naming_it(device) -> None:
    if torch.cuda.is_available() and device.startswith("cuda"):
        pytest.skip("CUDA is available here")
    with pytest.raises(ValueError, match=f"'{device}'") as caught:
        resolve_device(device)
    assert isinstance(caught.value, RuntimeError)


def test_cpu_only_build_assertion_becomes_a_value_error(monkeypatch) -> None:
    # A CPU-only build asserts "Torch not compiled with CUDA enabled" from current_device().
    def not_compiled() -> int:
        raise AssertionError("Torch not compiled with CUDA enabled")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", not_compiled)
    with pytest.raises(ValueError, match="CUDA device 'cuda' is unavailable"):
        resolve_device("cuda")


@pytest.mark.parametrize("device", ["bogus", "cuda:-1", ""])
def test_malformed_device_is_a_value_error(device) -> None:
    with pytest.raises(ValueError, match="device"):
        resolve_device(device)


@pytest.mark.parametrize("device", [0, None, b"cpu"])
def test_wrong_device_type_is_a_type_error(device) -> None:
    with pytest.raises(TypeError, match="device"):
        resolve_device(device)
