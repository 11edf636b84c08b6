"""Elementwise activations (formulas.md A.5.5-A.5.7): legacy, other native, GELU and GLU.

Legacy activations match by ``isinstance`` (``ReLU6`` before ``Hardtanh`` through the MRO) and treat a
changed forward as not recognised; every other activation must be the exact native type with an
unchanged forward. Costs count both branches of piecewise functions (never tensor values).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from torch import Tensor, nn

from torchscan.formulas.native import PRIMITIVE_REASON, require_exact_native, require_native_forward
from torchscan.formulas.registry import UnsupportedConfiguration, dmas, flops, macs, receptive_field
from torchscan.formulas.tensors import call_tensors, require_dense, untouched


class LegacyRow(NamedTuple):
    """One row of A.5.5: FLOPs per element and the DMA recipe."""

    cost: int
    reads: int  # input reads per element (Tanh reads its input twice)
    scalars: int  # scalar hyper-parameters read once (ELU alpha, LeakyReLU slope)
    inplace_aware: bool  # an in-place call writes no separate output


LEGACY: dict[type[nn.Module], LegacyRow] = {
    nn.ReLU: LegacyRow(1, 1, 0, True),
    nn.ReLU6: LegacyRow(2, 1, 0, True),
    nn.ELU: LegacyRow(6, 1, 1, True),
    nn.LeakyReLU: LegacyRow(4, 1, 1, True),
    nn.Sigmoid: LegacyRow(4, 1, 0, False),
    nn.Tanh: LegacyRow(6, 2, 0, False),
}

# A.5.6 (FLOPs per input element); GELU is added per approximation below.
NATIVE_COST: dict[type[nn.Module], int] = {
    nn.Hardtanh: 2,
    nn.Threshold: 2,
    nn.Hardshrink: 3,
    nn.Softsign: 3,
    nn.Hardsigmoid: 4,
    nn.PReLU: 4,
    nn.RReLU: 4,
    nn.Hardswish: 5,
    nn.Softshrink: 5,
    nn.SiLU: 5,
    nn.CELU: 7,
    nn.SELU: 7,
    nn.LogSigmoid: 7,
    nn.Softplus: 7,
    nn.Tanhshrink: 7,
    nn.Mish: 10,
}
# x·(1 + erf(x/√2))/2: divide, erf, add, 2 multiplies = 5. Tanh form x·(1 + tanh(c·(x + a·x³)))/2:
# cube 2, a·, +x, c·, tanh 6, +1, x·, /2 = 14.
GELU_COST = {"none": 5, "tanh": 14}

POINTWISE = (*NATIVE_COST, nn.GELU)
GELU_REASON = "GELU estimates support only 'none' and 'tanh' approximations."
RRELU_REASON = "RReLU FLOPs cover evaluation calls only."
GLU_REASON = "GLU estimates require a valid dimension with an even input size."

# --- legacy activations (A.5.5) ----------------------------------------------------------------


def _legacy(module: nn.Module, inp: Tensor, out: Tensor) -> LegacyRow:
    require_native_forward(module, tuple(LEGACY))
    require_dense(inp, out)
    return next(LEGACY[cls] for cls in type(module).__mro__ if cls in LEGACY)


@flops.register(*LEGACY)
def legacy_flops(module: nn.Module, inputs: tuple[Any, ...], output: Any) -> int:
    """``cost · N`` (ReLU 1, ReLU6 2, ELU 6, LeakyReLU 4, Sigmoid 4, Tanh 6)."""
    inp, out = call_tensors(inputs, output)
    return _legacy(module, inp, out).cost * inp.numel()


@macs.register(*LEGACY)
def legacy_macs(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """0: activations multiply-accumulate nothing."""
    _legacy(module, inp, out)
    return 0


@dmas.register(*LEGACY)
def legacy_dmas(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """Input reads, scalar hyper-parameters, and the output write unless the call is in place."""
    row = _legacy(module, inp, out)
    if untouched(inp, out):
        return 0
    writes = 0 if row.inplace_aware and getattr(module, "inplace", False) else out.numel()
    return row.reads * inp.numel() + row.scalars + writes


@receptive_field.register(*LEGACY)
def legacy_rf(module: nn.Module, inp: Tensor, out: Tensor) -> tuple[float, float, float]:
    """``(1, 1, 0)``: pointwise."""
    _legacy(module, inp, out)
    return 1.0, 1.0, 0.0


# --- other native activations and GELU (A.5.6, A.5.7) ------------------------------------------


def _pointwise(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """Validate the call and return the FLOPs per input element."""
    require_exact_native(module, POINTWISE, PRIMITIVE_REASON)
    require_dense(inp, out)
    if isinstance(module, nn.GELU):
        if module.approximate not in GELU_COST:
            raise UnsupportedConfiguration(GELU_REASON)
        return GELU_COST[module.approximate]
    return NATIVE_COST[type(module)]


@flops.register(*POINTWISE)
def pointwise_flops(module: nn.Module, inputs: tuple[Any, ...], output: Any) -> int:
    """``cost · N``; ``RReLU`` is covered in evaluation mode only (its training slope is random)."""
    inp, out = call_tensors(inputs, output)
    cost = _pointwise(module, inp, out)
    if isinstance(module, nn.RReLU) and module.training:
        raise UnsupportedConfiguration(RRELU_REASON)
    return cost * inp.numel()


@macs.register(*POINTWISE)
def pointwise_macs(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """0: activations multiply-accumulate nothing."""
    _pointwise(module, inp, out)
    return 0


@dmas.register(*POINTWISE)
def pointwise_dmas(module: nn.Module, inp: Tensor, out: Tensor) -> int:
    """``N + Nout`` (an in-place call still writes its output) plus PReLU's weight elements."""
    _pointwise(module, inp, out)
    if untouched(inp, out):
        return 0
    weight = module.weight.numel() if isinstance(module, nn.PReLU) else 0
    return inp.numel() + out.numel() + weight


