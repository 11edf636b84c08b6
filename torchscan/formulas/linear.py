"""Linear layers (formulas.md A.5.2): ``nn.Linear`` and subclasses running its native forward."""

from __future__ import annotations

import math
from typing import Any

from torch import Tensor, nn

from torchscan.formulas.native import require_native_forward
from torchscan.formulas.registry import dmas, flops, macs, receptive_field
from torchscan.formulas.tensors import call_tensors, own_tensor, param_count, require_dense, untouched

NATIVE = (nn.Linear,)


def _check(module: nn.Module, inp: Tensor, out: Tensor) -> None:
    require_native_forward(module, NATIVE)
    require_dense(inp, out)


@flops.register(*NATIVE)
def linear_flops(module: nn.Linear, inputs: tuple[Any, ...], output: Any) -> int:
    """``V·F_out·max(0, 2·F_in − 1) + [bias]·V·F_out`` with ``V = prod(input.shape[:-1])``."""
    inp, out = call_tensors(inputs, output)
    _check(module, inp, out)
    vectors = math.prod(inp.shape[:-1])
    dot = max(0, 2 * module.in_features - 1)
    bias = int(own_tensor(module, "bias") is not None)
    return vectors * module.out_features * (dot + bias)


@macs.register(*NATIVE)
def linear_macs(module: nn.Linear, inp: Tensor, out: Tensor) -> int:
    """``F_in · Nout``: one multiply-accumulate per term of each output's dot product."""
    _check(module, inp, out)
    return module.in_features * out.numel()


@dmas.register(*NATIVE)
def linear_dmas(module: nn.Linear, inp: Tensor, out: Tensor) -> int:
    """``N + P + Nout``: read the input and the parameters, write the output."""
    _check(module, inp, out)
    if untouched(inp, out):
        return 0
    return inp.numel() + param_count(module) + out.numel()


@receptive_field.register(*NATIVE)
def linear_rf(module: nn.Linear, inp: Tensor, out: Tensor) -> tuple[float, float, float]:
    """``(1, 1, 0)``: a linear layer mixes features, not spatial positions."""
    _check(module, inp, out)
    return 1.0, 1.0, 0.0
