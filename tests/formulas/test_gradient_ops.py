"""Backward kernels added for issue #19 (gradient_ops, backward_ops, loss_ops, optimizer_ops): training
steps measured complete with hand-derived numbers; backend-only kernels checked on meta tensors."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.flop_counter import flop_registry

from torchscan.formulas import gradient_ops, optimizer_ops, sync_batch_norm_ops
from torchscan.formulas.backward_ops import BACKWARD_FORMULAS
from torchscan.measure.flops import measure_flops

aten = torch.ops.aten


def _step(loss_of) -> dict[str, int]:
    """``by_operator`` of one complete forward + backward step."""

    def step() -> None:
        loss_of().backward()

    report = measure_flops(step)
    assert report["total"]["status"] == "complete", report["diagnostics"]
    return report["by_operator"]


def _meta(*shape: int) -> torch.Tensor:
    return torch.empty(shape, device="meta")


def test_backend_convolution_gradients_equal_pytorchs_convolution_backward_count():
    grad, inputs, weight = _meta(2, 4, 6, 6), _meta(2, 3, 8, 8), _meta(4, 3, 3, 3)
    results = (_meta(2, 3, 8, 8), _meta(4, 3, 3, 3), None)
    mask = [True, True, False]
    native = flop_registry[aten.convolution_backward](
        grad, inputs, weight, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, mask, out_val=results
    )
    assert native == 2 * 2 * (2 * 4 * 6 * 6 * 3 * 9)  # grad_input and grad_weight, one conv each
    overrideable = (grad, inputs, weight, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, False])
    assert gradient_ops.convolution_backward_overrideable(overrideable, {}, results) == native
    mps = (inputs, grad, weight, [0, 0], [1, 1], [1, 1], 1, [True, True, False])
    assert gradient_ops.mps_convolution_backward(mps, {}, results) == native
    slow = (grad, inputs, weight, [3, 3], [1, 1], [0, 0], [True, True, False])
    assert gradient_ops.slow_conv2d_backward(slow, {}, results) == native


def test_linear_and_matmul_gradients_by_hand():
    inputs, grad, weight = _meta(4, 6), _meta(4, 5), _meta(5, 6)
    # grad_input and grad_weight 2·4·6·5 each; grad_bias sums 4 rows of 5: 15 adds
    everything = [True, True, True]
    assert gradient_ops.linear_backward((inputs, grad, weight, everything), {}, None) == 240 + 240 + 15
    grad, first, second = _meta(2, 3, 5), _meta(2, 3, 4), _meta(2, 4, 5)
    assert gradient_ops.matmul_backward((grad, first, second, [True, False]), {}, None) == 2 * 30 * 4


def test_embedding_bag_training_step():
    bag = nn.EmbeddingBag(10, 3, mode="mean")
    by_operator = _step(lambda: bag(torch.tensor([1, 2, 4, 5, 4, 3]), torch.tensor([0, 3])).sum())
    # 6 looked-up rows of width 3: an add per element and the mean's divide
    assert by_operator["aten._embedding_bag"] == 18 + 6 and by_operator["aten._embedding_bag_backward"] == 36
    weighted = nn.EmbeddingBag(10, 3, mode="sum")
    weights = torch.rand(4, requires_grad=True)
    by_operator = _step(
        lambda: weighted(torch.tensor([1, 2, 4, 5]), torch.tensor([0, 2]), per_sample_weights=weights).sum()
    )
    assert by_operator["aten._embedding_bag_backward"] == 4 * 3 * 2  # add and the weight's multiply
    assert by_operator["aten._embedding_bag_per_sample_weights_backward"] == 4 * (2 * 3 - 1)  # dot products


def test_grid_sampling_weight_norm_and_distances_train_completely():
    features = torch.randn(1, 2, 5, 5, requires_grad=True)
    grid = (torch.rand(1, 3, 3, 2) * 2 - 1).requires_grad_()
    by_operator = _step(lambda: F.grid_sample(features, grid, align_corners=False).sum())
    # 18 gradient values, 9 locations: 2·4 per value (input), 3·4·2 per value + 2 per location (grid)
    assert by_operator["aten.grid_sampler_2d_backward"] == 18 * 8 + 18 * 24 + 2 * 9
    v, g = torch.randn(3, 4, requires_grad=True), torch.randn(3, 1, requires_grad=True)
    by_operator = _step(lambda: torch._weight_norm(v, g, 0).sum())
    assert by_operator["aten._weight_norm_interface_backward"] == 5 * 12 + 3 * 3
    x = torch.randn(4, 6, requires_grad=True)
    assert _step(lambda: torch.cdist(x, torch.randn(3, 6)).sum())["aten._cdist_backward"] == 12 * (3 * 6 + 1)
    assert _step(lambda: torch.pdist(x).sum())["aten._pdist_backward"] == 6 * (4 * 6 + 1)


def test_margin_losses_by_hand():
    x = torch.randn(4, 6, requires_grad=True)
    by_operator = _step(lambda: F.soft_margin_loss(x, torch.sign(torch.randn(4, 6))))
    # log(1 + exp(−t·x)) 5 per element + the mean 24; backward 8 per element + the mean's divide
    assert by_operator["aten.soft_margin_loss"] == 5 * 24 + 24
    assert by_operator["aten.soft_margin_loss_backward"] == 9 * 24
    target = torch.tensor([0, 1, 2, 3])
    by_operator = _step(lambda: F.multi_margin_loss(x, target))
    assert by_operator["aten.multi_margin_loss"] == 4 * (5 * 4) + 4  # 5 other classes, 4 FLOPs each
    assert by_operator["aten.multi_margin_loss_backward"] == 4 * (5 * 5 + 1)
    by_operator = _step(lambda: F.multi_margin_loss(x, target, p=2, weight=torch.rand(6)))
    assert by_operator["aten.multi_margin_loss"] == 4 * (5 * 6) + 4  # + square and class weight


def test_fused_adagrad_counts_what_the_loop_and_list_implementations_count():
    params = [nn.Parameter(torch.randn(3, 4)), nn.Parameter(torch.randn(5))]
    for param in params:
        param.grad = torch.randn_like(param)
    totals = {}
    for options in ({"foreach": False}, {"foreach": True}, {"fused": True}):
        optimizer = torch.optim.Adagrad(params, lr=0.1, weight_decay=0.01, **options)
        report = measure_flops(optimizer.step)
        assert report["total"]["status"] == "complete", report["diagnostics"]
        totals[str(options)] = report["total"]["value"]
    assert len(set(totals.values())) == 1, totals
    fused = optimizer_ops.FUSED_FORMULAS["_fused_adagrad"]
    assert fused((params, params, params, params), {"weight_decay": 0.01}, None) == 17 * 9  # 7 + decay 2


def test_anti_aliased_resampling_trains_completely():
    image = torch.randn(1, 2, 8, 8, requires_grad=True)
    by_operator = _step(lambda: F.interpolate(image, size=(4, 4), mode="bilinear", antialias=True).sum())
    # 8 -> 4: scale 2, support 2; centers 1, 3, 5, 7 read 3, 4, 4, 3 inputs: 14 taps per axis
    width = 2 * 8 * (2 * 14 - 4)  # every input row: 4 outputs of 2·taps − 1
    height = 2 * 4 * (2 * 14 - 4)  # every output column
    assert by_operator["aten._upsample_bilinear2d_aa"] == width + height
    assert by_operator["aten._upsample_bilinear2d_aa_backward"] == 2 * 8 * 2 * 14 + 2 * 4 * 2 * 14


def test_fractional_pooling_and_shrink_gradients():
    inputs = torch.randn(1, 1, 8, 8, requires_grad=True)
    by_operator = _step(lambda: F.fractional_max_pool2d(inputs, 2, output_size=4).sum())
    assert by_operator["aten.fractional_max_pool2d"] == 16 * 3  # 4 windows' 3 comparisons per output
    assert by_operator["aten.fractional_max_pool2d_backward"] == 16  # an add per output gradient
    x = torch.randn(4, 6, requires_grad=True)
    assert _step(lambda: F.hardshrink(x).sum())["aten.hardshrink_backward"] == 2 * 24
    assert _step(lambda: F.softshrink(x).sum())["aten.softshrink_backward"] == 2 * 24


def test_sync_batch_norm_kernels_by_hand():
    inputs = _meta(2, 3, 4, 4)  # N = 96, C = 3
    stats, running = _meta(3), _meta(3)
    assert sync_batch_norm_ops.batch_norm_stats((inputs, 1e-5), {}, None) == 4 * 96 + 2 * 3
    affine = (inputs, stats, stats, stats, stats, 1e-5)
    assert sync_batch_norm_ops.batch_norm_elemt(affine, {}, None) == 4 * 96  # normalize 2, weight, bias
    gathered = _meta(2, 3)  # 2 ranks' means
    args = (inputs, gathered, gathered, running, running, 0.1, 1e-5, 32)
    assert sync_batch_norm_ops.batch_norm_gather_stats(args, {}, None) == 9 * 6 + 6 * 3 + 3 * (3 + 5)
    reduce_args = (inputs, inputs, stats, stats, stats, True, True, True)
    assert sync_batch_norm_ops.batch_norm_backward_reduce(reduce_args, {}, None) == 4 * 96 - 2 * 3 + 3
    elemt_args = (inputs, inputs, stats, stats, stats, stats, stats, stats)
    assert sync_batch_norm_ops.batch_norm_backward_elemt(elemt_args, {}, None) == 5 * 96 + 5 * 3


def test_backend_batch_norm_gradients_count_as_the_native_training_backward():
    inputs, channel = _meta(2, 3, 4, 4), _meta(3)
    saved = (channel, channel, channel, channel, channel)  # weight, running stats, saved stats
    native = BACKWARD_FORMULAS["native_batch_norm_backward"](
        (inputs, inputs, *saved, True, 1e-5, None), {}, None
    )
    cudnn = BACKWARD_FORMULAS["cudnn_batch_norm_backward"]((inputs, inputs, *saved, 1e-5, _meta(0)), {}, None)
    assert cudnn == native


def test_rrelu_gradient():
    x = torch.randn(4, 6, requires_grad=True)
    assert _step(lambda: F.rrelu(x).sum())["aten.rrelu_with_noise_backward"] == 2 * 24  # as leaky ReLU's
    # training: the forward multiplies only where x < 0 (its count depends on values: unsupported),
    # the backward multiplies every gradient by its slope
    report = measure_flops(lambda: F.rrelu(x, training=True).sum().backward())
    assert report["total"]["status"] == "partial"
    assert [entry["operator"] for entry in report["diagnostics"]] == ["aten.rrelu_with_noise"]
    assert report["by_operator"]["aten.rrelu_with_noise_backward"] == 24