@receptive_field.register(*POINTWISE)
def pointwise_rf(module: nn.Module, inp: Tensor, out: Tensor) -> tuple[float, float, float]:
    """``(1, 1, 0)``: pointwise."""
    _pointwise(module, inp, out)
    return 1.0, 1.0, 0.0


# --- GLU (A.5.7) -------------------------------------------------------------------------------


def _glu(module: nn.GLU, inp: Tensor, out: Tensor) -> None:
    require_exact_native(module, (nn.GLU,), PRIMITIVE_REASON)
    require_dense(inp, out)
    if not -inp.dim() <= module.dim < inp.dim() or inp.shape[module.dim] % 2:
        raise UnsupportedConfiguration(GLU_REASON)


@flops.register(nn.GLU)
def glu_flops(module: nn.GLU, inputs: tuple[Any, ...], output: Any) -> int:
    """``5 · Nout`` with ``Nout = N / 2``: a sigmoid (4) and a multiply per output."""
    inp, out = call_tensors(inputs, output)
    _glu(module, inp, out)
    return 5 * (inp.numel() // 2)


@macs.register(nn.GLU)
def glu_macs(module: nn.GLU, inp: Tensor, out: Tensor) -> int:
    """0."""
    _glu(module, inp, out)
    return 0


@dmas.register(nn.GLU)
def glu_dmas(module: nn.GLU, inp: Tensor, out: Tensor) -> int:
    """``N + Nout``."""
    _glu(module, inp, out)
    return inp.numel() + inp.numel() // 2


@receptive_field.register(nn.GLU)
def glu_rf(module: nn.GLU, inp: Tensor, out: Tensor) -> None:
    """Not applicable: GLU halves a feature axis, it has no spatial window."""
    _glu(module, inp, out)
    return None
