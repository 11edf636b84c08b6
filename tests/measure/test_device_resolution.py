"""Device normalisation shared by the workload APIs (workloads.md 1.3).

Accelerators are faked by replacing public PyTorch attributes: bookkeeping only, not hardware evidence.
"""

from __future__ import annotations

import pytest
import torch

from torchscan.measure.device import processor_name, resolve_device, synchronizer


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
