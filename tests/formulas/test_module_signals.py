"""Signals of the module formulas: unrecognised types, unsupported configurations, native checks,
dense-tensor checks and the first-tensor walk of the public functions."""

from __future__ import annotations

import math
import re
import warnings
from collections import OrderedDict
from typing import Any

import pytest
import torch
from torch import nn

from torchscan.formulas import registry
from torchscan.formulas.tensors import first_tensor
from torchscan.modules import module_dmas, module_flops, module_macs, module_rf

PRIMITIVE = "Primitive estimates require exact native types with unchanged forward methods."
LAYOUT = "Layout estimates require unchanged native forwards."
DENSE = "Module formulas require real, dense, strided tensors."


def all_metrics(module: nn.Module, x: torch.Tensor, out: torch.Tensor) -> tuple[Any, ...]:
    return (
        module_flops(module, (x,), out),
        module_macs(module, x, out),
        module_dmas(module, x, out),
        module_rf(module, x, out),
    )


# --- unrecognised module types -----------------------------------------------------------------


class Custom(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class OverriddenLinear(nn.Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) * 2


class OverriddenReLU6(nn.ReLU6):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class PlainLinear(nn.Linear):
    """A subclass that keeps the native forward: still the Linear family."""


class PlainSoftplus(nn.Softplus):
    """A subclass of a newer family: not the exact native type."""


class PlainReflectionPad(nn.ReflectionPad1d):
    pass


class PlainGroupNorm(nn.GroupNorm):
    pass


def replaced_forward(module: nn.Module) -> nn.Module:
    module.forward = lambda x: x  # type: ignore[method-assign]
    return module


@pytest.mark.parametrize(
    ("module", "name"),
    [
        pytest.param(Custom(), "Custom", id="custom"),
        pytest.param(nn.Dropout2d(), "Dropout2d", id="dropout2d-not-a-dropout-subclass"),
        pytest.param(nn.InstanceNorm1d(4), "InstanceNorm1d", id="instancenorm"),
        pytest.param(OverriddenLinear(3, 3), "OverriddenLinear", id="old-family-overridden-forward"),
        pytest.param(OverriddenReLU6(), "OverriddenReLU6", id="relu6-matched-before-hardtanh"),
        pytest.param(replaced_forward(nn.Conv1d(4, 4, 1)), "Conv1d", id="old-family-instance-forward"),
        pytest.param(replaced_forward(nn.BatchNorm1d(4)), "BatchNorm1d", id="batchnorm-instance-forward"),
        pytest.param(replaced_forward(nn.LayerNorm(3)), "LayerNorm", id="layernorm-instance-forward"),
        pytest.param(replaced_forward(nn.Identity()), "Identity", id="identity-instance-forward"),
    ],
)
def test_unrecognised_types_warn_and_return_defaults(module: nn.Module, name: str) -> None:
    """A.1: ``UserWarning("Module type not supported: <ClassName>")`` and 0 / (1.0, 1.0, 0.0)."""
    x = torch.ones(2, 4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # whatever the module itself warns about
        out = module(x)
    with pytest.warns(UserWarning) as caught:
        assert all_metrics(module, x, out) == (0, 0, 0, (1.0, 1.0, 0.0))
    messages = [str(w.message) for w in caught]
    assert messages == [f"Module type not supported: {name}"] * 4


def test_changed_forward_of_old_family_raises_not_recognised_in_registry() -> None:
    """The crawler-facing signal: the formula raises ``NotRecognised``, not ``NotImplementedError``."""
    module, x = OverriddenLinear(4, 4), torch.ones(1, 4)
    formula = registry.flops.lookup(OverriddenLinear)
    assert formula is not None
    with pytest.raises(registry.NotRecognised):
        formula(module, (x,), module(x))
    assert not issubclass(registry.NotRecognised, NotImplementedError)


def test_subclass_with_native_forward_is_still_the_old_family() -> None:
    module, x = PlainLinear(3, 2), torch.ones(1, 3)
    assert all_metrics(module, x, module(x)) == (12, 6, 13, (1.0, 1.0, 0.0))  # as C4


@pytest.mark.parametrize(
    ("module", "x", "reason"),
    [
        pytest.param(PlainSoftplus(), torch.ones(2, 4), PRIMITIVE, id="softplus-subclass"),
        pytest.param(
            replaced_forward(nn.Softplus()), torch.ones(2, 4), PRIMITIVE, id="softplus-instance-forward"
        ),
        pytest.param(
            replaced_forward(nn.Softmax(-1)), torch.ones(2, 4), PRIMITIVE, id="softmax-instance-forward"
        ),
        pytest.param(replaced_forward(nn.GELU()), torch.ones(2, 4), PRIMITIVE, id="gelu-instance-forward"),
        pytest.param(PlainGroupNorm(2, 4), torch.ones(2, 4, 3), PRIMITIVE, id="groupnorm-subclass"),
        pytest.param(PlainReflectionPad(1), torch.ones(2, 4), LAYOUT, id="pad-subclass"),
        pytest.param(
            replaced_forward(nn.Embedding(4, 2)), torch.ones(2, dtype=torch.long), LAYOUT, id="embedding"
        ),
    ],
)
def test_newer_families_require_exact_native_types(module: nn.Module, x: torch.Tensor, reason: str) -> None:
    """A.3: subclasses and replaced forwards of newer families are unsupported configurations."""
    out = module(x)
    for call in (
        lambda: module_flops(module, (x,), out),
        lambda: module_macs(module, x, out),
        lambda: module_dmas(module, x, out),
        lambda: module_rf(module, x, out),
    ):
        with pytest.raises(NotImplementedError, match=f"^{re.escape(reason)}$"):
            call()


# --- unsupported configurations ----------------------------------------------------------------


def _with_weight(module: nn.Module, *shape: int) -> nn.Module:
    module.weight = nn.Parameter(torch.ones(*shape))
    return module


def _with_mode(mode: str) -> nn.Module:
    module = nn.Upsample(size=4)
    module.mode = mode
    return module


UNSUPPORTED = [
    # (module, input, metrics that raise, reason)
    (
        nn.GELU(approximate="sigmoid"),
        (2, 4),
        "fmdr",
        "GELU estimates support only 'none' and 'tanh' approximations.",
    ),
    (nn.GLU(dim=2), (2, 4), "fmdr", "GLU estimates require a valid dimension with an even input size."),
    (nn.GLU(dim=-1), (2, 3), "fmdr", "GLU estimates require a valid dimension with an even input size."),
    (nn.RReLU().train(), (2, 4), "f", "RReLU FLOPs cover evaluation calls only."),
    (nn.LayerNorm(0), (2, 0), "f", "LayerNorm FLOPs require a nonempty normalized row."),
    (
        nn.LayerNorm(4, eps=math.inf),
        (2, 4),
        "fmdr",
        "Normalization estimates require a finite scalar epsilon.",
    ),
    (
        nn.GroupNorm(2, 4, eps=math.nan),
        (2, 4, 3),
        "fmdr",
        "Normalization estimates require a finite scalar epsilon.",
    ),
    (
        _with_weight(nn.LayerNorm(4), 5),
        (2, 4),
        "fmdr",
        "Normalization parameters must have the native shape.",
    ),
    (
        _with_weight(nn.GroupNorm(2, 4), 2),
        (2, 4, 3),
        "fmdr",
        "Normalization parameters must have the native shape.",
    ),
    (
        nn.GroupNorm(2, 4),
        (2, 6, 3),
        "fmdr",
        "GroupNorm estimates require matching channels and a nonempty normalized group.",
    ),
    (
        nn.GroupNorm(2, 4),
        (2, 4, 0),
        "fmdr",
        "GroupNorm estimates require matching channels and a nonempty normalized group.",
    ),
    (nn.RMSNorm(3), (2, 4), "fmdr", "RMSNorm estimates require matching nonempty normalized rows."),
    (nn.RMSNorm(0), (2, 0), "fmdr", "RMSNorm estimates require matching nonempty normalized rows."),
    (
        nn.Embedding(10, 4, max_norm=1.0),
        (2,),
        "fmdr",
        "Embedding estimates do not cover in-place weight renormalization.",
    ),
    (
        _with_weight(nn.Embedding(10, 4), 5, 4),
        (2,),
        "fmdr",
        "Embedding estimates require native weight geometry.",
    ),
    (_with_mode("bogus"), (1, 1, 2, 2), "fmdr", "Unsupported native interpolation mode."),
]


@pytest.mark.parametrize(
    ("module", "shape", "raising", "reason"),
    [pytest.param(*row, id=row[3][:24] + f"-{i}") for i, row in enumerate(UNSUPPORTED)],
)
def test_unsupported_configurations_raise_the_spec_reason(
    module: nn.Module, shape: tuple[int, ...], raising: str, reason: str
) -> None:
    """Reasons naming "FLOPs" concern FLOPs only; "estimates" reasons concern every metric."""
    dtype = torch.long if isinstance(module, nn.Embedding) else torch.float32
    x = torch.ones(*shape, dtype=dtype)
    out = torch.ones(*shape)  # formulas never need the module to have run successfully
    calls = {
        "f": lambda: module_flops(module, (x,), out),
        "m": lambda: module_macs(module, x, out),
        "d": lambda: module_dmas(module, x, out),
        "r": lambda: module_rf(module, x, out),
    }
    for key, call in calls.items():
        if key in raising:
            with pytest.raises(NotImplementedError, match=f"^{re.escape(reason)}$") as info:
                call()
            assert isinstance(info.value, registry.UnsupportedConfiguration)
        else:
            call()


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "area"])
def test_interpolating_modes_need_floating_inputs_for_flops(mode: str) -> None:
    """C12: bilinear/bicubic/area upsampling of uint8 has no FLOPs estimate; other metrics stay defined."""
    module = nn.Upsample(size=4, mode=mode)
    x, out = torch.ones(1, 1, 2, 2, dtype=torch.uint8), torch.ones(1, 1, 4, 4, dtype=torch.uint8)
    with pytest.raises(NotImplementedError, match=r"^Interpolation FLOPs require floating inputs\.$"):
        module_flops(module, (x,), out)
    assert module_dmas(module, x, out) > 0


