"""The analysis holds back the cyclic collector's full collections only, and restores its settings."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from torch import nn

from torchscan import crawl_module


class _Node:
    """A weak-referenceable object that can sit in a reference cycle."""

    def __init__(self) -> None:
        self.me = self


class CycleMaker(nn.Module):
    """Creates a garbage reference cycle during its forward and remembers it weakly."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.cycles: list[weakref.ref] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.cycles.append(weakref.ref(_Node()))
        return self.lin(x)


class Raiser(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("boom")


@pytest.mark.parametrize("mode", ["structure", "full"])
@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("thresholds", [(700, 10, 10), (50, 3, 7), (0, 10, 10)])
def test_collector_state_is_restored_after_success_and_error(
    mode: str, enabled: bool, thresholds: tuple[int, int, int]
) -> None:
    was, before = gc.isenabled(), gc.get_threshold()
    try:
        gc.enable() if enabled else gc.disable()
        gc.set_threshold(*thresholds)
        crawl_module(nn.Linear(3, 2), (1, 3), mode=mode)
        assert (gc.isenabled(), gc.get_threshold()) == (enabled, thresholds)
        with pytest.raises(RuntimeError, match="boom"):
            crawl_module(Raiser(), (1, 3), mode=mode)
        assert (gc.isenabled(), gc.get_threshold()) == (enabled, thresholds)
    finally:
        gc.enable() if was else gc.disable()
        gc.set_threshold(*before)


class ThresholdSpy(nn.Module):
    """Records the collector's thresholds as the forward sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[int, ...]] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(gc.get_threshold())
        return x + 1


def test_only_full_collections_are_held_back_during_the_analysis() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        spy = ThresholdSpy()
        crawl_module(spy, (1, 3))
        first, second, third = spy.seen[0]
        assert (first, second) == (700, 10) and third > 10**6
        gc.set_threshold(0, 10, 10)  # the caller turned automatic collection off: left alone
        crawl_module(spy, (1, 3))
        assert spy.seen[1] == (0, 10, 10)
    finally:
        gc.set_threshold(*before)


@pytest.mark.parametrize("mode", ["structure", "full"])
def test_cycles_made_by_the_forwards_stay_young(mode: str) -> None:
    """The forwards' cyclic garbage must die in young collections: promoting it (e.g. with
    gc.freeze()/unfreeze()) would let it outlive the call until a full collection, possibly
    holding tensors."""
    model = CycleMaker()
    for _ in range(20):
        crawl_module(model, (1, 3), mode=mode)
    gc.collect(0)
    assert all(ref() is None for ref in model.cycles)


def test_garbage_cycles_made_during_the_forward_are_still_collected() -> None:
    model = CycleMaker()
    crawl_module(model, (1, 3))
    assert model.cycles and model.cycles[0]() is not None  # not collected while paused
    gc.collect()
    assert model.cycles[0]() is None


def test_objects_the_caller_froze_stay_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        crawl_module(nn.Linear(3, 2), (1, 3))
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
