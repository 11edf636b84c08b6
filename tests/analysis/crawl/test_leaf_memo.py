"""The leaf memo: a reused estimate is exactly what the formulas would have produced.

Every report here is built twice, with the memo and with it disabled (``leaf_key`` returning None),
and compared as JSON text; the key's refusals are checked one by one.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import torchscan
from torchscan.analysis.crawl import estimate, leaf_memo
from torchscan.formulas import registry


@pytest.fixture(autouse=True)
def _empty_memo() -> Any:
    leaf_memo.SHARED.clear()
    yield
    leaf_memo.SHARED.clear()


def _report_text(model: nn.Module, *args: Any, **kwargs: Any) -> str:
    with torch.no_grad():
        report = torchscan.crawl_module(model, args=args, kwargs=kwargs)
    return json.dumps(report, sort_keys=False)


def _both(monkeypatch: pytest.MonkeyPatch, model: nn.Module, *args: Any, **kwargs: Any) -> tuple[str, str]:
    with_memo = _report_text(model, *args, **kwargs)
    monkeypatch.setattr(estimate, "leaf_key", lambda *a: None)
    without = _report_text(model, *args, **kwargs)
    return with_memo, without


def _count_evaluations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one each time the formulas of a leaf call actually run."""
    calls: list[int] = []
    real_estimate = estimate._estimate_silently

    def spy_estimate(*args: Any) -> Any:
        calls.append(1)
        return real_estimate(*args)

    monkeypatch.setattr(estimate, "_estimate_silently", spy_estimate)
    return calls


def test_repeated_layers_reuse_one_evaluation(monkeypatch: pytest.MonkeyPatch) -> None:
    layers: list[nn.Module] = []
    for _ in range(50):
        layers += [nn.Linear(8, 8), nn.ReLU()]
    model = nn.Sequential(*layers)
    calls = _count_evaluations(monkeypatch)
    with torch.no_grad():
        report = torchscan.crawl_module(model, args=(torch.randn(2, 8),))
    assert len(calls) == 2  # one Linear, one ReLU: the 98 other calls reused them
    linear = next(row for row in report["layers"] if row["type"] == "Linear")
    assert linear["metrics"]["module_flops"]["value"] == 2 * 8 * (2 * 8 - 1 + 1)
    assert report["totals"]["module_flops"]["status"] == "complete"
    with torch.no_grad():
        again = torchscan.crawl_module(model, args=(torch.randn(2, 8),))
    assert len(calls) == 2  # a later analysis of the same architecture reuses them too
    assert again == report


def test_reports_never_share_a_result() -> None:
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU())
    x = torch.randn(2, 8)
    with torch.no_grad():
        first = torchscan.crawl_module(model, args=(x,))
        second = torchscan.crawl_module(model, args=(x,))
    first_ids = {id(result) for row in first["layers"] for result in row["metrics"].values()}
    second_ids = {id(result) for row in second["layers"] for result in row["metrics"].values()}
    assert not first_ids & second_ids
    expected = json.dumps(second)
    first["layers"][1]["metrics"]["module_flops"]["value"] = -1  # a caller editing one report
    with torch.no_grad():
        third = torchscan.crawl_module(model, args=(x,))
    assert json.dumps(second) == expected and json.dumps(third) == expected


def test_memo_stays_bounded() -> None:
    memo = leaf_memo.LeafMemo(limit=3)
    results: dict[str, Any] = {}
    for key in range(7):
        memo.put(key, results)
    assert memo.get(6) is results
    assert memo.get(0) is None  # emptied when full, never grown past the limit
    assert len(memo._results) <= 3


