"""Reference checks of the activation kernels, forward and backward (truth.md 1 and 5).

Reference (a). Each activation is re-implemented from element-wise operators under
:class:`ElementaryCounter`:

* **forward**, from the formula PyTorch documents for it (``LeakyReLU(x) = max(0, x) + slope·min(0,
  x)``, ``Hardswish(x) = x·ReLU6(x + 3)/6``, ``CELU(x) = max(0, x) + min(0, α(exp(x/α) − 1))``, …),
  ``sigmoid`` as ``1/(1 + exp(−x))`` and ``tanh`` as ``(eᵘ − e⁻ᵘ)/(eᵘ + e⁻ᵘ)`` (formulas.md A.4.3:
  4 and 6), a selection of a computed value counting 1 (A.4.3);
* **backward**, the derivative the kernel evaluates (training-and-hardware.md 2), both branches of a
  piecewise derivative computed and one selected for free (the backward kernels' convention), times
  the incoming gradient — ``gelu_backward`` and ``log_sigmoid_backward`` follow the kernels' own
  algorithms (``x²`` computed once for the cube and the derivative; the forward's ``exp(−|x|)`` buffer).

The re-implementations' values are checked against ``torch.nn.functional`` and autograd; their counts
against the library's through real dispatch (in-place forms too). ``silu_backward`` and
``mish_backward`` are C++ composites, counted from their parts (not here).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from reference.elementary import elementary_count
from reference.harness import cases, library_count, seeded

Tensor = torch.Tensor


def sigmoid(x: Tensor) -> Tensor:
    return torch.reciprocal(torch.exp(-x) + 1)


def tanh(x: Tensor) -> Tensor:
    e, f = torch.exp(x), torch.exp(-x)
    return (e - f) / (e + f)


def relu6_shift(x: Tensor) -> Tensor:
    """``ReLU6(x + 3)`` (3 operations)."""
    return torch.clamp_max(torch.clamp_min(x + 3, 0), 6)


@dataclass
class Activation:
    """One activation: the functional call, its forward and backward kernels and references."""

    call: Callable[[Tensor], Tensor]
    forward: Callable[[Tensor], Tensor]
    kernel: str
    backward: Callable[[Tensor, Tensor, Tensor], Tensor] | None = None  # (x, y, grad) -> grad_x
    backward_kernel: str | None = None
    inplace: Callable[[Tensor], Tensor] | None = None


def _draw(rng: random.Random, x_like: Tensor) -> tuple[str, Activation]:
    name = rng.choice(
        [
            "relu",
            "hardtanh",
            "threshold",
            "hardshrink",
            "softshrink",
            "leaky_relu",
            "hardsigmoid",
            "hardswish",
            "prelu",
            "softplus",
            "celu",
            "elu",
            "selu",
            "log_sigmoid",
            "mish",
            "gelu",
            "gelu_tanh",
            "rrelu",
            "sigmoid",
            "tanh",
            "silu",
            "glu",
        ]
    )
    lo, hi = sorted((rng.uniform(-2, 0.5), rng.uniform(0.6, 3)))
    lam = rng.choice([0.5, rng.uniform(0.1, 1.0)])
    slope = rng.choice([0.01, rng.uniform(0.05, 0.5)])
    if name == "relu":
        return name, Activation(
            F.relu,
            lambda x: torch.clamp_min(x, 0),
            "relu",
            lambda x, y, g: torch.where(y > 0, g, 0.0),
            "threshold_backward",
            torch.relu_,
        )
    if name == "hardtanh":
        return name, Activation(
            lambda x: F.hardtanh(x, lo, hi),
            lambda x: torch.clamp_max(torch.clamp_min(x, lo), hi),
            "hardtanh",
            lambda x, y, g: torch.where(x > lo, torch.where(x < hi, g, 0.0), 0.0),
            "hardtanh_backward",
            lambda x: F.hardtanh(x, lo, hi, inplace=True),
        )
    if name == "threshold":
        value = rng.uniform(-1, 1)
        return name, Activation(
            lambda x: F.threshold(x, lo, value),
            lambda x: torch.where(x > lo, x, value),
            "threshold",
            lambda x, y, g: torch.where(x > lo, g, 0.0),
            "threshold_backward",
            lambda x: F.threshold(x, lo, value, inplace=True),
        )
    if name in ("hardshrink", "softshrink"):
        shrink: Callable[[Tensor], Tensor] = (
            (lambda x: torch.where(torch.abs(x) > lam, x, 0.0))
            if name == "hardshrink"
            else (lambda x: torch.sign(x) * torch.clamp_min(torch.abs(x) - lam, 0))
        )
        return name, Activation(
            lambda x: getattr(F, name)(x, lam),
            shrink,
            name,
            lambda x, y, g: torch.where(x > lam, g, torch.where(x < -lam, g, 0.0)),
            f"{name}_backward",
        )
    if name == "leaky_relu":
        return name, Activation(
            lambda x: F.leaky_relu(x, slope),
            lambda x: torch.clamp_min(x, 0) + slope * torch.clamp_max(x, 0),
            "leaky_relu",
            lambda x, y, g: torch.where(x > 0, g, g * slope),
            "leaky_relu_backward",
            lambda x: F.leaky_relu(x, slope, inplace=True),
        )
    if name == "hardsigmoid":
        return name, Activation(
            F.hardsigmoid,
            lambda x: relu6_shift(x) / 6,
            "hardsigmoid",
            lambda x, y, g: torch.where(x > -3, torch.where(x < 3, g / 6, 0.0), 0.0),
            "hardsigmoid_backward",
            lambda x: F.hardsigmoid(x, inplace=True),
        )
    if name == "hardswish":
        return name, Activation(
            F.hardswish,
            lambda x: x * relu6_shift(x) / 6,
            "hardswish",
            lambda x, y, g: torch.where(x < -3, 0.0, torch.where(x <= 3, g * (x / 3 + 0.5), g)),
            "hardswish_backward",
            lambda x: F.hardswish(x, inplace=True),
        )
    if name == "prelu":
        channels = x_like.shape[1] if x_like.dim() > 1 else 1
        weight = torch.rand(channels, dtype=torch.float64) * 0.5
        shaped = weight.reshape(
            [channels] + [1] * max(x_like.dim() - 2, 0) if x_like.dim() > 1 else [1] * x_like.dim()
        )
        return name, Activation(
            lambda x: F.prelu(x, weight.to(x.dtype)),
            lambda x: torch.clamp_min(x, 0) + shaped * torch.clamp_max(x, 0),
            "_prelu_kernel",
            # _prelu_kernel_backward's input gradient; its weight gradient x·g (where x ≤ 0) is computed too
            lambda x, y, g: _prelu_grads(x, g, shaped),
            "_prelu_kernel_backward",
        )
    if name == "softplus":
        beta, threshold = rng.choice([1.0, rng.uniform(0.5, 3)]), rng.choice([20.0, rng.uniform(0.5, 3)])

        def softplus_forward(x: Tensor) -> Tensor:
            bx = x * beta
            return torch.where(bx > threshold, x, torch.log(torch.exp(bx) + 1) / beta)

        def softplus_grad(x: Tensor, y: Tensor, g: Tensor) -> Tensor:
            bx = x * beta
            z = torch.exp(bx)
            return torch.where(bx > threshold, g, g * (z / (z + 1)))

        return name, Activation(
            lambda x: F.softplus(x, beta, threshold),
            softplus_forward,
            "softplus",
            softplus_grad,
            "softplus_backward",
        )
    if name == "celu":
        alpha = rng.uniform(0.3, 2)
        return name, Activation(
            lambda x: F.celu(x, alpha),
            lambda x: torch.clamp_min(x, 0) + torch.clamp_max((torch.exp(x / alpha) - 1) * alpha, 0),
            "celu",
            # elu_backward with α, scale 1 and input scale 1/α: the constant α·(1/α) is one scalar
            lambda x, y, g: g * torch.where(x > 0, 1.0, torch.exp(x * (1 / alpha)) * (alpha * (1 / alpha))),
            "elu_backward",
            lambda x: F.celu(x, alpha, inplace=True),
        )
    if name in ("elu", "selu"):
        alpha, scale = (
            (rng.uniform(0.3, 2), 1.0) if name == "elu" else (1.6732632423543772, 1.0507009873554805)
        )

        def elu_forward(x: Tensor) -> Tensor:
            body = torch.clamp_min(x, 0) + torch.clamp_max((torch.exp(x) - 1) * alpha, 0)
            return body * scale if scale != 1 else body

        return name, Activation(
            (lambda x: F.elu(x, alpha)) if name == "elu" else F.selu,
            elu_forward,
            "elu",
            # input scale 1: no multiply by it, as in the forward (B.8 counts it only when ≠ 1)
            lambda x, y, g: g * torch.where(x > 0, scale, torch.exp(x) * (scale * alpha)),
            "elu_backward",
            (lambda x: F.elu(x, alpha, inplace=True))
            if name == "elu"
            else (lambda x: F.selu(x, inplace=True)),
        )
    if name == "log_sigmoid":

        def log_sigmoid_grad(x: Tensor, y: Tensor, g: Tensor) -> Tensor:
            z = BUFFERS[id(x)]  # the forward's buffer exp(−|x|), an input of the kernel
            negative = x < 0
            max_deriv, sign = torch.where(negative, 1.0, 0.0), torch.where(negative, 1.0, -1.0)
            return (max_deriv - sign * (z / (z + 1))) * g

        return name, Activation(
            F.logsigmoid,
            lambda x: torch.clamp_max(x, 0) - torch.log(torch.exp(-torch.abs(x)) + 1),
            "log_sigmoid_forward",
            log_sigmoid_grad,
            "log_sigmoid_backward",
        )
    if name == "mish":
        return name, Activation(
            F.mish,
            lambda x: x * tanh(torch.log(torch.exp(x) + 1)),
            "mish",
            inplace=lambda x: F.mish(x, inplace=True),
        )
    if name in ("gelu", "gelu_tanh"):
        if name == "gelu":
            return name, Activation(
                F.gelu,
                lambda x: x * 0.5 * (torch.erf(x * math.sqrt(0.5)) + 1),
                "gelu",
                _gelu_grad,
                "gelu_backward",
            )
        return name, Activation(
            lambda x: F.gelu(x, approximate="tanh"),
            lambda x: x * 0.5 * (tanh((x + x * x * x * 0.044715) * math.sqrt(2 / math.pi)) + 1),
            "gelu",
            _gelu_tanh_grad,
            "gelu_backward",
        )
    if name == "rrelu":
        lower, upper = sorted((rng.uniform(0.05, 0.2), rng.uniform(0.25, 0.4)))
        mid = (lower + upper) / 2
        return name, Activation(
            lambda x: F.rrelu(x, lower, upper, training=False),
            lambda x: torch.clamp_min(x, 0) + mid * torch.clamp_max(x, 0),
            "rrelu_with_noise",
            lambda x, y, g: torch.where(x > 0, g, g * mid),
            "rrelu_with_noise_backward",
        )
    if name in ("sigmoid", "tanh", "silu"):
        forward = {"sigmoid": sigmoid, "tanh": tanh, "silu": lambda x: x * sigmoid(x)}[name]
        grad = {
            "sigmoid": lambda x, y, g: g * (y * (1 - y)),
            "tanh": lambda x, y, g: g * (1 - y * y),
            "silu": None,
        }[name]
        return name, Activation(
            getattr(torch, name) if name != "silu" else F.silu,
            forward,
            name,
            grad,
            f"{name}_backward" if grad is not None else None,
            getattr(torch, f"{name}_") if name != "silu" else (lambda x: F.silu(x, inplace=True)),
        )
    # glu along a dim of even size
    dim = next((d for d in range(x_like.dim()) if x_like.shape[d] % 2 == 0), None)
    if dim is None:
        return _draw(rng, x_like)

    def glu_grad(x: Tensor, y: Tensor, g: Tensor) -> Tensor:
        a, b = x.chunk(2, dim)
        s = sigmoid(b)
        return torch.cat([g * s, g * (a * (s * (1 - s)))], dim)

    return name, Activation(
        lambda x: F.glu(x, dim),
        lambda x: x.chunk(2, dim)[0] * sigmoid(x.chunk(2, dim)[1]),
        "glu",
        glu_grad,
        "glu_backward",
    )


BUFFERS: dict[int, Tensor] = {}


def _prelu_grads(x: Tensor, g: Tensor, weight: Tensor) -> Tensor:
    positive = x > 0
    grad_input = torch.where(positive, g, weight * g)
    torch.where(positive, 0.0, x * g)  # the weight gradient per element, summed by a later kernel
    return grad_input


def _gelu_grad(x: Tensor, y: Tensor, g: Tensor) -> Tensor:
    """``Φ(x) + x·φ(x)`` as the kernel evaluates it: 4 + 4 + 3."""
    cdf = (torch.erf(x * math.sqrt(0.5)) + 1) * 0.5
    pdf = torch.exp(x * x * -0.5) * (1 / math.sqrt(2 * math.pi))
    return g * (cdf + x * pdf)


def _gelu_tanh_grad(x: Tensor, y: Tensor, g: Tensor) -> Tensor:
    """The tanh approximation's derivative as the kernel evaluates it, ``x²`` shared."""
    beta, kappa = math.sqrt(2 / math.pi), 0.044715
    x_sq = x * x
    inner = (x + x_sq * x * kappa) * beta
    t = tanh(inner)
    left = x * 0.5
    right = t + 1
    left_derivative = right * 0.5
    right_derivative = left * (1 - t * t) * beta * (x_sq * (3 * kappa) + 1)
    return g * (left_derivative + right_derivative)


