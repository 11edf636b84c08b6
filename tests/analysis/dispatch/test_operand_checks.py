"""The operand checks of the operator observer: the one-pass check agrees with the two separate ones."""

from __future__ import annotations

import warnings

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchscan.analysis.dispatch import operand_checks


def _nested() -> torch.Tensor:
    with warnings.catch_warnings():  # the strided nested layout is a prototype: PyTorch says so
        warnings.simplefilter("ignore", UserWarning)
        return torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])


_OPERANDS = [
    torch.ones(2, 3),
    torch.ones(2, dtype=torch.complex64),
    torch.eye(3).to_sparse(),
    _nested(),
    [1, 2],
    [torch.ones(2), torch.ones(2, dtype=torch.complex64)],
    [None, torch.eye(2).to_sparse()],
    (torch.ones(1),),
    2.5,
    1j,
    None,
    False,
    [],
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(range(len(_OPERANDS))), max_size=6))
def test_operand_flags_agree_with_the_two_separate_checks(picks: list[int]) -> None:
    values = [_OPERANDS[i] for i in picks]
    expected = (operand_checks.UNSUPPORTED_LAYOUT if operand_checks.any_unsupported_layout(values) else 0) | (
        operand_checks.COMPLEX_VALUE if operand_checks.any_complex(values) else 0
    )
    assert operand_checks.operand_flags(values) == expected


def test_operator_checks_skip_int_lists_but_not_optional_tensor_lists() -> None:
    sparse = torch.eye(3).to_sparse()
    assert operand_checks.any_unsupported_layout(([1, 2, 3], [None, sparse]))
    assert operand_checks.any_unsupported_layout(((sparse,),))
    assert not operand_checks.any_unsupported_layout(([1, 2, 3], [None, torch.eye(3)], []))
    assert operand_checks.any_complex((torch.eye(2), [None, torch.eye(2, dtype=torch.complex64)], None))
