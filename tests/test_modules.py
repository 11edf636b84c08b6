"""``torchscan.modules``: one rule for a call the three compute functions cannot count (truth.md 6).

An unrecognised module type warns ``Module type not supported: <Class>`` and gives 0 from all three,
whatever the arguments; a recognised type raises from all three (``ValueError`` when the call
exposes no input or output tensor, ``NotImplementedError`` for an unsupported configuration).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from torchscan.modules import module_dmas, module_flops, module_macs

FUNCTIONS = (module_flops, module_macs, module_dmas)


def _outcome(function: Callable[..., int], module: nn.Module, inputs: Any, out: Any) -> str:
    """``warn0``, ``value``, or the name of the exception class the public contract promises."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = function(module, inputs, out)
        except NotImplementedError:
            return "NotImplementedError"
        except ValueError:
            return "ValueError"
    unsupported = [w for w in caught if str(w.message).startswith("Module type not supported: ")]
    if unsupported:
        assert value == 0 and issubclass(unsupported[0].category, UserWarning)
        return "warn0"
    assert isinstance(value, int)
    return "value"


class Unknown(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class ChangedLinear(nn.Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:  # not the family's forward: not recognised
        return super().forward(x) * 2


x = torch.ones(2, 4)
_CASES: dict[str, tuple[nn.Module, Any, Any, str]] = {
    "unknown, tensors": (Unknown(), x, x, "warn0"),
    "unknown, None inputs": (Unknown(), None, None, "warn0"),  # module_flops raised TypeError before
    "unknown, an int": (Unknown(), 3, None, "warn0"),
    "changed forward": (ChangedLinear(4, 4), x, x, "warn0"),
    "linear, no output tensor": (nn.Linear(4, 4), x, None, "ValueError"),
    "linear, None inputs": (nn.Linear(4, 4), None, x, "ValueError"),  # module_flops: TypeError before
    "identity, no output tensor": (nn.Identity(), x, None, "ValueError"),  # module_flops: 0 before
    "relu, empty tuples": (nn.ReLU(), (), (), "ValueError"),
    "linear, complex": (
        nn.Linear(4, 4, dtype=torch.complex64),
        torch.ones(2, 4, dtype=torch.complex64),
        torch.ones(2, 4, dtype=torch.complex64),
        "NotImplementedError",
    ),
    "attention in training mode": (
        nn.MultiheadAttention(4, 2),
        (torch.ones(3, 1, 4),) * 3,
        torch.ones(3, 1, 4),
        "NotImplementedError",
    ),
    "attention, None inputs": (nn.MultiheadAttention(4, 2).eval(), None, None, "NotImplementedError"),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_the_three_functions_treat_a_call_the_same_way(case: str) -> None:
    module, inputs, out, expected = _CASES[case]
    outcomes = [_outcome(function, module, inputs, out) for function in FUNCTIONS]
    assert outcomes == [expected] * 3


def test_the_message_names_the_class_and_points_at_the_caller() -> None:
    for function in FUNCTIONS:
        with pytest.warns(UserWarning, match="^Module type not supported: Unknown$") as caught:
            assert function(Unknown(), None, None) == 0
        assert caught[0].filename == __file__


_MODULES = (
    Unknown,
    lambda: nn.Linear(4, 4),
    nn.ReLU,
    nn.Identity,
    lambda: nn.Conv1d(2, 2, 1),
    lambda: ChangedLinear(4, 4),
    lambda: nn.LayerNorm(4),
    lambda: nn.MultiheadAttention(4, 2).eval(),
)
_ARGUMENTS = st.sampled_from(
    [None, 3, "text", (), [], {}, torch.ones(2, 4), (torch.ones(2, 4),), {"x": torch.ones(2, 4)}, (None,)]
)


@settings(max_examples=150, deadline=None)
@given(pick=st.integers(0, len(_MODULES) - 1), inputs=_ARGUMENTS, out=_ARGUMENTS)
def test_any_call_gets_one_kind_of_answer_from_all_three(pick: int, inputs: Any, out: Any) -> None:
    module = _MODULES[pick]()
    outcomes = {_outcome(function, module, inputs, out) for function in FUNCTIONS}
    assert len(outcomes) == 1, outcomes
