"""Every row of analysis.md 2: a clear error before the model runs, no state changed."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import crawl_module


class Spy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x)


CASES = [
    ({"input_shape": None}, ValueError, "exactly one"),
    ({"input_shape": (3,), "args": (torch.ones(3),)}, ValueError, "exactly one"),
    ({"input_shape": (3,), "kwargs": {"x": torch.ones(3)}}, ValueError, "exactly one"),
    ({"args": (torch.ones(3),), "dtype": torch.float32}, ValueError, "generated inputs"),
    ({"args": (torch.ones(3),), "device": "cpu"}, ValueError, "generated inputs"),
    ({"input_shape": (3, -1)}, ValueError, "(3, -1)"),
    ({"input_shape": (3, True)}, ValueError, "True"),
    ({"input_shape": "3"}, ValueError, "shape"),
    ({"input_shape": (3.0,)}, ValueError, "3.0"),
    ({"input_shape": (3,), "dtype": "float32"}, TypeError, "dtype"),
    ({"input_shape": (3,), "dtype": [torch.float32, 3]}, TypeError, "dtype"),
    ({"input_shape": [(3,), (3,)], "dtype": [torch.float32]}, ValueError, "dtypes"),
    ({"args": {"x": 1}}, TypeError, "args"),
    ({"args": (torch.ones(3),), "kwargs": {1: 2}}, TypeError, "kwargs"),
    ({"args": (torch.ones(3),), "kwargs": [("x", 1)]}, TypeError, "kwargs"),
    ({"input_shape": (3,), "mode": "fast"}, ValueError, "mode"),
    (
        {"input_shape": (3,), "custom_mapping": {torch.ops.aten.sin.default: len}},
        TypeError,
        "operator packets",
    ),
    ({"input_shape": (3,), "custom_mapping": {"aten.sin": len}}, TypeError, "operator packets"),
    ({"input_shape": (3,), "custom_mapping": {torch.ops.aten.sin: 3}}, TypeError, "callable"),
]


@pytest.mark.parametrize(("options", "error", "text"), CASES)
def test_rejected_before_the_model_runs(options, error, text):
    model = Spy()
    model.train()
    options = dict(options)
    shape = options.pop("input_shape", None)
    with pytest.raises(error, match=None) as caught:
        crawl_module(model, shape, **options)
    assert text in str(caught.value)
    assert model.calls == 0
    assert model.training and model.lin.training
    assert not model._forward_hooks and not model._forward_pre_hooks and not model.lin._forward_pre_hooks


def test_a_tensor_given_as_the_shape_is_named_by_type_never_by_value():
    secret = torch.full((1, 3), 123.25)
    with pytest.raises(ValueError, match="got Tensor; pass tensors with args") as caught:
        crawl_module(Spy(), secret)
    assert "123.25" not in str(caught.value)
    with pytest.raises(ValueError, match="got tuple") as caught:
        crawl_module(Spy(), (1, secret))
    assert "123.25" not in str(caught.value)


def test_not_a_module():
    with pytest.raises(TypeError, match="str"):
        crawl_module("not a module", (3,))


def test_list_args_and_kwargs_only_calls_are_accepted():
    model = Spy()
    crawl_module(model, args=[torch.ones(1, 3)], mode="structure")
    crawl_module(model, kwargs={"x": torch.ones(1, 3)}, mode="structure")
    assert model.calls == 2
