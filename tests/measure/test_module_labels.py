"""The light module tracker of ``by_module`` keeps PyTorch's ``ModuleTracker`` labels (issue #24)."""

from __future__ import annotations

import threading
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.module_tracker import ModuleTracker

from torchscan.analysis.dispatch.observer import OperatorObserver
from torchscan.measure.module_labels import ModuleLabels, _grad_tensors


class _Snapshots(TorchDispatchMode):
    """Records both trackers' running labels at every dispatched operator."""

    def __init__(self, ours: ModuleLabels, theirs: ModuleTracker) -> None:
        super().__init__()
        self.ours, self.theirs = ours, theirs
        self.seen: list[tuple[str, frozenset[str], frozenset[str]]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.seen.append((str(func), frozenset(self.ours.parents), frozenset(self.theirs.parents)))
        return func(*args, **(kwargs or {}))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(4, 4)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.inner(x)) + self.inner(x)  # a child called twice


def _workload(model: nn.Sequential, x: torch.Tensor) -> None:
    model[1].inner(x)  # a child seen standalone first, renamed once its parent is seen
    out = model(x)
    out.sum().backward()  # backward labels re-enter through gradient hooks
    model[1].inner(x)  # the renamed label from now on


def test_labels_match_module_tracker_forward_and_backward() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), Block(), Block())
    x = torch.randn(2, 4)
    ours, theirs = ModuleLabels(), ModuleTracker()
    with theirs, ours, _Snapshots(ours, theirs) as snapshots:
        _workload(model, x)
    assert len(snapshots.seen) > 20
    differing = [(op, a, b) for op, a, b in snapshots.seen if a != b]
    assert differing == []
    labels = set().union(*(a for _, a, _ in snapshots.seen))
    # the first standalone call is labelled by its own class; later ones by the parent's path
    assert {"Linear", "Sequential.1.inner", "Sequential.2.act", "Global"} <= labels
    assert any("Sequential.2.inner" in a for op, a, _ in snapshots.seen if "mm" in op)


def test_hooks_removed_and_other_threads_ignored() -> None:
    from torch.nn.modules import module as module_globals

    before = (len(module_globals._global_forward_pre_hooks), len(module_globals._global_forward_hooks))
    labels = ModuleLabels()
    entered: list[set[str]] = []
    linear = nn.Linear(2, 2)
    with labels:
        thread = threading.Thread(target=lambda: entered.append(set(labels.parents)) or linear(torch.ones(2)))
        thread.start()
        thread.join()
        assert labels.parents == {"Global"}  # the other thread's call entered no label
    after = (len(module_globals._global_forward_pre_hooks), len(module_globals._global_forward_hooks))
    assert after == before


def test_grad_tensors_reads_plain_tensors_and_containers() -> None:
    a = torch.ones(2, requires_grad=True)
    b = torch.ones(2)
    assert _grad_tensors(a) == [a]
    assert _grad_tensors(b) == []
    assert _grad_tensors((a, b, None, 3)) == [a]
    assert _grad_tensors((b, [a], {"k": a})) == [a, a]  # nested: PyTorch's pytree walk


class _PerOperator(TorchDispatchMode):
    """The reference ``by_module``: every operator's FLOPs added to each label running at it."""

    def __init__(self, labels: ModuleLabels, observer: OperatorObserver) -> None:
        super().__init__()
        self.labels, self.observer = labels, observer
        self.flops: dict[str, int] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        running = list(self.labels.parents)
        before = self.observer.attributed
        out = func(*args, **(kwargs or {}))  # dispatched to the observer below this mode
        flops = self.observer.attributed - before
        for label in running:
            if flops:
                self.flops[label] = self.flops.get(label, 0) + flops
        return out


def test_label_intervals_give_each_label_the_flops_of_its_operators() -> None:
    # issue #36: by_module is kept per label interval; it must equal attributing every operator to
    # every running label, through re-entered labels, a backward pass and the end-of-backward reset
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), Block(), Block())
    x = torch.randn(2, 4)
    observer = OperatorObserver()
    labels = ModuleLabels(observer)
    observer.module_labels = labels
    with labels, observer, _PerOperator(labels, observer) as reference:
        _workload(model, x)
    assert observer.by_module() == reference.flops
    assert reference.flops["Sequential.1.inner"] > 0 and reference.flops["Global"] == observer.attributed
