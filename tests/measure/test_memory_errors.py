"""``measure_memory`` refuses bad arguments before running, and leaves nothing installed after errors."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn
from torch.nn.modules import module as module_globals
from torch.optim import optimizer as optim_globals

from torchscan import measure_memory


def _global_state(params: list[nn.Parameter]) -> tuple[Any, ...]:
    top = getattr(torch._C._autograd, "_top_saved_tensors_default_hooks", lambda _: None)
    return (
        len(module_globals._global_forward_pre_hooks),
        len(module_globals._global_forward_hooks),
        len(getattr(module_globals, "_global_forward_hooks_always_called", {})),
        len(optim_globals._global_optimizer_pre_hooks),
        len(optim_globals._global_optimizer_post_hooks),
        torch._C._len_torch_dispatch_stack(),
        top(True),
        [len(getattr(p, "_post_accumulate_grad_hooks", None) or {}) for p in params],
    )


class Boom(RuntimeError):
    pass


def test_workload_exception_propagates_and_nothing_stays_installed() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    params = list(model.parameters())
    before = _global_state(params)
    error = Boom("from the workload")
    x = torch.randn(2, 4)

    class Raising(nn.Module):
        def forward(self, value: torch.Tensor) -> torch.Tensor:
            raise error

    def workload() -> None:
        model(x).sum().backward()
        optimizer.step()
        Raising()(x)

    with pytest.raises(Boom) as caught:
        measure_memory(workload, modules=model)
    assert caught.value is error
    assert _global_state(params) == before
    # Still measurable afterwards, and the model's training flag was never touched.
    assert model.training
    report = measure_memory(lambda: model(x), modules=model)
    assert report["at_peak"]["by_category"]["parameters"]["value"] == (16 + 4) * 4


def test_raising_optimizer_step_leaves_no_phase_open() -> None:
    model = nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def workload() -> None:
        model(torch.ones(1, 2)).sum().backward()
        optimizer.param_groups[0]["lr"] = "bad"  # the step raises inside its hooks
        optimizer.step()

    with pytest.raises(TypeError):
        measure_memory(workload, modules=model)
    report = measure_memory(lambda: torch.ones(3) * 2)
    assert report["at_peak"]["phase"] == "forward"


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"workload": 3}, TypeError, "workload must be callable"),
        ({"modules": "model"}, TypeError, "modules must be None, an nn.Module or a sequence"),
        ({"modules": [nn.Linear(1, 1), 3]}, TypeError, "modules must be None"),
        ({"modules": []}, ValueError, "modules must not be empty"),
        ({"timeline": 1}, TypeError, "timeline must be a bool"),
        ({"progress": "yes"}, TypeError, "progress must be None"),
        ({"device": 7}, TypeError, "device must be a str or torch.device"),
        ({"device": "nowhere"}, ValueError, "invalid device"),
        ({"device": "xpu"}, NotImplementedError, "xpu"),
    ],
)
def test_bad_arguments_are_refused_before_running(kwargs: dict[str, Any], error: type, message: str) -> None:
    ran: list[int] = []
    arguments: dict[str, Any] = {"workload": lambda: ran.append(1)}
    arguments.update(kwargs)
    workload = arguments.pop("workload")
    with pytest.raises(error, match=message):
        measure_memory(workload, **arguments)
    assert ran == []


def test_same_module_twice_is_refused() -> None:
    layer = nn.Linear(1, 1)
    with pytest.raises(ValueError, match="same module twice"):
        measure_memory(lambda: None, modules=[layer, layer])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_allocator_figures_sit_beside_the_ledger() -> None:
    model = nn.Linear(64, 64).cuda()
    x = torch.randn(32, 64, device="cuda")
    report = measure_memory(lambda: model(x).sum().backward(), device="cuda", modules=model)
    allocator = report["allocator"]
    assert set(allocator) == {"max_allocated_delta", "max_reserved_delta"}
    assert allocator["max_allocated_delta"]["method"] == "torch.cuda.max_memory_allocated"
    assert report["context"]["ledger_device"] == "cuda"
    assert report["at_peak"]["by_category"]["parameters"]["value"] == (64 * 64 + 64) * 4


def test_measure_workload_carries_the_ledger_when_asked() -> None:
    import json

    from torchscan import measure_workload
    from torchscan.report.validate import validate_report

    model = nn.Linear(4, 4)
    x = torch.randn(2, 4)
    report = measure_workload(lambda: model(x), device="cpu", metrics=["memory_ledger"], progress=False)
    ledger = report["memory_ledger"]  # type: ignore[typeddict-item]
    assert ledger["at_peak"]["by_category"]["parameters"]["value"] == (16 + 4) * 4
    assert report["totals"]["peak_memory"]["status"] == "unavailable"  # a separate pass, not a total
    assert validate_report(json.loads(json.dumps(report))) == "benchmark"
    broken = json.loads(json.dumps(report))
    broken["memory_ledger"]["peak"]["scope"] = "x"
    with pytest.raises(ValueError, match=r"^report\.memory_ledger\.peak\.scope:"):
        validate_report(broken)
    plain = measure_workload(lambda: model(x), device="cpu", metrics=["flops"], progress=False)
    assert "memory_ledger" not in plain


def test_disabled_saved_tensor_hooks_fail_cleanly() -> None:
    model = nn.Linear(2, 2)
    params = list(model.parameters())
    before = _global_state(params)
    ran: list[int] = []
    with (
        torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"),
        pytest.raises(RuntimeError, match="no hooks here"),
    ):
        measure_memory(lambda: ran.append(1), modules=model)
    assert ran == []
    assert _global_state(params) == before


def test_cuda_allocator_deltas_plumbing_with_stub_counters(monkeypatch: pytest.MonkeyPatch) -> None:
    """Arithmetic of the CUDA allocator figures on stub counters (plumbing only: no hardware evidence)."""
    from torchscan.measure import memory as memory_module

    counters = {"allocated": 1000, "reserved": 4096, "max_allocated": 0, "max_reserved": 0}
    calls: list[str] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append("sync"))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: counters["allocated"])
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: counters["reserved"])
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: calls.append("reset"))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: counters["max_allocated"])
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda device=None: counters["max_reserved"])
    start, finish = memory_module._cuda_figures("cuda:0")
    start()
    counters.update(max_allocated=1500, max_reserved=6144)
    figures = finish()
    assert calls == ["sync", "reset", "sync"]
    assert figures["max_allocated_delta"]["value"] == 500
    assert figures["max_reserved_delta"]["value"] == 2048
    assert figures["max_reserved_delta"]["method"] == "torch.cuda.max_memory_reserved"