# --- dense real tensors ------------------------------------------------------------------------


def _sparse() -> torch.Tensor:
    return torch.sparse_coo_tensor(
        torch.tensor([[0, 1], [1, 2]]), torch.ones(2), (3, 3), check_invariants=True
    )


def _nested() -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the nested-tensor prototype warning
        return torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(1, 3)])


NON_DENSE = {
    "complex": lambda: torch.ones(3, 3, dtype=torch.complex64),
    "sparse": _sparse,
    "nested": _nested,
}


@pytest.mark.parametrize("kind", NON_DENSE)
def test_non_dense_inputs_are_unsupported(kind: str) -> None:
    """A.1: complex, sparse and nested inputs make the call an unsupported configuration; truth.md 6
    counts a nested call of a row-wise family (ReLU) on its rows, see the next test."""
    x = NON_DENSE[kind]()
    cases = [(nn.ReflectionPad1d(1), "Layout estimates require dense real tensors.")]
    if kind != "nested":
        cases.append((nn.ReLU(), DENSE))
    for module, reason in cases:
        with pytest.raises(NotImplementedError, match=f"^{re.escape(reason)}$"):
            module_flops(module, (x,), x)
        with pytest.raises(NotImplementedError, match=f"^{re.escape(reason)}$"):
            module_dmas(module, x, x)


