"""measure_flops on deep models: no RecursionError where the plain forward works (issue #20, item 6)."""

from __future__ import annotations

import sys

import pytest
import torch
from torch import nn

from torchscan import measure_flops


class Wrap(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


def _nested(levels: int) -> nn.Module:
    model: nn.Module = nn.Linear(2, 2)
    for _ in range(levels):
        model = Wrap(model)
    return model


def _stack_depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


@pytest.fixture
def default_limit():
    """Python's default limit of 1,000 frames, counted from here (above the test runner's frames)."""
    before = sys.getrecursionlimit()
    limit = _stack_depth() + 1000
    sys.setrecursionlimit(limit)
    try:
        yield limit
    finally:
        sys.setrecursionlimit(before)


def test_240_levels_counted_and_limit_restored(default_limit):
    model, x = _nested(240), torch.ones(1, 2)
    model(x)  # the plain forward fits the limit (4 frames per level on torch 2.14: 970 frames)
    report = measure_flops(lambda: model(x))
    # addmm of (1, 2) @ (2, 2): 2 * 1 * 2 * 2 = 8 FLOPs
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 8
    assert report["by_module"]["Wrap"] == 8
    assert sys.getrecursionlimit() == default_limit


def test_limit_restored_and_hooks_removed_when_deep_workload_raises(default_limit):
    model, x = _nested(240), torch.ones(1, 2)
    error = RuntimeError("workload failed")

    def workload() -> None:
        model(x)
        raise error

    with pytest.raises(RuntimeError) as caught:
        measure_flops(workload)
    assert caught.value is error
    assert sys.getrecursionlimit() == default_limit
    from torch.nn.modules import module as module_globals

    assert not module_globals._global_forward_pre_hooks and not module_globals._global_forward_hooks


def test_a_raised_limit_is_kept_not_lowered():
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(40_000)
    try:
        seen = []
        measure_flops(lambda: seen.append(sys.getrecursionlimit()))
        assert seen == [40_000] and sys.getrecursionlimit() == 40_000
    finally:
        sys.setrecursionlimit(before)
