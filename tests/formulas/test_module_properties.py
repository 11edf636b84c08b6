"""Property tests of the module formulas over random shapes (hypothesis)."""

from __future__ import annotations

import math
import warnings

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from torchscan.modules import module_dmas, module_flops, module_macs, module_rf


@settings(max_examples=60, deadline=None)
@given(
    batch=st.lists(st.integers(0, 4), max_size=2),
    f_in=st.integers(0, 9),
    f_out=st.integers(1, 9),
    bias=st.booleans(),
)
def test_linear_flops_closed_form(batch: list[int], f_in: int, f_out: int, bias: bool) -> None:
    """``V·F_out·max(0, 2·F_in − 1) + [bias]·V·F_out`` for random shapes (meta device)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch: "Initializing zero-element tensors is a no-op"
        module = nn.Linear(f_in, f_out, bias=bias, device="meta")
    x = torch.empty(*batch, f_in, device="meta")
    vectors = math.prod(batch)
    expected = vectors * f_out * max(0, 2 * f_in - 1) + bias * vectors * f_out
    assert module_flops(module, (x,), module(x)) == expected
    assert module_macs(module, x, module(x)) == f_in * vectors * f_out


FAMILIES = [
    lambda c: nn.Conv2d(c, 2 * c, 3, padding=1, groups=c),
    lambda c: nn.ConvTranspose2d(c, c, 2, stride=2),
    lambda c: nn.BatchNorm2d(c),
    lambda c: nn.GroupNorm(1, c),
    lambda c: nn.LayerNorm(4),
    lambda c: nn.MaxPool2d(2, ceil_mode=True),
    lambda c: nn.AvgPool2d(3, 1, 1),
    lambda c: nn.AdaptiveAvgPool2d((3, 2)),
    lambda c: nn.AdaptiveMaxPool2d(1),
    lambda c: nn.ReLU(),
    lambda c: nn.Hardswish(),
    lambda c: nn.GELU("tanh"),
    lambda c: nn.Softmax(1),
    lambda c: nn.LogSoftmax(-1),
    lambda c: nn.Dropout(0.3),
    lambda c: nn.Flatten(),
    lambda c: nn.ReflectionPad2d(1),
    lambda c: nn.ConstantPad2d((1, -1, 0, 2), 0.0),
    lambda c: nn.Upsample(scale_factor=2, mode="bilinear"),
    lambda c: nn.Upsample(scale_factor=2, mode="area"),
]


@settings(max_examples=80, deadline=None)
@given(
    family=st.integers(0, len(FAMILIES) - 1),
    batch=st.integers(0, 3),
    channels=st.integers(1, 4),
    height=st.integers(2, 7),
    training=st.booleans(),
)
def test_formulas_return_non_negative_ints(
    family: int, batch: int, channels: int, height: int, training: bool
) -> None:
    """Every count is a non-negative Python int; receptive triples are numbers or ``None``."""
    module = FAMILIES[family](channels).train(training)
    x = torch.ones(batch, channels, height, 4)
    if training and isinstance(module, nn.BatchNorm2d) and batch * height * 4 <= 1:
        return  # PyTorch refuses a single value per channel in training
    with torch.no_grad():
        out = module(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flops, macs, dmas, rf = (
            module_flops(module, (x,), out),
            module_macs(module, x, out),
            module_dmas(module, x, out),
            module_rf(module, x, out),
        )
    for value in (flops, macs, dmas):
        assert type(value) is int
        assert value >= 0
    assert rf is None or all(isinstance(v, float) for v in rf)