def _shape(rng: random.Random) -> list[int]:
    return [
        rng.choice([0, 1, 2, 3, 4]) if rng.random() < 0.1 else rng.randint(1, 4)
        for _ in range(rng.randint(0, 3))
    ]


def kernel_flops(counted: Any, kernel: str) -> int:
    return counted.operator(f"aten.{kernel}") + counted.operator(f"aten.{kernel}_")


@pytest.mark.parametrize(("seed", "rng"), cases("activation_kernels"))
def test_activation_kernels_forward_and_backward(seed: int, rng: random.Random) -> None:
    generator = seeded(rng)
    dtype = rng.choice([torch.float32, torch.float64])
    x = torch.randn(_shape(rng), generator=generator, dtype=dtype) * 3
    name, act = _draw(rng, x)
    wide = x.to(torch.float64)
    if name == "log_sigmoid":
        BUFFERS[id(wide)] = torch.exp(-torch.abs(wide))
    y, forward = elementary_count(lambda: act.forward(wide))
    torch.testing.assert_close(act.call(wide), y)
    counted = library_count(lambda: act.call(x))
    assert counted.status == "complete", counted.diagnostics
    assert kernel_flops(counted, act.kernel) == forward.flops, (
        name,
        counted.by_operator,
        forward.by_operator,
    )
    if act.inplace is not None and rng.random() < 0.3:
        copy = x.clone()
        counted = library_count(lambda: act.inplace(copy))
        assert kernel_flops(counted, act.kernel) == forward.flops, (name, "in place", counted.by_operator)
    if act.backward is None:
        return
    leaf = x.clone().requires_grad_(True)
    out = act.call(leaf)
    grad = torch.randn(out.shape, generator=generator, dtype=dtype)
    y_wide, grad_wide = act.call(wide), grad.to(torch.float64)  # inputs of the backward kernel
    expected, backward = elementary_count(lambda: act.backward(wide, y_wide, grad_wide), free_selection=True)
    (autograd,) = torch.autograd.grad(act.call(wide.requires_grad_(True)), wide, grad.to(torch.float64))
    torch.testing.assert_close(expected, autograd)
    counted = library_count(lambda: out.backward(grad))
    assert counted.status == "complete", counted.diagnostics
    got = counted.operator(f"aten.{act.backward_kernel}")
    assert got == backward.flops, (name, counted.by_operator, backward.by_operator)
    BUFFERS.clear()


