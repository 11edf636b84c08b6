"""Caller arguments and caller exceptions at the analysis entry points (issue #20, items 10 and 11)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules import module as module_globals

from torchscan import crawl_module, measure_flops, measure_workload, summary


def _no_hooks_left() -> bool:
    return not module_globals._global_forward_pre_hooks and not module_globals._global_forward_hooks


class OneBufferBatchNorm(nn.Module):
    """Batch norm in training mode with ``running_mean`` but no ``running_var``: PyTorch's own
    kernel raises ``ValueError``; the test keeps the object to check it comes back unchanged."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(3))
        self.raised: list[BaseException] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            return F.batch_norm(x, self.mean, None, training=True)
        except BaseException as error:
            self.raised.append(error)
            raise


def test_plain_call_raises_value_error():
    with pytest.raises(ValueError, match="running_mean and running_var"):
        OneBufferBatchNorm()(torch.ones(2, 3))


@pytest.mark.parametrize(
    "run",
    [
        lambda m, x: crawl_module(m, args=(x,)),
        lambda m, x: crawl_module(m, (3,)),
        lambda m, x: crawl_module(m, args=(x,), mode="structure"),
        lambda m, x: summary(m, args=(x,)),
        lambda m, x: measure_flops(lambda: m(x)),
        lambda m, x: measure_workload(lambda: m(x), device="cpu", metrics=("flops",), progress=False),
    ],
    ids=["crawl", "crawl-generated", "structure", "summary", "measure_flops", "measure_workload"],
)
def test_caller_exception_propagates_unchanged(run, capsys):
    model, x = OneBufferBatchNorm(), torch.ones(2, 3)
    model.train()
    with pytest.raises(ValueError) as caught:
        run(model, x)
    assert model.raised and caught.value is model.raised[-1]
    assert model.training and _no_hooks_left()


def test_batch_norm_module_with_one_none_buffer_keeps_its_exception_under_measure_flops():
    norm = nn.BatchNorm1d(3)
    norm.running_var = None
    x = torch.ones(2, 3)
    with pytest.raises(ValueError, match="running_mean and running_var"):
        norm(x)
    with pytest.raises(ValueError, match="running_mean and running_var"):
        measure_flops(lambda: norm(x))
    assert norm.training and _no_hooks_left()


def test_batch_norm_operator_counts_are_unchanged():
    norm, x = nn.BatchNorm1d(3), torch.ones(4, 3)
    report = measure_flops(lambda: norm(x))
    assert report["total"]["status"] == "complete"
    with torch.inference_mode():
        assert measure_flops(lambda: norm(x))["total"] == report["total"]


@pytest.mark.parametrize("args", [[torch.ones(1, 3)], []])
@pytest.mark.parametrize("entry", [crawl_module, summary])
def test_list_args_are_ambiguous_and_refused(entry, args):
    model = nn.Linear(3, 3)
    calls: list[int] = []
    model.register_forward_pre_hook(lambda *_: calls.append(1))
    with pytest.raises(TypeError, match="args"):
        entry(model, args=args)
    assert calls == [] and _no_hooks_left()


@pytest.mark.parametrize("col_names", [[], ()])
def test_empty_col_names_refused_like_the_cli(col_names):
    model = nn.Linear(3, 3)
    calls: list[int] = []
    model.register_forward_pre_hook(lambda *_: calls.append(1))
    with pytest.raises(ValueError, match="col_names"):
        summary(model, (3,), col_names=col_names)
    assert calls == []
