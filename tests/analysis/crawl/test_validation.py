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
    ({"input_shape": []}, ValueError, "empty list"),  # ShapeTypeError: a TypeError and a ValueError
    ({"input_shape": ()}, TypeError, "empty tuple"),
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


def test_tuple_args_and_kwargs_only_calls_are_accepted():
    # A list for args is refused since issue #20 item 11 (tests/analysis/crawl/test_caller_contract.py).
    model = Spy()
    crawl_module(model, args=(torch.ones(1, 3),), mode="structure")
    crawl_module(model, kwargs={"x": torch.ones(1, 3)}, mode="structure")
    assert model.calls == 2


# Issue #11 (4): every argument of crawl_module/summary is checked before the model runs; a bad type
# is a TypeError, a bad value a ValueError, and the message names the argument.
MORE_CASES = [
    ({"input_shape": (3,), "device": "bogus"}, ValueError, "device"),
    ({"input_shape": (3,), "device": 3}, TypeError, "device"),
    ({"input_shape": (3,), "device": "cpu:x"}, ValueError, "device"),
    # 2**40 · 2**40 = 2**80 elements: more than an int64 element count
    ({"input_shape": (2**40, 2**40)}, ValueError, "input_shape"),
    ({"input_shape": [(3,), (2**32, 2**32)]}, ValueError, "input_shape"),
    ({"input_shape": (3,), "strict": "yes"}, TypeError, "strict"),
    ({"input_shape": (3,), "strict": 1}, TypeError, "strict"),
    ({"input_shape": (3,), "strict": None}, TypeError, "strict"),
    ({"input_shape": (3,), "mode": 5}, ValueError, "mode"),
    ({"input_shape": (3,), "mode": ["full"]}, ValueError, "mode"),
    ({"args": (torch.ones(3),), "kwargs": {"/private/model.pt": 1}}, ValueError, "kwargs"),
]


@pytest.mark.parametrize(("options", "error", "text"), MORE_CASES)
def test_more_arguments_rejected_before_the_model_runs(options, error, text):
    test_rejected_before_the_model_runs(options, error, text)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a build or machine without CUDA")
def test_a_cuda_device_without_cuda_is_a_value_error_naming_it():
    model = Spy()
    with pytest.raises(ValueError, match=r"'cuda:0'.*CUDA is not available"):
        crawl_module(model, (3,), device="cuda:0")
    assert model.calls == 0


def test_an_input_too_large_to_allocate_names_input_shape():
    # 2**61 float32 elements fit an int64 count but need 2**63 bytes: torch cannot allocate them.
    model = Spy()
    with pytest.raises(ValueError, match="input_shape"):
        crawl_module(model, (2**61,))
    assert model.calls == 0


SUMMARY_CASES = [
    ({"wrap_mode": 3}, TypeError, "wrap_mode"),
    ({"wrap_mode": "wide"}, ValueError, "wrap_mode"),
    ({"max_depth": "2"}, TypeError, "max_depth"),
    ({"max_depth": 1.0}, TypeError, "max_depth"),
    ({"max_depth": True}, TypeError, "max_depth"),
    ({"max_depth": -1}, ValueError, "max_depth"),
    ({"receptive_field": "yes"}, TypeError, "receptive_field"),
    ({"receptive_field": 1}, TypeError, "receptive_field"),
    ({"effective_rf_stats": 0}, TypeError, "effective_rf_stats"),
    ({"operator_flops": "no"}, TypeError, "operator_flops"),
    ({"strict": "yes"}, TypeError, "strict"),
    ({"device": "bogus"}, ValueError, "device"),
    ({"mode": "fast"}, ValueError, "mode"),
]


@pytest.mark.parametrize(("options", "error", "text"), SUMMARY_CASES)
def test_summary_arguments_rejected_before_the_model_runs(options, error, text, capsys):
    from torchscan import summary

    model = Spy()
    model.train()
    with pytest.raises(error) as caught:
        summary(model, (3,), **options)
    assert text in str(caught.value)
    assert model.calls == 0
    assert model.training and model.lin.training
    assert capsys.readouterr().out == ""  # nothing printed for a call that never ran


MEASURE_FLOPS_CASES = [
    ({"workload": 3}, TypeError, "workload"),
    ({"modules": "model"}, TypeError, "modules"),
    ({"modules": [nn.Linear(1, 1), 3]}, TypeError, "modules"),
    ({"custom_mapping": {"aten.sin": len}}, TypeError, "operator packets"),
    ({"custom_mapping": [1]}, TypeError, "custom_mapping"),
]


@pytest.mark.parametrize(("options", "error", "text"), MEASURE_FLOPS_CASES)
def test_measure_flops_arguments_rejected_before_the_workload_runs(options, error, text):
    from torchscan.measure.flops import measure_flops

    calls = []
    options = {"workload": lambda: calls.append(1), **options}
    workload = options.pop("workload")
    with pytest.raises(error) as caught:
        measure_flops(workload, **options)
    assert text in str(caught.value)
    assert calls == []


@pytest.mark.parametrize("shape", ["3", (3.0,), (3, True), torch.ones(3), [(3,), "3"]])
def test_a_shape_of_the_wrong_type_is_a_type_error_and_a_value_error(shape):
    # The API's rule (wrong type -> TypeError) and analysis.md 2's table (bad shape -> ValueError).
    model = Spy()
    for error in (TypeError, ValueError):
        with pytest.raises(error, match="input_shape"):
            crawl_module(model, shape)
    assert model.calls == 0


def test_a_negative_dimension_is_a_value_error_only():
    with pytest.raises(ValueError, match="input_shape") as caught:
        crawl_module(Spy(), (3, -1))
    assert not isinstance(caught.value, TypeError)


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ([()], [(1,)]),  # one shape without dimensions: the batch dimension alone
        ([[]], [(1,)]),
        (((),), [(1,)]),
        ([(), [2]], [(1,), (1, 2)]),
        ([[], []], [(1,), (1,)]),
    ],
)
def test_an_empty_shape_inside_a_list_is_one_input_of_batch_one(shape, expected):
    seen = []

    class Record(nn.Module):
        def forward(self, *inputs):
            seen.extend(tuple(x.shape) for x in inputs)
            return inputs[0]

    crawl_module(Record(), shape)
    assert seen == expected