def test_identical_report_on_convolutions_whose_shapes_collide(monkeypatch: pytest.MonkeyPatch) -> None:
    # Same input, output and weight shapes, different stride and padding: 7 -> 3 both ways. The
    # spatial fields differ, so the key must tell them apart.
    model = nn.Sequential(
        nn.Conv2d(3, 3, 3, stride=2, padding=0),
        nn.Identity(),
        nn.Conv2d(3, 3, 3, stride=3, padding=1),
    )

    class Fork(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = model[0]
            self.b = model[2]

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.a(x) + self.b(x)

    with_memo, without = _both(monkeypatch, Fork(), torch.randn(1, 3, 7, 7))
    assert with_memo == without
    rows = json.loads(with_memo)["layers"]
    strides = [row["metrics"]["effective_stride"]["value"] for row in rows if row["type"] == "Conv2d"]
    assert strides == [2, 3]


def test_identical_report_across_training_flags_and_dtypes(monkeypatch: pytest.MonkeyPatch) -> None:
    class Mixed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.drop_train = nn.Dropout(0.5)
            self.drop_eval = nn.Dropout(0.5).eval()
            self.norm = nn.BatchNorm1d(4)
            self.norm_eval = nn.BatchNorm1d(4).eval()
            self.lin = nn.Linear(4, 4)
            self.lin_nobias = nn.Linear(4, 4, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.drop_train(x) + self.drop_eval(x)
            y = self.norm(y) + self.norm_eval(y)
            return self.lin(y) + self.lin_nobias(y) + self.lin(y.double().float())

    with_memo, without = _both(monkeypatch, Mixed(), torch.randn(3, 4))
    assert with_memo == without


def test_identical_report_on_torchvision_resnet(monkeypatch: pytest.MonkeyPatch) -> None:
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.resnet18(num_classes=10).eval()
    with_memo, without = _both(monkeypatch, model, torch.randn(1, 3, 64, 64))
    assert with_memo == without


def test_scalar_types_are_part_of_the_key() -> None:
    plan = registry.leaf_formulas(nn.Dropout)
    assert plan is not None
    x = torch.randn(2, 2)
    as_int, as_float = nn.Dropout(0.0), nn.Dropout(0.0)
    as_int.p = 0  # equal to 0.0 and hashed alike, but another type
    key_int = leaf_memo.leaf_key(as_int, plan, (x,), {}, x)
    key_float = leaf_memo.leaf_key(as_float, plan, (x,), {}, x)
    assert key_int is not None and key_float is not None
    assert key_int != key_float


@pytest.mark.parametrize(
    "case",
    [
        "keyword",
        "subclass_input",
        "subclass_parameter",
        "instance_forward",
        "tensor_attribute",
        "user_class",
        "no_output",
    ],
)
def test_key_refuses_what_it_cannot_describe(case: str) -> None:
    module: nn.Module = nn.Linear(4, 4)
    x = torch.randn(2, 4)
    args: tuple[Any, ...] = (x,)
    kwargs: dict[str, Any] = {}
    output: Any = module(x)
    if case == "keyword":
        args, kwargs = (), {"input": x}
    elif case == "subclass_input":
        args = (nn.Parameter(x),)
    elif case == "subclass_parameter":

        class Marked(torch.Tensor):
            pass

        module.weight = nn.Parameter(torch.randn(4, 4).as_subclass(Marked))
    elif case == "instance_forward":
        module.forward = module.forward  # type: ignore[method-assign]
    elif case == "tensor_attribute":
        module.scale = torch.ones(1)  # not a parameter or buffer: a formula could read it
    elif case == "user_class":

        class MyLinear(nn.Linear):
            pass

        module = MyLinear(4, 4)
    elif case == "no_output":
        output = (output,)
    plan = registry.leaf_formulas(type(module))
    assert plan is not None
    assert leaf_memo.leaf_key(module, plan, args, kwargs, output) is None


def test_caller_registered_formulas_are_not_memoised() -> None:
    plan = registry.leaf_formulas(nn.Linear)
    assert plan is not None
    x = torch.randn(2, 4)
    module = nn.Linear(4, 4)

    def caller_formula(*args: Any) -> int:
        return 0

    assert leaf_memo.leaf_key(module, plan, (x,), {}, module(x)) is not None
    assert leaf_memo.leaf_key(module, (caller_formula, *plan[1:]), (x,), {}, module(x)) is None


class _TokenBlock(nn.Module):
    """Leaves whose receptive field does not apply (Embedding, LayerNorm, Dropout) next to Linear."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, width)
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(3))
        self.drop = nn.Dropout(0.1)
        self.proj = nn.Linear(width, width)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for norm in self.norms:
            x = self.proj(self.drop(norm(x)))
        return x


def test_not_applicable_receptive_fields_are_memoised_identically(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _TokenBlock(8).eval()
    ids = torch.randint(0, 50, (2, 5))
    calls = _count_evaluations(monkeypatch)
    with torch.no_grad():
        report = torchscan.crawl_module(model, args=(ids,))
    assert len(calls) == 4  # Embedding, LayerNorm (three equal ones), Dropout, Linear (called 3 times)
    norm = next(row for row in report["layers"] if row["type"] == "LayerNorm")
    assert norm["metrics"]["receptive_field"] == {
        "status": "unavailable",
        "value": None,
        "known_value": None,
        "unit": "elements",
        "scope": "module_call",
        "method": "not_applicable",
    }
    with_memo, without = _both(monkeypatch, model, ids)
    assert with_memo == without


_LAYER_CHOICES = (
    lambda: nn.Linear(6, 6),
    lambda: nn.Linear(6, 6, bias=False),
    lambda: nn.ReLU(),
    lambda: nn.ReLU(inplace=True),
    lambda: nn.GELU(approximate="tanh"),
    lambda: nn.Dropout(0.2),
    lambda: nn.LayerNorm(6),
    lambda: nn.LayerNorm(6, elementwise_affine=False),
    lambda: nn.Identity(),
)


@settings(max_examples=25, deadline=None)
@given(
    picks=st.lists(st.integers(0, len(_LAYER_CHOICES) - 1), min_size=1, max_size=12),
    rows=st.integers(0, 3),
    double=st.booleans(),
)
def test_any_stack_reports_the_same_with_and_without_the_memo(
    picks: list[int], rows: int, double: bool
) -> None:
    model = nn.Sequential(*(_LAYER_CHOICES[i]() for i in picks))
    x = torch.randn(rows, 6)
    if double:
        model, x = model.double(), x.double()
    leaf_memo.SHARED.clear()
    with torch.no_grad():
        cold = torchscan.crawl_module(model, args=(x,))
        warm = torchscan.crawl_module(model, args=(x,))
    real_key = estimate.leaf_key
    estimate.leaf_key = lambda *_: None  # type: ignore[assignment]
    try:
        with torch.no_grad():
            without = torchscan.crawl_module(model, args=(x,))
    finally:
        estimate.leaf_key = real_key
    assert json.dumps(cold) == json.dumps(without) == json.dumps(warm)
