"""Backward, loss and optimizer kernel formulas (training-and-hardware.md 2), on small shapes by hand.

Each case really runs the backward through ``measure_flops`` and reads the kernel's own
``by_operator`` row, so the argument positions the formulas read are the ones PyTorch dispatches.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from torchscan.formulas import backward_ops, optimizer_ops
from torchscan.measure.flops import measure_flops


def _grad_of(function: Callable[[torch.Tensor], torch.Tensor], shape: tuple[int, ...]) -> Callable[[], None]:
    torch.manual_seed(0)
    x = torch.randn(*shape, requires_grad=True)
    return lambda: function(x).sum().backward()


def _norm_step(module: nn.Module, shape: tuple[int, ...]) -> Callable[[], None]:
    torch.manual_seed(0)
    x = torch.randn(*shape, requires_grad=True)
    return lambda: module(x).sum().backward()


def _direct(kernel: Callable[..., torch.Tensor]) -> Callable[[], None]:
    grad, x = torch.ones(2, 3), torch.randn(2, 3)
    return lambda: kernel(grad, x)


def _sdpa() -> Callable[[], None]:
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 1, 2, 4, requires_grad=True) for _ in range(3))
    return lambda: F.scaled_dot_product_attention(q, k, v).sum().backward()


def _embedding() -> Callable[[], None]:
    weight = torch.randn(10, 4, requires_grad=True)
    indices = torch.tensor([[1, 2, 3], [4, 5, 1]])
    return lambda: F.embedding(indices, weight).sum().backward()


def _nll() -> Callable[[], None]:
    logp = torch.randn(3, 5).log_softmax(-1).requires_grad_()
    return lambda: F.nll_loss(logp, torch.tensor([0, 2, 4])).backward()


def _mse() -> Callable[[], None]:
    x = torch.randn(2, 3, requires_grad=True)
    return lambda: F.mse_loss(x, torch.zeros(2, 3)).backward()


def _loss(
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], sigmoid: bool = False
) -> Callable[[], None]:
    torch.manual_seed(0)
    x, target = torch.randn(2, 3, requires_grad=True), torch.rand(2, 3)
    return lambda: loss(x.sigmoid() if sigmoid else x, target).backward()


def _nearest_backward() -> Callable[[], None]:
    # the forward of nearest upsampling reaches the mode as indexing under autograd: call the kernel
    grad = torch.ones(1, 2, 8, 8)
    return lambda: torch.ops.aten.upsample_nearest2d_backward(grad, [8, 8], [1, 2, 4, 4])


def _eval_batch_norm() -> Callable[[], None]:
    return _norm_step(nn.BatchNorm2d(3).eval(), (2, 3, 2, 2))


N = 6  # elements of the (2, 3) activations below
CASES: list[tuple[str, Callable[[], Callable[[], None]], str, int]] = [
    ("relu", lambda: _grad_of(F.relu, (2, 3)), "aten.threshold_backward", N),  # one comparison
    ("sigmoid", lambda: _grad_of(torch.sigmoid, (2, 3)), "aten.sigmoid_backward", 3 * N),  # g·y·(1−y)
    ("tanh", lambda: _grad_of(torch.tanh, (2, 3)), "aten.tanh_backward", 3 * N),  # g·(1 − y²)
    ("gelu", lambda: _grad_of(F.gelu, (2, 3)), "aten.gelu_backward", 11 * N),  # Φ 4, φ 4, 3
    (
        "gelu tanh",
        lambda: _grad_of(lambda x: F.gelu(x, approximate="tanh"), (2, 3)),
        "aten.gelu_backward",
        23 * N,  # x² once (it was 24: x² counted twice), u 4, tanh 6, 3, 2, 2, products 3, add and g· 2
    ),
    ("leaky_relu", lambda: _grad_of(F.leaky_relu, (2, 3)), "aten.leaky_relu_backward", 2 * N),
    ("hardtanh", lambda: _grad_of(F.hardtanh, (2, 3)), "aten.hardtanh_backward", 2 * N),
    ("hardsigmoid", lambda: _grad_of(F.hardsigmoid, (2, 3)), "aten.hardsigmoid_backward", 3 * N),
    ("hardswish", lambda: _grad_of(F.hardswish, (2, 3)), "aten.hardswish_backward", 5 * N),
    # from the input: compare, exp, C·, g· (input scale 1 multiplies nothing, as in the forward)
    ("elu", lambda: _grad_of(F.elu, (2, 3)), "aten.elu_backward", 4 * N),
    # from the result: compare, y + α, g·
    ("elu_", lambda: _grad_of(lambda x: F.elu(x * 1, inplace=True), (2, 3)), "aten.elu_backward", 3 * N),
    ("celu", lambda: _grad_of(lambda x: F.celu(x, 0.5), (2, 3)), "aten.elu_backward", 5 * N),  # input scale 2
    ("softplus", lambda: _grad_of(F.softplus, (2, 3)), "aten.softplus_backward", 6 * N),
    ("logsigmoid", lambda: _grad_of(F.logsigmoid, (2, 3)), "aten.log_sigmoid_backward", 6 * N),
    # softmax rows R = 2 of width 3: 4N − R
    ("softmax", lambda: _grad_of(lambda x: x.softmax(-1), (2, 3)), "aten._softmax_backward_data", 4 * N - 2),
    (
        "log_softmax",
        lambda: _grad_of(lambda x: x.log_softmax(-1), (2, 3)),
        "aten._log_softmax_backward_data",
        4 * N - 2,
    ),
    # LayerNorm(3) on (2, 3): x̂ 2N + dx (7 + 1)N + dw (2N − 3) + db (N − 3) = 12 + 48 + 9 + 3
    ("layer_norm", lambda: _norm_step(nn.LayerNorm(3), (2, 3)), "aten.native_layer_norm_backward", 72),
    # GroupNorm(2, 4) on (2, 4, 2): N = 16, C = 4: 32 + 128 + 28 + 12
    ("group_norm", lambda: _norm_step(nn.GroupNorm(2, 4), (2, 4, 2)), "aten.native_group_norm_backward", 200),
    # BatchNorm2d(3) training on (2, 3, 2, 2): N = 24, C = 3: 48 + 192 + 45 + 21
    (
        "batch_norm",
        lambda: _norm_step(nn.BatchNorm2d(3), (2, 3, 2, 2)),
        "aten.native_batch_norm_backward",
        306,
    ),
    # evaluation: rsqrt(var + eps) 2C = 6, dx (1 + 1)N = 48, dw 2N + 2N − C = 93, db N − C = 21
    ("batch_norm eval", _eval_batch_norm, "aten.native_batch_norm_backward", 168),
    # (1, 1, 4, 4), 2×2 windows: 4 output gradients
    (
        "max_pool2d",
        lambda: _grad_of(lambda x: F.max_pool2d(x, 2), (1, 1, 4, 4)),
        "aten.max_pool2d_with_indices_backward",
        4,
    ),
    (
        "avg_pool2d",
        lambda: _grad_of(lambda x: F.avg_pool2d(x, 2), (1, 1, 4, 4)),
        "aten.avg_pool2d_backward",
        20,
    ),
    # 4 output gradients: 4 divides + visits (4 + 2 − 2)² = 16 adds
    (
        "adaptive_avg_pool2d",
        lambda: _grad_of(lambda x: F.adaptive_avg_pool2d(x, 2), (1, 1, 4, 4)),
        "aten._adaptive_avg_pool2d_backward",
        20,
    ),
    (
        "adaptive_max_pool2d",
        lambda: _grad_of(lambda x: F.adaptive_max_pool2d(x, 2), (1, 1, 4, 4)),
        "aten.adaptive_max_pool2d_backward",
        4,
    ),
    ("embedding", _embedding, "aten.embedding_dense_backward", 2 * 3 * 4),  # one add per gradient element
    # 3 targets, mean: forward negate 3 + sum 2 + divide 1; backward 3·(negate + divide)
    ("nll_loss forward", _nll, "aten.nll_loss_forward", 6),
    ("nll_loss backward", _nll, "aten.nll_loss_backward", 6),
    # (2, 3), mean: forward subtract and square 2N + sum 5 + divide 1; backward 2·(x − t)·g 3N + N
    ("mse_loss", _mse, "aten.mse_loss", 18),
    ("mse_loss backward", _mse, "aten.mse_loss_backward", 24),
    # (2, 3) probabilities, mean: forward 10N + sum 5 + divide 1; backward (6 + mean 1)N
    ("bce", lambda: _loss(F.binary_cross_entropy, sigmoid=True), "aten.binary_cross_entropy", 66),
    (
        "bce backward",
        lambda: _loss(F.binary_cross_entropy, sigmoid=True),
        "aten.binary_cross_entropy_backward",
        42,
    ),
    (
        "bce logits",
        lambda: _loss(F.binary_cross_entropy_with_logits),
        "aten.binary_cross_entropy_with_logits",
        66,
    ),
    (
        # ℓ = (p − 1)·t + 1 and its product: p − 1 on pos_weight's 3 elements, ·t, + 1 and ℓ· on
        # the 6: 66 + 3 + 3·6 (was 4N = 24, counting p − 1 at the broadcast shape)
        "bce logits pos_weight",
        lambda: _loss(
            lambda x, t: F.binary_cross_entropy_with_logits(x, t, pos_weight=torch.full((3,), 2.0))
        ),
        "aten.binary_cross_entropy_with_logits",
        87,
    ),
    # forward 7N + 6 (sum 5, divide 1); backward (6 + mean 1)N
    ("smooth_l1", lambda: _loss(F.smooth_l1_loss), "aten.smooth_l1_loss", 48),
    ("smooth_l1 backward", lambda: _loss(F.smooth_l1_loss), "aten.smooth_l1_loss_backward", 42),
    ("huber", lambda: _loss(F.huber_loss), "aten.huber_loss", 48),
    ("huber backward", lambda: _loss(F.huber_loss), "aten.huber_loss_backward", 42),
    # (1, 2, 4, 4) upsampled ×2: 128 output gradients, 4 neighbours each: 2·4·128
    (
        "bilinear",
        lambda: _grad_of(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), (1, 2, 4, 4)),
        "aten.upsample_bilinear2d_backward",
        1024,
    ),
    ("nearest", _nearest_backward, "aten.upsample_nearest2d_backward", 128),
    # padded to (1, 2, 6, 6): 72 gradients added back into their sources
    (
        "reflect pad",
        lambda: _grad_of(lambda x: F.pad(x, (1, 1, 1, 1), mode="reflect"), (1, 2, 4, 4)),
        "aten.reflection_pad2d_backward",
        72,
    ),
    (
        "replicate pad",
        lambda: _grad_of(lambda x: F.pad(x, (1, 1, 1, 1), mode="replicate"), (1, 2, 4, 4)),
        "aten.replication_pad2d_backward",
        72,
    ),
    ("prelu", lambda: _norm_step(nn.PReLU(), (2, 3)), "aten._prelu_kernel_backward", 3 * N),
    ("glu", lambda: _grad_of(lambda x: F.glu(x, 1), (1, 2, 4, 4)), "aten.glu_backward", 9 * 16),
    # rows 2, scores 4, D = Dv = 4: products 2·4·(3·4 + 2·4) = 160, P and dS 6·4, Δ 2·2·4 − 2
    ("sdpa cpu", _sdpa, "aten._scaled_dot_product_flash_attention_for_cpu_backward", 198),
]


@pytest.mark.parametrize(("case", "build", "operator", "expected"), CASES, ids=[c[0] for c in CASES])
def test_backward_kernel_counts(case: str, build: Callable, operator: str, expected: int) -> None:
    report = measure_flops(build())
    assert report["by_operator"].get(operator) == expected, report["by_operator"]
    assert report["total"]["status"] == "complete", report["diagnostics"]


def test_composite_silu_and_mish_gradients_are_counted_by_their_parts() -> None:
    # CompositeImplicitAutograd kernels: the dispatcher decomposes them before the mode sees them.
    # silu: sigmoid 4N, then 1 − s, x·, 1 +, s·, grad· (sub_, mul ×3, add): 9N in all.
    report = measure_flops(_direct(torch.ops.aten.silu_backward))
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 9 * N
    assert "aten.silu_backward" not in report["by_operator"]
    report = measure_flops(_grad_of(F.mish, (2, 3)))
    assert report["total"]["status"] == "complete" and report["by_phase"]["backward"]["value"] > 0


def test_dropout_and_fused_rms_norm_backward_kernels() -> None:
    grad, mask = torch.ones(2, 3), torch.ones(2, 3, dtype=torch.bool)
    report = measure_flops(lambda: torch.ops.aten.native_dropout_backward(grad, mask, 2.0))
    assert report["by_operator"] == {"aten.native_dropout_backward": 2 * N}  # grad·mask·scale
    # _fused_rms_norm_backward has a CUDA kernel only: its formula is checked on the dispatched
    # arguments (grad, input, normalized_shape, rstd, weight, output_mask).
    # x̂ N + dx (5 + 1)N + dw (2N − 3) = 6 + 36 + 9
    rms = backward_ops.BACKWARD_FORMULAS["_fused_rms_norm_backward"]
    args = (grad, grad, [3], torch.ones(2, 1), torch.ones(3), [True, True])
    assert rms(args, {}, None) == 51
    assert rms((*args[:4], None, [True, False]), {}, None) == 6 + 30  # no weight: x̂ and dx only


def test_view_gradients_and_list_fills_are_ignored_as_data_movement() -> None:
    x = torch.randn(4, 4, requires_grad=True)
    report = measure_flops(lambda: x[1:3, 0].sum().backward())
    assert (
        report["ignored_operators"]["aten.select_backward"]["reason"]
        == "Data movement is excluded from FLOPs."
    )
    tensors = [torch.ones(2, 3), torch.ones(4)]
    report = measure_flops(lambda: torch._foreach_zero_(tensors))
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 0
    assert "aten._foreach_zero_" in report["ignored_operators"]


# Two tensors of 6 and 4 elements: every list operator works on 10 elements.
def _lists() -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    return [torch.ones(2, 3), torch.ones(4)], [torch.full((2, 3), 2.0), torch.full((4,), 2.0)]


FOREACH_CASES: list[tuple[str, Callable[[list, list], object], str, int]] = [
    ("add scalar", lambda a, b: torch._foreach_add_(a, 1.0), "aten._foreach_add_", 10),
    ("add list alpha", lambda a, b: torch._foreach_add_(a, b, alpha=2.0), "aten._foreach_add_", 20),
    ("sub list", lambda a, b: torch._foreach_sub(a, b), "aten._foreach_sub", 10),
    ("mul", lambda a, b: torch._foreach_mul_(a, 0.9), "aten._foreach_mul_", 10),
    ("div list", lambda a, b: torch._foreach_div_(a, [2.0, 3.0]), "aten._foreach_div_", 10),
    ("sqrt", lambda a, b: torch._foreach_sqrt(a), "aten._foreach_sqrt", 10),
    ("neg", lambda a, b: torch._foreach_neg(a), "aten._foreach_neg", 10),
    ("maximum", lambda a, b: torch._foreach_maximum_(a, b), "aten._foreach_maximum_", 10),
    ("lerp", lambda a, b: torch._foreach_lerp_(a, b, 0.1), "aten._foreach_lerp_", 30),  # 3 per element
    ("addcmul value", lambda a, b: torch._foreach_addcmul_(a, b, b, 0.5), "aten._foreach_addcmul_", 30),
    ("addcmul plain", lambda a, b: torch._foreach_addcmul_(a, b, b), "aten._foreach_addcmul_", 20),
    # per-tensor coefficients [1, −0.5]: 6·2 + 4·3
    (
        "addcdiv list",
        lambda a, b: torch._foreach_addcdiv_(a, b, b, [1.0, -0.5]),
        "aten._foreach_addcdiv_",
        24,
    ),
    ("norm", lambda a, b: torch._foreach_norm(a), "aten._foreach_norm", 20),  # square, add, root
    ("pow scalar base", lambda a, b: torch._foreach_pow(2.0, a), "aten._foreach_pow", 10),
]


@pytest.mark.parametrize(
    ("case", "call", "operator", "expected"), FOREACH_CASES, ids=[c[0] for c in FOREACH_CASES]
)
def test_foreach_kernel_counts(case: str, call: Callable, operator: str, expected: int) -> None:
    first, second = _lists()
    report = measure_flops(lambda: call(first, second))
    assert report["by_operator"] == {operator: expected}
    assert report["total"]["status"] == "complete"


def _meta(*shapes: tuple[int, ...]) -> list[torch.Tensor]:
    return [torch.empty(shape, device="meta") for shape in shapes]


def test_fused_adam_options_by_hand() -> None:
    params = _meta((2, 3), (4,))  # 10 elements
    lists = (params, params, params, params, [], params)
    adam, adamw = optimizer_ops.FUSED_FORMULAS["_fused_adam"], optimizer_ops.FUSED_FORMULAS["_fused_adamw"]
    # lerp 3 + second moment 4 + denominator 3 + addcdiv 3 = 13 per element
    assert adam(lists, {"weight_decay": 0.0, "amsgrad": False, "maximize": False}, None) == 130
    # Adam's coupled decay g + λθ 2, amsgrad max 1, maximize negate 1, grad_scale divide 1: 18
    options = {"weight_decay": 0.1, "amsgrad": True, "maximize": True, "grad_scale": torch.ones(())}
    assert adam(lists, options, None) == 180
    # AdamW's decoupled decay θ·(1 − lr·λ) 1: 14
    assert adamw(lists, {"weight_decay": 0.01, "amsgrad": False, "maximize": False}, None) == 140


def test_fused_sgd_options_by_hand() -> None:
    params = _meta((2, 3), (4,))
    lists = (params, params, params)
    sgd = optimizer_ops.FUSED_FORMULAS["_fused_sgd"]
    plain = {"weight_decay": 0.0, "momentum": 0.0, "dampening": 0.0, "nesterov": False, "maximize": False}
    assert sgd(lists, {**plain, "is_first_step": False}, None) == 20  # θ − lr·g
    momentum = {**plain, "momentum": 0.9}
    assert sgd(lists, {**momentum, "is_first_step": True}, None) == 20  # b = g is a copy
    assert sgd(lists, {**momentum, "is_first_step": False}, None) == 40  # μ·b + g, then the update
    # decay 2 + momentum with dampening 3 + Nesterov 2 + update 2 + maximize 1 = 10 per element
    full = {**momentum, "weight_decay": 0.1, "dampening": 0.1, "nesterov": True, "maximize": True}
    assert sgd(lists, {**full, "is_first_step": False}, None) == 100


def test_grad_scaler_kernels_by_hand() -> None:
    grads = [torch.ones(2, 3), torch.ones(4)]
    found_inf, inv_scale = torch.zeros(()), torch.full((), 0.5)
    report = measure_flops(
        lambda: torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)
    )
    assert report["by_operator"] == {"aten._amp_foreach_non_finite_check_and_unscale_": 20}  # ×, check
    scale, tracker = torch.full((), 2.0**16), torch.zeros((), dtype=torch.int32)
    report = measure_flops(lambda: torch._amp_update_scale_(scale, tracker, found_inf, 2.0, 0.5, 2000))
    assert report["by_operator"] == {"aten._amp_update_scale_": 2}  # the check and one multiply
    assert report["total"]["status"] == "complete"
