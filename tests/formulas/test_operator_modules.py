"""Operator formulas of module workloads: activations, normalization, pooling, embedding, layout
(formulas.md Part C: C5–C12, through :mod:`operator_counting`'s dispatch mode).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from operator_counting import INTERPOLATION, Case, check, module_call
from torch import nn

ACTIVATIONS = [
    # C9 on (2, 4): N = 8; cost · N (module FLOPs equal Op)
    pytest.param(nn.ReLU, 8, id="ReLU"),  # relu 1·8
    pytest.param(nn.ReLU6, 16, id="ReLU6"),  # hardtanh(0, 6) 2·8
    pytest.param(nn.ELU, 48, id="ELU"),  # elu 6·8
    pytest.param(nn.LeakyReLU, 32, id="LeakyReLU"),  # 4·8
    pytest.param(nn.Sigmoid, 32, id="Sigmoid"),  # 4·8
    pytest.param(nn.Tanh, 48, id="Tanh"),  # 6·8
    pytest.param(nn.Hardtanh, 16, id="Hardtanh"),  # 2·8
    pytest.param(lambda: nn.Threshold(0, 0), 16, id="Threshold"),  # 2·8
    pytest.param(nn.Hardshrink, 24, id="Hardshrink"),  # 3·8
    pytest.param(nn.Softsign, 24, id="Softsign"),  # abs 8 + add 8 + div 8
    pytest.param(nn.Hardsigmoid, 32, id="Hardsigmoid"),  # 4·8
    pytest.param(nn.PReLU, 32, id="PReLU"),  # _prelu_kernel 4·8 (weight view ignored)
    pytest.param(nn.RReLU, 32, id="RReLU"),  # evaluation rrelu_with_noise 4·8 (empty_like ignored)
    pytest.param(nn.Hardswish, 40, id="Hardswish"),  # 5·8
    pytest.param(nn.Softshrink, 40, id="Softshrink"),  # 5·8
    pytest.param(nn.SiLU, 40, id="SiLU"),  # 5·8
    pytest.param(nn.GELU, 40, id="GELU"),  # 5·8
    pytest.param(lambda: nn.GELU("tanh"), 112, id="GELU-tanh"),  # 14·8
    pytest.param(nn.CELU, 56, id="CELU"),  # 7·8
    pytest.param(nn.SELU, 56, id="SELU"),  # elu with scale ≠ 1: (6 + 1)·8
    pytest.param(nn.LogSigmoid, 56, id="LogSigmoid"),  # log_sigmoid_forward 7·8
    pytest.param(nn.Softplus, 56, id="Softplus"),  # 7·8
    pytest.param(nn.Tanhshrink, 56, id="Tanhshrink"),  # tanh 48 + sub 8
    pytest.param(nn.Mish, 80, id="Mish"),  # 10·8
    pytest.param(lambda: nn.GLU(-1), 20, id="GLU"),  # 5 · Nout = 5·4
    # C10 softmax family on (2, 4): R = 2, S = 4
    pytest.param(lambda: nn.Softmax(-1), 36, id="Softmax"),  # 5·8 − 2·2
    pytest.param(lambda: nn.LogSoftmax(-1), 30, id="LogSoftmax"),  # 4·8 − 2
    pytest.param(lambda: nn.Softmin(-1), 44, id="Softmin"),  # neg 8 + softmax 36
]


@pytest.mark.parametrize(("factory", "expected"), ACTIVATIONS)
def test_c9_c10_activations(factory, expected):
    tally = check(Case(module_call(factory, 2, 4), expected))
    assert set(tally.ignored) <= {"aten.view", "aten.empty_like"}
    # C9: an empty batch counts 0, complete
    check(Case(module_call(factory, 0, 4), 0))


NORMALIZATION_AND_POOLING = {
    # C5 BatchNorm1d(3) on (2, 3, 4): N = 24, C = 3
    "C5-eval-affine": Case(module_call(lambda: nn.BatchNorm1d(3), 2, 3, 4), 102),  # 48 + 6 + 48
    "C5-eval-plain": Case(module_call(lambda: nn.BatchNorm1d(3, affine=False), 2, 3, 4), 54),  # 48 + 6
    # C6 LayerNorm((2, 3)) on (2, 2, 2, 3): N = 24, R = 4: 6·24 + 2·4 + 2·24
    "C6-LayerNorm": Case(module_call(lambda: nn.LayerNorm((2, 3)), 2, 2, 2, 3), 200),
    "C6-LayerNorm-plain": Case(
        module_call(lambda: nn.LayerNorm((2, 3), elementwise_affine=False), 2, 2, 2, 3), 152
    ),
    # GroupNorm(3, 6) on (2, 6, 2): N = 24, batch·groups = 6: 144 + 12 + 48
    "C6-GroupNorm": Case(module_call(lambda: nn.GroupNorm(3, 6), 2, 6, 2), 204),
    "C6-GroupNorm-plain": Case(module_call(lambda: nn.GroupNorm(3, 6, affine=False), 2, 6, 2), 156),
    "C6-GroupNorm-empty-batch": Case(module_call(lambda: nn.GroupNorm(2, 4), 0, 4, 3), 0),
    "C6-LayerNorm-empty-row": Case(
        module_call(lambda: nn.LayerNorm(0), 2, 0),
        0,
        unsupported={"aten.native_layer_norm": "LayerNorm FLOPs require a nonempty normalized row."},
    ),
    # C7: MaxPool2d(2) on (1, 2, 8, 8): 32 outputs · (4 − 1)
    "C7-MaxPool2d": Case(module_call(lambda: nn.MaxPool2d(2), 1, 2, 8, 8), 96),
    "C7-AvgPool2d": Case(module_call(lambda: nn.AvgPool2d(2), 1, 2, 8, 8), 128),  # 32 · 4
    # 1-D pooling arrives as the 2-D kernel with kernel [1, 2]: 8 outputs · (2 − 1), 8 · 2
    "C7-MaxPool1d": Case(module_call(lambda: nn.MaxPool1d(2), 1, 2, 8), 8),
    "C7-AvgPool1d": Case(module_call(lambda: nn.AvgPool1d(2), 1, 2, 8), 16),
    # kernel [2] on a 2-D kernel means 2² = 4: 8 outputs · 3
    "C7-MaxPool2d-indices": Case(module_call(lambda: nn.MaxPool2d((2,), return_indices=True), 2, 4, 4), 24),
    # C8: (5 → 3) reads 5 + 3 − 1 = 7, (7 → 2) reads 7 + 2 − 1 = 8: visits 2·56 = 112, Nout 12
    "C8-AdaptiveAvgPool2d": Case(module_call(lambda: nn.AdaptiveAvgPool2d((3, 2)), 1, 2, 5, 7), 112),
    "C8-AdaptiveMaxPool2d": Case(module_call(lambda: nn.AdaptiveMaxPool2d((3, 2)), 1, 2, 5, 7), 100),
    "C8-AdaptiveAvgPool1d": Case(module_call(lambda: nn.AdaptiveAvgPool1d(3), 1, 2, 5), 14),  # 2·(5+3−1)
    # (4 → 2) reads 4 on each axis: visits 2·16 = 32, minus 8 outputs
    "C8-AdaptiveMaxPool2d-indices": Case(
        module_call(lambda: nn.AdaptiveMaxPool2d((2, 2), return_indices=True), 2, 4, 4), 24
    ),
    "C8-empty-batch": Case(module_call(lambda: nn.AdaptiveMaxPool2d((3, 2)), 0, 2, 5, 7), 0),
    "C10-Softmax2d": Case(module_call(nn.Softmax2d, 2, 4, 2, 2), 144),  # N = 32, R = 8: 160 − 16
    # C13: convolution 388,800 (native) + relu 7,200 + max pool 1,800·3
    "C13-Sequential": Case(
        module_call(lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.MaxPool2d(2)), 1, 3, 32, 32),
        401_400,
        {"aten.convolution": 388_800, "aten.relu": 7_200, "aten.max_pool2d_with_indices": 5_400},
    ),
}


@pytest.mark.parametrize("case", NORMALIZATION_AND_POOLING.values(), ids=NORMALIZATION_AND_POOLING.keys())
def test_c5_to_c8_normalization_and_pooling(case):
    check(case)


def _batch_norm_overloads() -> dict[str, Case]:
    x, mean, var = torch.ones(2, 3, 4), torch.zeros(3), torch.ones(3)
    legit, eval_only = (
        torch.ops.aten._native_batch_norm_legit,
        torch.ops.aten._native_batch_norm_legit_no_training,
    )
    return {
        # N = 24, C = 3, no affine: 2N + 2C = 54; training adds 4N = 96 → 150; buffers add 8C = 24 → 174
        "no_stats-training": Case(lambda: legit.no_stats(x, None, None, True, 0.1, 1e-5), 150),
        "buffers-training": Case(
            lambda: legit(x, None, None, mean.clone(), var.clone(), True, 0.1, 1e-5), 174
        ),
        "no_training": Case(lambda: eval_only(x, None, None, mean, var, 0.1, 1e-5), 54),
        # C5 module states through native_batch_norm: training, tracked, affine 102 + 96 + 24
        "module-training": Case(lambda: nn.BatchNorm1d(3).train()(x), 222),
        # buffers removed: statistics from the batch in both modes: 102 + 96
        "module-no-buffers": Case(lambda: nn.BatchNorm1d(3, track_running_stats=False).eval()(x), 198),
    }


@pytest.mark.parametrize("key", list(_batch_norm_overloads()))
def test_c5_native_batch_norm_overloads(key):
    # the module's own running-buffer update (an int64 counter add) counts 0
    check(_batch_norm_overloads()[key])


def _upsample(mode: str, size: int, *shape: int, dtype: torch.dtype = torch.float32) -> Callable[[], object]:
    return module_call(lambda: nn.Upsample(size=size, mode=mode), *shape, dtype=dtype)


LAYOUT = {
    # C12: zero-FLOP layout work is ignored (complete 0, nothing uncounted)
    "Embedding": Case(module_call(lambda: nn.Embedding(10, 4), 2, 2, dtype=torch.int64), 0, {}),
    "Unflatten": Case(module_call(lambda: nn.Unflatten(1, (2, 2)), 2, 4), 0, {}),
    "PixelShuffle": Case(module_call(lambda: nn.PixelShuffle(2), 1, 4, 2, 2), 0, {}),
    "PixelUnshuffle": Case(module_call(lambda: nn.PixelUnshuffle(2), 1, 1, 4, 4), 0, {}),
    "ChannelShuffle": Case(module_call(lambda: nn.ChannelShuffle(2), 1, 4, 2, 2), 0, {}),
    "Unfold": Case(module_call(lambda: nn.Unfold(2), 1, 1, 3, 3), 0, {}),
    "ConstantPad1d": Case(module_call(lambda: nn.ConstantPad1d(1, 0), 2, 4), 0, {}),
    "ConstantPad1d-crop": Case(module_call(lambda: nn.ConstantPad1d((-1, 0), 0), 2, 4), 0, {}),
    "ConstantPad2d": Case(module_call(lambda: nn.ConstantPad2d((1, 1), 0), 3, 4), 0, {}),
    "ReflectionPad1d": Case(module_call(lambda: nn.ReflectionPad1d(1), 2, 4), 0, {}),
    "ReplicationPad2d": Case(module_call(lambda: nn.ReplicationPad2d(1), 1, 1, 2, 2), 0, {}),
    "CircularPad1d": Case(module_call(lambda: nn.CircularPad1d(1), 2, 4), 0, {}),
    "nearest": Case(module_call(lambda: nn.UpsamplingNearest2d(scale_factor=2), 1, 1, 2, 2), 0, {}),
    "nearest-uint8": Case(
        module_call(lambda: nn.UpsamplingNearest2d(scale_factor=2), 1, 1, 2, 2, dtype=torch.uint8), 0, {}
    ),
    # (2n − 1)·out: linear n = 2 on 6 outputs, bilinear 4 on 16, trilinear 8 on 64, bicubic 16 on 16
    "linear": Case(_upsample("linear", 6, 1, 1, 3), 18),
    "bilinear": Case(module_call(lambda: nn.UpsamplingBilinear2d(size=4), 1, 1, 2, 2), 112),
    "trilinear": Case(_upsample("trilinear", 4, 1, 1, 2, 2, 2), 960),
    "bicubic": Case(_upsample("bicubic", 4, 1, 1, 2, 2), 496),
    "area": Case(_upsample("area", 2, 1, 1, 4, 4), 16),  # adaptive average: 4 + 2 − 2 = 4 per axis
    "bilinear-uint8": Case(
        module_call(lambda: nn.UpsamplingBilinear2d(size=4), 1, 1, 2, 2, dtype=torch.uint8),
        0,
        unsupported={"aten.upsample_bilinear2d": INTERPOLATION},
    ),
    "bicubic-uint8": Case(
        _upsample("bicubic", 4, 1, 1, 2, 2, dtype=torch.uint8),
        0,
        unsupported={"aten.upsample_bicubic2d": INTERPOLATION},
    ),
    "Embedding-max_norm": Case(
        module_call(lambda: nn.Embedding(10, 4, max_norm=1), 2, 2, dtype=torch.int64),
        0,
        uncounted=("aten.embedding_renorm_",),
    ),
}


@pytest.mark.parametrize("case", LAYOUT.values(), ids=LAYOUT.keys())
def test_c12_embedding_and_layout(case):
    check(case)
