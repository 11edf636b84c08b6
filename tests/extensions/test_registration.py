"""custom_modules registration, public types and handler selection (extensions spec §1–§3)."""

from __future__ import annotations

import abc
import dataclasses

import pytest
import torch
from torch import nn

import torchscan
from torchscan import ModuleCall, ModuleEstimates, ModuleHandler, crawl_module, summary
from torchscan.extensions import resolve_handler, validate_custom_modules


def _noop(call):
    return {}


class _Exploding(nn.Module):
    """Fails loudly if the model is ever run."""

    def forward(self, x):
        raise AssertionError("the model must not run when registration fails")


def test_public_exports():
    assert torchscan.ModuleCall is ModuleCall
    assert torchscan.ModuleHandler is ModuleHandler
    assert torchscan.ModuleEstimates is ModuleEstimates
    assert ModuleEstimates.__total__ is False
    assert set(ModuleEstimates.__annotations__) == {
        "module_flops",
        "macs",
        "dmas",
        "receptive_field",
        "effective_stride",
        "effective_padding",
    }


def test_module_call_and_handler_are_frozen():
    call = ModuleCall(nn.Identity(), (), {}, None)
    assert [f.name for f in dataclasses.fields(call)] == ["module", "args", "kwargs", "output"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.output = 1  # type: ignore[misc]
    handler = ModuleHandler(_noop)
    assert handler.subtree_metrics == frozenset()
    with pytest.raises(dataclasses.FrozenInstanceError):
        handler.subtree_metrics = frozenset({"macs"})  # type: ignore[misc]


@pytest.mark.parametrize(
    ("custom_modules", "error"),
    [
        ([nn.Linear, ModuleHandler(_noop)], TypeError),
        ({"MyModule": ModuleHandler(_noop)}, TypeError),
        ({str: ModuleHandler(_noop)}, TypeError),
        ({nn.Linear: _noop}, TypeError),
        ({nn.Linear: ModuleHandler(None)}, TypeError),  # type: ignore[arg-type]
        ({nn.Linear: ModuleHandler(_noop, {"macs"})}, ValueError),  # type: ignore[arg-type]
        ({nn.Linear: ModuleHandler(_noop, frozenset({"operator_flops"}))}, ValueError),
    ],
)
def test_registration_errors_before_the_model_runs(custom_modules, error):
    model = nn.Sequential(_Exploding()).train()
    hooks_before = dict(torch.nn.modules.module._global_forward_hooks)
    with pytest.raises(error):
        crawl_module(model, (2,), custom_modules=custom_modules)
    with pytest.raises(error):
        summary(model, (2,), custom_modules=custom_modules)
    assert all(m.training for m in model.modules())
    assert dict(torch.nn.modules.module._global_forward_hooks) == hooks_before
    assert not model[0]._forward_hooks and not model[0]._forward_pre_hooks


def test_empty_mapping_equals_none_and_nothing_leaks():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    plain = crawl_module(model, (2,))
    assert crawl_module(model, (2,), custom_modules={}) == plain
    handlers = {nn.Linear: ModuleHandler(lambda call: {"module_flops": 1})}
    snapshot = dict(handlers)
    crawl_module(model, (2,), custom_modules=handlers)
    assert handlers == snapshot  # the caller's mapping is not mutated
    assert crawl_module(model, (2,)) == plain  # a later analysis is unaffected


def test_snapshot_taken_at_entry():
    seen = []

    def estimate(call):
        seen.append(type(call.module).__name__)
        handlers.clear()  # mutating the caller's mapping mid-analysis changes nothing
        return {}

    handlers = {nn.Linear: ModuleHandler(estimate)}
    crawl_module(nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)), (2,), custom_modules=handlers)
    assert seen == ["Linear", "Linear"]


class Base(nn.Module):
    pass


class Left(Base):
    pass


class Right(Base):
    pass


class Diamond(Left, Right):
    pass


def test_mro_resolution_diamond():
    handlers = {cls: f"{cls.__name__}" for cls in (nn.Module, Base, Right, Left)}
    assert resolve_handler(Diamond, handlers) == "Left"
    reordered = {cls: handlers[cls] for cls in (Left, Right, Base, nn.Module)}
    assert resolve_handler(Diamond, reordered) == "Left"
    assert resolve_handler(Diamond, {**handlers, Diamond: "Diamond"}) == "Diamond"


def test_virtual_subclass_does_not_match():
    class Marker(abc.ABC):  # noqa: B024
        pass

    Marker.register(nn.Linear)
    assert issubclass(nn.Linear, Marker)
    assert resolve_handler(nn.Linear, {Marker: "marker"}) is None


def test_validation_returns_snapshot():
    handler = ModuleHandler(_noop, frozenset({"macs"}))
    assert validate_custom_modules(None) == {}
    assert validate_custom_modules({nn.Linear: handler}) == {nn.Linear: handler}


def test_keyword_call_reaches_callback_unchanged():
    calls = []
    x = torch.ones(1, 4)
    crawl_module(
        nn.Linear(4, 2),
        kwargs={"input": x},
        custom_modules={nn.Linear: ModuleHandler(lambda call: calls.append(call) or {})},
    )
    (call,) = calls
    assert call.args == ()
    assert call.kwargs["input"] is x


def test_callback_runs_in_eval_no_grad_without_operator_counting():
    state = {}

    def estimate(call):
        state["grad"] = torch.is_grad_enabled()
        state["training"] = [m.training for m in call.module.modules()]
        torch.ones(64, 64) @ torch.ones(64, 64)  # the callback's own work is never counted
        return {"module_flops": 0, "macs": 0, "dmas": 0}

    model = nn.Sequential(nn.Linear(2, 2)).train()
    report = crawl_module(model, (2,), custom_modules={nn.Sequential: ModuleHandler(estimate)})
    assert state == {"grad": False, "training": [False, False]}
    assert "aten.mm" not in report["operator_flops"]["by_operator"]
    assert not [d for d in report["diagnostics"] if d["code"] == "unestimated_functional_work"]
    assert model.training
