"""Reference checks of the convolution formulas (truth.md 1): forward and backward, every ``groups``.

The reference (``conv_reference.py``) computes the same numbers as PyTorch's convolution from
slicing and one matrix product per group; :class:`TrivialCounter` counts those products from shapes
(``2 · MACs``). The library's count comes from real dispatch (``measure_flops``).

Derivation of what the backward must cost: differentiating the reference's ``cols @ Wᵀ`` product per
group gives exactly two products of the same MACs — ``grad_cols = grad @ W`` (the input gradient,
scattered back by slicing) and ``grad_W = grad_colsᵀ @ cols`` — so ``grad_input`` and ``grad_weight``
each cost the forward's products, once per convolution, whatever ``groups``; the bias gradient sums
``grad_out`` over batch and space, one addition per gradient element (truth.md 1).
"""

from __future__ import annotations

import random

import pytest
import torch
from torch.nn import functional as F
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from tests.formulas.reference import conv_reference
from tests.formulas.reference.harness import cases, library_count, prod, trivial_count

CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _draw(rng: random.Random) -> dict:
    """One random convolution: rank, groups, channels, kernel, stride, padding, dilation, transposed."""
    rank = rng.choice((1, 1, 2, 2, 2, 3))
    groups = rng.choice((1, 1, 2, 3, 4))
    depthwise = rng.random() < 0.3
    in_channels = groups * (1 if depthwise else rng.randint(1, 3))
    out_channels = groups * rng.randint(1, 3)
    kernel = [rng.randint(1, 3) for _ in range(rank)]
    stride = [rng.randint(1, 3) for _ in range(rank)]
    dilation = [rng.randint(1, 2) for _ in range(rank)]
    padding = [rng.randint(0, 2) for _ in range(rank)]
    transposed = rng.random() < 0.35
    limit = {1: 9, 2: 7, 3: 4}[rank]
    sizes = [rng.randint(1, limit) + dilation[i] * (kernel[i] - 1) for i in range(rank)]
    output_padding = [rng.randint(0, max(stride[i], dilation[i]) - 1) for i in range(rank)]
    dtype = torch.float64  # complex convolutions: test_complex_convolution_costs_four_real_ones
    return {
        "rank": rank,
        "groups": groups,
        "in_channels": in_channels,
        "out_channels": out_channels,
        "kernel": kernel,
        "stride": stride,
        "dilation": dilation,
        "padding": padding,
        "transposed": transposed,
        "sizes": sizes,
        "output_padding": output_padding if transposed else [0] * rank,
        "batch": rng.randint(1, 2),
        "dtype": dtype,
    }


