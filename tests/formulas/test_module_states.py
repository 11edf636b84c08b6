"""C5 BatchNorm states called directly, and the C13 sequential model leaf by leaf (formulas.md Part C)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from torchscan.modules import module_dmas, module_flops, module_macs, module_rf


def evaluate(module: nn.Module, x: torch.Tensor) -> tuple[Any, ...]:
    with torch.no_grad():
        out = module(x)
    return (
        module_flops(module, (x,), out),
        module_macs(module, x, out),
        module_dmas(module, x, out),
        module_rf(module, x, out),
    )


# --- C5 direct module_flops on BatchNorm states --------------------------------------------------


def _without(*buffers: str, track: bool = True, training: bool = False) -> nn.Module:
    module = nn.BatchNorm1d(3, track_running_stats=track).train(training)
    for name in buffers:
        setattr(module, name, None)
    return module


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        # normalize 48 + eps/sqrt 6 + affine 48 (+ batch stats 96 in training, + updates 3·3 + 3·5)
        pytest.param(_without(), 102, id="eval"),
        pytest.param(_without(training=True), 222, id="train-tracked"),  # 102 + 96 + 24
        pytest.param(_without("running_mean", "running_var"), 198, id="no-buffers-eval"),  # 102 + 96
        pytest.param(_without("running_mean", "running_var", training=True), 198, id="no-buffers-train"),
        pytest.param(_without(track=False), 102, id="untracked-kept-buffers-eval"),
        pytest.param(_without(track=False, training=True), 198, id="untracked-kept-buffers-train"),
        pytest.param(_without("running_var", training=True), 207, id="train-no-var"),  # 198 + 3·3
        pytest.param(_without("running_mean", training=True), 213, id="train-no-mean"),  # 198 + 3·5
    ],
)
def test_c5_batchnorm_follows_present_buffers(module: nn.Module, expected: int) -> None:
    """The statistics path follows the buffers present at call time, not the constructor flag."""
    x = torch.ones(2, 3, 4)
    if module.track_running_stats is False:  # nn.BatchNorm1d(track_running_stats=False) has no buffers
        module.register_buffer("running_mean", torch.zeros(3))
        module.register_buffer("running_var", torch.ones(3))
    assert module_flops(module, (x,), torch.ones_like(x)) == expected


# --- C13 sequential model ----------------------------------------------------------------------


def compose(triples: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """Compose local triples front to back: field += (k − 1)·jump, jump ·= s, padding += p·jump."""
    field, jump, padding, out = 1.0, 1.0, 0.0, []
    for k, s, p in triples:
        field, padding, jump = field + (k - 1) * jump, padding + p * jump, jump * s
        out.append((field, jump, padding))
    return out


def test_c13_sequential_leaves() -> None:
    """Conv2d → ReLU → MaxPool2d on (1, 3, 32, 32): per-leaf counts add up to the model totals."""
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.MaxPool2d(2)).eval()
    x, rows = torch.ones(1, 3, 32, 32), []
    for layer in model:
        rows.append(evaluate(layer, x))
        with torch.no_grad():
            x = layer(x)
    # FLOPs 388,800 + 7,200 + 1,800·3; MACs 194,400 + 0 + 5,400; DMAs 201,824 + 14,400 + 9,000
    assert [r[:3] for r in rows] == [(388_800, 194_400, 201_824), (7_200, 0, 14_400), (5_400, 5_400, 9_000)]
    assert tuple(sum(r[i] for r in rows) for i in range(3)) == (401_400, 199_800, 225_224)
    local = [r[3] for r in rows]
    assert local == [(3, 1, 0), (1, 1, 0), (2, 2, 0)]
    assert compose(local) == [(3, 1, 0), (3, 1, 0), (4, 2, 0)]