def test_row_wise_families_count_a_nested_call_on_its_rows() -> None:
    """truth.md 6: 3 rows of 3 (lengths 2 and 1) count as the dense (3, 3) call."""
    x = _nested()
    dense = torch.ones(3, 3)
    for module in (nn.ReLU(), nn.Identity(), nn.Flatten(), nn.Linear(3, 3)):
        out = module(x) if not isinstance(module, nn.Flatten) else x
        dense_out = module(dense)
        if isinstance(module, nn.Flatten):
            # Flatten is not row-wise (it merges the ragged dimension): FLOPs 0 whatever, DMAs unsupported
            assert module_flops(module, (x,), x) == 0
            with pytest.raises(NotImplementedError, match=f"^{re.escape(DENSE)}$"):
                module_dmas(module, x, x)
            continue
        assert module_flops(module, (x,), out) == module_flops(module, (dense,), dense_out)
        assert module_macs(module, x, out) == module_macs(module, dense, dense_out)
        assert module_dmas(module, x, out) == module_dmas(module, dense, dense_out)
    # ReLU: 9 elements, 1 FLOP each, read and written once
    assert (module_flops(nn.ReLU(), (x,), x), module_dmas(nn.ReLU(), x, x)) == (9, 18)


@pytest.mark.parametrize("kind", NON_DENSE)
@pytest.mark.parametrize("module", [nn.Identity(), nn.Flatten()], ids=["identity", "flatten"])
def test_identity_and_flatten_flops_are_zero_whatever_the_input(kind: str, module: nn.Module) -> None:
    x = NON_DENSE[kind]()
    assert module_flops(module, (x,), x) == 0
    if kind == "nested" and isinstance(module, nn.Identity):
        assert module_dmas(module, x, x) == 9  # truth.md 6: row-wise, its 9 elements read once
        return
    with pytest.raises(NotImplementedError, match=f"^{re.escape(DENSE)}$"):
        module_dmas(module, x, x)