def _tensors(case: dict, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    shape_x = (case["batch"], case["in_channels"], *case["sizes"])
    if case["transposed"]:
        shape_w = (case["in_channels"], case["out_channels"] // case["groups"], *case["kernel"])
    else:
        shape_w = (case["out_channels"], case["in_channels"] // case["groups"], *case["kernel"])
    x = torch.randn(shape_x, generator=generator, dtype=torch.float64)
    w = torch.randn(shape_w, generator=generator, dtype=torch.float64)
    if case["dtype"].is_complex:
        x = torch.complex(x, torch.randn(shape_x, generator=generator, dtype=torch.float64)).to(case["dtype"])
        w = torch.complex(w, torch.randn(shape_w, generator=generator, dtype=torch.float64)).to(case["dtype"])
    return x, w


def _torch_conv(
    case: dict, x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    if case["transposed"]:
        return CONV_T[case["rank"]](
            x,
            w,
            bias,
            case["stride"],
            case["padding"],
            case["output_padding"],
            case["groups"],
            case["dilation"],
        )
    return CONV[case["rank"]](x, w, bias, case["stride"], case["padding"], case["dilation"], case["groups"])


def _reference(case: dict, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    if case["transposed"]:
        return conv_reference.conv_transpose(
            x, w, case["stride"], case["padding"], case["output_padding"], case["dilation"], case["groups"]
        )
    return conv_reference.conv(x, w, case["stride"], case["padding"], case["dilation"], case["groups"])


def _valid(case: dict, x: torch.Tensor, w: torch.Tensor) -> bool:
    try:
        out = _torch_conv(case, x, w)
    except RuntimeError:  # an output smaller than one element, or an option PyTorch rejects
        return False
    return out.numel() > 0


@pytest.mark.parametrize(("seed", "rng"), cases("convolution"))
def test_convolution_forward_and_backward_match_the_reference(seed: int, rng: random.Random) -> None:
    case = _draw(rng)
    x, w = _tensors(case, seed)
    if not _valid(case, x, w):
        pytest.skip("PyTorch rejects this draw (output smaller than the kernel)")
    expected = _torch_conv(case, x, w)
    forward = trivial_count(lambda: _reference(case, x, w))
    got = _reference(case, x, w)
    torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-9)  # the reference is the same convolution

    library = library_count(lambda: _torch_conv(case, x, w))
    assert library.status == "complete"
    assert library.operator("aten.convolution") == forward.products

    # backward of both: the reference's products through autograd, the library's convolution_backward
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    grad = torch.ones_like(expected)
    ref_out = _reference(case, xr, wr)
    backward = trivial_count(lambda: ref_out.backward(grad))
    assert backward.products == 2 * forward.products  # grad_input and grad_weight, each the forward's

    xl, wl = x.clone().requires_grad_(), w.clone().requires_grad_()
    lib_out = _torch_conv(case, xl, wl)
    library_backward = library_count(lambda: lib_out.backward(grad))
    assert library_backward.status == "complete"
    assert library_backward.operator("aten.convolution_backward") == backward.products


@pytest.mark.parametrize(("seed", "rng"), cases("convolution_backward"))
def test_convolution_backward_output_mask_and_bias(seed: int, rng: random.Random) -> None:
    """``aten.convolution_backward`` called directly with a random ``output_mask``: each requested
    gradient costs the forward's products (reference), the bias gradient one add per gradient element."""
    case = _draw(rng)
    x, w = _tensors(case, seed)
    if not _valid(case, x, w):
        pytest.skip("PyTorch rejects this draw (output smaller than the kernel)")
    out = _torch_conv(case, x, w)
    forward = trivial_count(lambda: _reference(case, x, w)).products
    mask = [rng.random() < 0.7 for _ in range(3)]
    grad = torch.ones_like(out)
    bias_sizes = [out.shape[1]]

    def call() -> object:
        return torch.ops.aten.convolution_backward(
            grad,
            x,
            w,
            bias_sizes,
            case["stride"],
            case["padding"],
            case["dilation"],
            case["transposed"],
            case["output_padding"],
            case["groups"],
            mask,
        )

    library = library_count(call)
    # bias: Σ over batch and space of grad_out, one addition per element (two real ones when complex)
    bias = prod(grad.shape) * (2 if grad.is_complex() else 1)
    assert library.operator("aten.convolution_backward") == (mask[0] + mask[1]) * forward + mask[2] * bias


def test_flop_counter_mode_counts_a_grouped_weight_gradient_once_per_group() -> None:
    """The inherited formula TorchScan overrides (provenance.CORRECTIONS): FlopCounterMode's
    ``convolution_backward`` counts ``grad_weight`` ``groups`` times; TorchScan's counts it once.

    Issue #32's figures: ``Conv2d(32, 32, 3, groups=32, padding=1, bias=False)``, batch 2, 16×16:
    forward ``2·2·32·(1·9)·256 = 294,912``; backward (input and weight gradients) ``2 × 294,912 =
    589,824``, where FlopCounterMode reads ``294,912 + 32 × 294,912 = 9,732,096`` (16.5×).
    """
    x = torch.randn(2, 32, 16, 16, requires_grad=True)
    w = torch.randn(32, 1, 3, 3, requires_grad=True)
    out = F.conv2d(x, w, None, 1, 1, 1, 32)
    grad = torch.ones_like(out)
    library = library_count(lambda: out.backward(grad, retain_graph=True))
    assert library.operator("aten.convolution_backward") == 589_824
    assert library_count(lambda: F.conv2d(x, w, None, 1, 1, 1, 32)).total == 294_912
    assert torch.ops.aten.convolution_backward in flop_registry  # what FlopCounterMode alone would use
    with FlopCounterMode(display=False) as alone:
        out.backward(grad)
    assert alone.get_total_flops() == 9_732_096 == 294_912 * 33


def test_grouped_convolution_with_bias_training_step_reconciles() -> None:
    """Per convolution, backward ÷ forward = 2 plus the bias gradient (truth.md 1):
    ``Conv2d(8, 8, 3, groups=4)`` on 1×8×6×6: forward ``2·1·8·(2·9)·16 = 4,608``; backward
    ``2 × 4,608 + 1·8·4·4 = 9,344``; with the input not needing a gradient, ``4,608 + 128``."""
    conv = torch.nn.Conv2d(8, 8, 3, groups=4)
    x = torch.randn(1, 8, 6, 6, requires_grad=True)
    out = conv(x)
    library = library_count(lambda: out.sum().backward())
    assert library.operator("aten.convolution_backward") == 9_344
    frozen_input = torch.randn(1, 8, 6, 6)
    out = conv(frozen_input)
    library = library_count(lambda: out.sum().backward())
    assert library.operator("aten.convolution_backward") == 4_608 + 128


def test_complex_convolution_costs_four_real_ones() -> None:
    """truth.md 3: a complex MAC is 4 real multiplies and 4 real additions, so an ``aten.convolution``
    with complex operands costs 4 × the real formula. (``F.conv2d`` never dispatches one: ATen's
    ``conv2d`` splits complex inputs into three real convolutions and element-wise work, each counted
    as itself; a direct call of the operator does reach the formula.)

    ``(1, 2, 5, 5) * (2, 1, 3, 3)``, groups 2: real ``2·1·2·9·9 = 324``; complex ``4 × 324 = 1,296``.
    """
    x = torch.randn(1, 2, 5, 5, dtype=torch.complex128)
    w = torch.randn(2, 1, 3, 3, dtype=torch.complex128)
    real = conv_reference.conv(x.real, w.real, [1, 1], [0, 0], [1, 1], 2)
    assert (
        trivial_count(lambda: conv_reference.conv(x.real, w.real, [1, 1], [0, 0], [1, 1], 2)).products == 324
    )
    assert trivial_count(lambda: conv_reference.conv(x, w, [1, 1], [0, 0], [1, 1], 2)).products == 1_296
    # CPU has no complex kernel for this call; the formula reads shapes only, so meta tensors do
    xm, wm = x.to("meta"), w.to("meta")
    call = lambda: torch.ops.aten.convolution(xm, wm, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2)  # noqa: E731
    assert library_count(call).operator("aten.convolution") == 1_296
    assert real.shape == (1, 2, 3, 3)