def test_elu_backward_from_its_result() -> None:
    """An in-place ELU's backward reads its result: ``g·where(y > 0, scale, is·(y + α·scale))`` with
    input scale 1: compare, add, ``g·``: 3 per element; CELU's input scale ``1/α`` multiplies once more."""
    for alpha, call, per_element in ((0.7, F.elu, 3), (0.7, F.celu, 4)):
        x = torch.randn(3, 5, dtype=torch.float64)
        leaf = x.clone().requires_grad_(True)
        out = call(leaf.clone(), alpha, inplace=True)
        grad = torch.randn(3, 5, dtype=torch.float64)
        y, scale = out.detach(), 1 / alpha if call is F.celu else 1.0

        def derivative(
            y: Tensor = y, scale: float = scale, alpha: float = alpha, grad: Tensor = grad
        ) -> Tensor:
            negative = (y + alpha) * scale if scale != 1 else y + alpha
            return grad * torch.where(y > 0, 1.0, negative)

        expected, counter = elementary_count(derivative, free_selection=True)
        counted = library_count(lambda out=out, grad=grad: out.backward(grad))
        assert counted.operator("aten.elu_backward") == counter.flops == per_element * 15
        torch.testing.assert_close(leaf.grad, expected)


def test_rrelu_training_backward_multiplies_by_the_sampled_slopes() -> None:
    """Training RReLU draws its slopes (the forward is unsupported: random values); its backward is
    ``g·noise``, one multiply per element."""
    leaf = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    out = F.rrelu(leaf, training=True)
    counted = library_count(lambda: out.backward(torch.ones_like(out)))
    assert counted.operator("aten.rrelu_with_noise_backward") == 24