def test_complex_linear_is_unsupported() -> None:
    """C21: a complex Linear call has no module FLOPs."""
    module = nn.Linear(2, 1, dtype=torch.complex64)
    x = torch.ones(1, 2, dtype=torch.complex64)
    with pytest.raises(NotImplementedError, match=f"^{re.escape(DENSE)}$"):
        module_flops(module, (x,), module(x))


# --- inputs of the public functions ------------------------------------------------------------


def test_first_tensor_walks_depth_first() -> None:
    a, b, c = torch.ones(1), torch.ones(2), torch.ones(3)
    assert first_tensor(a) is a
    assert first_tensor((None, [1, {"k": b}], c)) is b
    assert first_tensor(OrderedDict(x=None, y=(c, a))) is c
    assert first_tensor([{}, (), "text", 3]) is None


def test_public_functions_accept_containers() -> None:
    """``module_flops`` takes the whole ordered inputs and output; a lone tensor is a one-element tuple."""
    module, x = nn.MaxPool2d(2, return_indices=True), torch.ones(1, 2, 8, 8)
    out = module(x)  # (values, indices): the first tensor is the values
    assert module_flops(module, x, out) == module_flops(module, (x,), out) == 96
    assert module_dmas(module, [x], out) == 32 * 6  # K + 1 + return_indices per output
    with pytest.raises(ValueError, match="output tensor"):
        module_macs(module, x, None)


class _LateRegistered(nn.Module):
    """A leaf type that gets its formulas only after a first lookup (test-only)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def test_leaf_formula_plans_follow_later_registrations() -> None:
    assert registry.leaf_formulas(nn.Linear) is not None
    assert registry.leaf_formulas(_LateRegistered) is None
    registry.flops.register(_LateRegistered)(lambda module, inputs, output: 0)
    assert registry.leaf_formulas(_LateRegistered) is None  # three tables still lack it
    registry.macs.register(_LateRegistered)(lambda module, inp, out: 0)
    registry.dmas.register(_LateRegistered)(lambda module, inp, out: 0)
    registry.receptive_field.register(_LateRegistered)(lambda module, inp, out: (1.0, 1.0, 0.0))
    plan = registry.leaf_formulas(_LateRegistered)
    assert plan is not None and len(plan) == 4
