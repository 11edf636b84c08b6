"""Issue #11 (3): deeply nested models are analysed; the recursion limit is raised only as needed
and restored exactly, also on error."""

from __future__ import annotations

import contextlib
import io
import sys

import pytest
import torch
from torch import nn

from torchscan import crawl_module, summary
from torchscan.analysis.crawl.inputs import default_placement
from torchscan.analysis.traversal import nesting_depth, walk_modules


class Wrap(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.inner(x)


def nested(depth: int, leaf: nn.Module | None = None) -> Wrap:
    model: nn.Module = leaf if leaf is not None else nn.Linear(2, 2)
    for _ in range(depth):
        model = Wrap(model)
    assert isinstance(model, Wrap)
    return model


@pytest.mark.parametrize("depth", [200, 1000])
@pytest.mark.parametrize("mode", ["full", "structure"])
def test_deep_models_are_analysed_and_the_limit_restored(depth, mode):
    # 200 deep: the plain forward fits in the default limit but the hooked one did not (PyTorch
    # adds an ``inner`` frame per level once hooks exist); 1,000 deep: named_modules() recursed.
    model = nested(depth)
    limit = sys.getrecursionlimit()
    report = crawl_module(model, (2,), mode=mode)
    assert sys.getrecursionlimit() == limit
    assert len(report["layers"]) == depth + 1  # depth wrappers + the Linear leaf
    assert report["layers"][-1]["depth"] == depth
    assert model.calls == 1


def test_summary_of_a_thousand_deep_model_prints_every_row():
    model = nested(1000)
    limit = sys.getrecursionlimit()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        report = summary(model, (2,), max_depth=1000)  # the default depth fits ~60 lines (below)
    assert sys.getrecursionlimit() == limit
    assert len(report["layers"]) == 1001
    assert "Linear" in out.getvalue()
    assert "Rows: all 1001 layer calls shown." in out.getvalue()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        summary(model, (2,))
    assert len(out.getvalue().splitlines()) <= 60
    # the table now fits 120 columns (views-3.md 2), so its footer wraps: read it unwrapped
    assert "max_depth=1000 shows every depth" in " ".join(out.getvalue().split())


def test_the_limit_is_restored_when_the_deep_forward_raises():
    class Broken(nn.Module):
        def forward(self, x):
            raise KeyError("deep failure")

    model = nested(1000, leaf=Broken())
    limit = sys.getrecursionlimit()
    with pytest.raises(KeyError, match="deep failure"):
        crawl_module(model, (2,))
    assert sys.getrecursionlimit() == limit


def test_a_caller_raised_limit_is_never_lowered_and_is_restored():
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        crawl_module(nested(10), (2,), mode="structure")
        assert sys.getrecursionlimit() == 20_000
    finally:
        sys.setrecursionlimit(limit)


def test_an_impossibly_deep_model_is_refused_with_its_depth_before_it_runs():
    model = nested(10_000)  # the Linear leaf is at depth 10,000: 8 frames x 10,000 > 30,000
    limit = sys.getrecursionlimit()
    with pytest.raises(ValueError, match="nested 10000 modules deep"):
        crawl_module(model, (2,), mode="structure")
    assert sys.getrecursionlimit() == limit
    assert model.calls == 0
    assert all(m.training for m in (model, model.inner))


def test_walk_modules_matches_named_modules_order_and_deduplication():
    shared = nn.Linear(2, 2)
    model = nn.Sequential(
        nn.Sequential(shared, nn.ReLU()),
        shared,  # reachable twice: keeps its first path
        nn.ModuleDict({"b": nn.Identity(), "a": nn.Sequential(nn.Tanh())}),
    )
    model.add_module("missing", None)
    expected = [(path, id(m)) for path, m in model.named_modules()]
    assert [(path, id(m)) for path, m in walk_modules(model)] == expected
    assert nesting_depth(path for path, _ in walk_modules(model)) == 3  # "2.a.0"


def test_default_placement_of_a_deep_model_is_its_first_parameter():
    model = nested(1000, leaf=nn.Linear(2, 2).to(torch.float64))
    assert default_placement(model) == (torch.float64, torch.device("cpu"))
    buffers_only = nested(3, leaf=nn.BatchNorm1d(2, affine=False).to(torch.float16))
    assert default_placement(buffers_only) == (torch.float16, torch.device("cpu"))
    assert default_placement(nested(2, leaf=nn.ReLU())) == (torch.float32, torch.device("cpu"))
