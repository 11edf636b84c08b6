"""Dispatch modes skip PyTorch's Dynamo guard only while Dynamo is absent, and count alike either way."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

import torchscan
from torchscan.analysis.dispatch import dynamo_guard
from torchscan.analysis.dispatch import observer as dispatch
from torchscan.analysis.dispatch.observer import OperatorObserver
from torchscan.analysis.ledger import ledger as memory_ledger

# Whether this PyTorch wraps a mode's __torch_dispatch__ in its Dynamo guard (2.13 and 2.14 do); without
# the wrapper there is nothing to skip and the modes dispatch through the class method as always.
WRAPPED = hasattr(OperatorObserver.__dict__["__torch_dispatch__"], "__wrapped__")


@pytest.fixture
def modules(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """A stand-in for ``sys.modules`` as the modes see it: no ``torch._dynamo`` until a test adds it."""
    fake: dict[str, object] = {}
    for owner in (dispatch, dynamo_guard, memory_ledger):
        monkeypatch.setattr(owner, "MODULES", fake)
    return fake


def _workload() -> None:
    x = torch.randn(3, 5)
    torch.tanh(x @ x.T).sum()


def _observed(modules: dict[str, object]) -> OperatorObserver:
    observer = OperatorObserver()
    with observer:
        assert ("__torch_dispatch__" in observer.__dict__) == (WRAPPED and "torch._dynamo" not in modules)
        _workload()
    return observer


def test_unguarded_and_guarded_observers_count_alike(modules: dict[str, object]) -> None:
    unguarded = _observed(modules)
    modules["torch._dynamo"] = object()
    guarded = _observed(modules)
    assert unguarded.report()["by_operator"] == guarded.report()["by_operator"]
    assert unguarded.report()["total"] == guarded.report()["total"]
    # the bound method (a reference cycle) is dropped when the observation ends
    assert "__torch_dispatch__" not in unguarded.__dict__


@pytest.mark.skipif(not WRAPPED, reason="this PyTorch does not wrap __torch_dispatch__ in a Dynamo guard")
def test_dynamo_loaded_during_the_workload_restores_the_guard(modules: dict[str, object]) -> None:
    observer = OperatorObserver()
    with observer:
        x = torch.randn(4, 4)
        torch.mm(x, x)
        assert "__torch_dispatch__" in observer.__dict__
        modules["torch._dynamo"] = object()  # as ``torch.compile`` inside the workload would
        torch.mm(x, x)
        assert "__torch_dispatch__" not in observer.__dict__
        torch.mm(x, x)
    assert observer.report()["by_operator"]["aten.mm"] == 3 * 2 * 4 * 4 * 4


def _ledger(modules: dict[str, object], loaded_midway: bool) -> dict[str, object]:
    model = nn.Sequential(nn.Linear(6, 4), nn.ReLU())
    seen: list[bool] = []

    def workload() -> None:
        model(torch.randn(3, 6)).sum().backward()
        seen.append(any("__torch_dispatch__" in vars(mode) for mode in _active_modes()))
        if loaded_midway:
            modules["torch._dynamo"] = object()
        model(torch.randn(3, 6)).sum().backward()

    report = torchscan.measure_memory(workload, modules=model)
    report["context"].pop("torch_version", None)
    return {"report": report, "unguarded": seen[0]}


def _active_modes() -> list[object]:
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    return list(_get_current_dispatch_mode_stack())


def test_the_storage_ledger_records_alike_guarded_or_not(modules: dict[str, object]) -> None:
    plain = _ledger(modules, loaded_midway=True)
    guarded = _ledger(modules, loaded_midway=False)  # Dynamo is "loaded" from the start now
    assert plain["unguarded"] is WRAPPED and guarded["unguarded"] is False
    assert plain["report"] == guarded["report"]


def test_a_plain_torch_process_never_imports_dynamo() -> None:
    code = (
        "import sys, torch, torchscan\n"
        "before = 'torch._dynamo' in sys.modules\n"
        "model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())\n"
        "report = torchscan.crawl_module(model, args=(torch.randn(2, 8),))\n"
        "flops = torchscan.measure_flops(lambda: model(torch.randn(2, 8)))\n"
        "torchscan.measure_memory(lambda: model(torch.randn(2, 8)).sum().backward(), modules=model)\n"
        "assert report['totals']['operator_flops']['status'] == 'complete'\n"
        "print(before, 'torch._dynamo' in sys.modules, flops['total']['value'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    before, after, value = done.stdout.split()
    if before == "True":
        pytest.skip("this torch imports torch._dynamo with torch itself")
    assert after == "False"  # the first analysis no longer pays Dynamo's import (about 0.6 s)
    assert int(value) == 2 * 2 * 8 * 8 + 2 * 8  # addmm (its matrix product) and relu


def test_compiling_inside_the_workload_counts_like_the_guarded_observer() -> None:
    code = (
        "import sys, torch, torchscan\n"
        "from torchscan.analysis.dispatch.observer import OperatorObserver\n"
        "assert 'torch._dynamo' not in sys.modules\n"
        "x, w = torch.randn(4, 8), torch.randn(8, 8)\n"
        "def f(a, b):\n"
        "    return torch.relu(a @ b).sum()\n"
        "def work():\n"
        "    return torch.compile(f, backend='eager')(x, w)\n"
        "first = torchscan.measure_flops(work)\n"
        "second = torchscan.measure_flops(work)\n"  # Dynamo is loaded now: guarded from the start
        "print(first['total'] == second['total'], first['by_operator'] == second['by_operator'])\n"
        "print(first['total']['status'], first['total']['value'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if done.returncode != 0 and "torch._dynamo" in done.stderr and "AssertionError" in done.stderr:
        pytest.skip("this torch imports torch._dynamo with torch itself")
    assert done.returncode == 0, done.stderr
    same, status = done.stdout.splitlines()
    assert same == "True True"
    assert status == f"complete {4 * 8 * 8 * 2 + 4 * 8 + 4 * 8 - 1}"  # mm, relu, sum


def test_operators_of_a_covered_frame_are_attributed_without_the_sink_call() -> None:
    model = nn.Sequential(nn.Linear(6, 3), nn.ReLU(), nn.Flatten(0))
    report = torchscan.crawl_module(model, args=(torch.randn(2, 6),))
    rows = {row["path"]: row for row in report["layers"]}
    linear = rows["0"]["metrics"]["operator_flops"]
    assert linear["status"] == "complete" and linear["value"] == 2 * 2 * 6 * 3  # addmm's matrix product
    assert rows["1"]["metrics"]["operator_flops"]["value"] == 2 * 3
    assert rows["2"]["metrics"]["operator_flops"] == {**linear, "value": 0, "known_value": 0}
    assert report["totals"]["operator_flops"]["value"] == 2 * 2 * 6 * 3 + 2 * 3
