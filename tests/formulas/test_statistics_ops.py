"""Statistical reductions, backend convolution kernels, EmbeddingBag and unary ``_foreach_*`` lists
(issue #19 coverage): hand-derived numbers, each measured under every grad mode."""

from __future__ import annotations

import pytest
import torch
from kernel_checks import complete
from torch import nn
from torch.nn import functional as F

from torchscan.analysis.dispatch.overload_schema import foreach_base
from torchscan.analysis.dispatch.resolution import classify_overload

aten = torch.ops.aten
X = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 10  # in = 24


@pytest.mark.parametrize(
    ("workload", "operator", "expected"),
    [
        (lambda: X.var(1), "aten.var", 4 * 24),  # mean 24, deviations 2·24, squares' sum 20, divides 4
        (lambda: torch.var_mean(X, 1), "aten.var_mean", 4 * 24),
        (lambda: X.std(), "aten.std", 4 * 24 + 1),  # + one square root
        (lambda: torch.std_mean(X, 0), "aten.std_mean", 4 * 24 + 6),
        (lambda: X.prod(0), "aten.prod", 24 - 6),  # 6 columns of 4: 3 multiplies each
        (lambda: X.nansum(), "aten.nansum", 24 + 23),  # NaN tests + adds
        # max, subtract, exp, sum per element; the infinite-max guard (abs, eq, masked_fill), log, add per row
        (lambda: X.logsumexp(1), "aten.logsumexp", 4 * 24 + 3 * 4),
        (lambda: torch.count_nonzero(X, 0), "aten.count_nonzero", 24),  # comparisons; the count is integer
        (lambda: X.trace(), "aten.trace", 3),  # 4 diagonal values: 3 adds
    ],
)
def test_statistical_reductions(workload, operator, expected):
    assert complete(workload) == (expected, {operator: expected})


def test_integer_products_count_zero_like_every_integer_reduction():
    assert complete(lambda: torch.arange(1, 7).prod()) == (0, {"aten.prod": 0})


@pytest.mark.filterwarnings("ignore:torch.range is deprecated")
def test_windows_and_range_are_creation():
    value, by_operator = complete(lambda: (torch.hann_window(16), torch.kaiser_window(8), torch.range(0, 4)))
    assert value == 0 and all(count == 0 for count in by_operator.values())


def test_backend_convolution_kernels_count_like_aten_convolution():
    x, w = torch.rand(1, 3, 8, 8), torch.rand(4, 3, 3, 3)
    expected = 2 * 4 * 8 * 8 * 3 * 9  # out elements · (in_channels · kv) multiply-adds
    assert complete(lambda: F.conv2d(x, w, padding=1))[0] == expected
    assert complete(lambda: aten.mkldnn_convolution(x, w, None, [1, 1], [1, 1], [1, 1], 1)) == (
        expected,
        {"aten.mkldnn_convolution": expected},
    )
    up, weight = torch.rand(1, 4, 8, 8), torch.rand(4, 3, 3, 3)  # transposed weight: (in, out, kh, kw)
    native = complete(lambda: F.conv_transpose2d(up, weight))[0]
    assert native == 2 * 4 * 8 * 8 * 3 * 9  # every input element times every weight of its channel
    slow = complete(lambda: aten.slow_conv_transpose2d(up, weight, [3, 3]))
    assert slow == (native, {"aten.slow_conv_transpose2d": native})


def test_batch_norm_kernel_variants_count_like_native_batch_norm():
    x, weight, bias = torch.rand(2, 3, 4, 4), torch.ones(3), torch.zeros(3)

    def native(training: bool) -> int:
        stats = torch.zeros(3), torch.ones(3)
        return complete(lambda: aten.native_batch_norm(x, weight, bias, *stats, training, 0.1, 1e-5))[0]

    def variant(op) -> int:
        stats = torch.zeros(3), torch.ones(3)
        return complete(lambda: op(x, weight, bias, *stats, 0.1, 1e-5))[0]

    assert native(True) == 2 * 96 + 2 * 3 + 2 * 96 + 4 * 96 + 3 * (3 + 5)  # formulas.md B.8
    assert variant(aten._batch_norm_with_update) == native(True)
    assert variant(aten._batch_norm_no_update) == native(False) == 2 * 96 + 2 * 3 + 2 * 96


@pytest.mark.parametrize(
    ("mode", "weights", "expected"),
    [
        ("sum", False, 6 * 4),  # 6 looked-up rows of width 4 added into their bags
        ("mean", False, 6 * 4 + 2 * 4),  # + one divide per output element (2 bags)
        ("max", False, (6 - 2) * 4),  # comparisons: each bag's first row is taken as it is
        ("sum", True, 2 * 6 * 4),  # + the per-sample multiplies
    ],
)
def test_embedding_bag(mode, weights, expected):
    torch.manual_seed(0)
    bag = nn.EmbeddingBag(10, 4, mode=mode)
    indices, offsets = torch.tensor([1, 2, 3, 4, 5, 6]), torch.tensor([0, 2])
    per_sample = torch.rand(6) if weights else None
    value, by_operator = complete(lambda: bag(indices, offsets, per_sample_weights=per_sample))
    assert value == expected and sum(v for k, v in by_operator.items() if "embedding_bag" in k) == expected


def test_unary_foreach_lists_cost_their_operator_per_tensor():
    tensors = [torch.rand(3, 4), torch.rand(5)]  # 17 elements
    assert complete(lambda: torch._foreach_sigmoid(tensors)) == (4 * 17, {"aten._foreach_sigmoid": 68})
    assert complete(lambda: torch._foreach_sin(tensors)) == (17, {"aten._foreach_sin": 17})  # pointwise
    copies = [t.clone() for t in tensors]
    assert complete(lambda: torch._foreach_tanh_(copies)) == (6 * 17, {"aten._foreach_tanh_": 102})


def test_foreach_classification_follows_the_base_operator():
    assert foreach_base(aten._foreach_sin_.default) is aten.sin.default
    assert foreach_base(aten._foreach_add.List) is None  # not unary: its own formula (optimizer_ops)
    assert classify_overload(aten._foreach_sigmoid.out) == ("foreach", None)
    assert classify_overload(aten._foreach_clone.default)[0] == "ignored"  # clone moves data
    assert classify_overload(aten._foreach_zero.default)[0] == "ignored"


@pytest.mark.parametrize(
    ("workload", "operator", "expected"),
    [
        (lambda: X.amax(1), "aten.amax", 24 - 4),
        (lambda: X.amin((0, 1)), "aten.amin", 23),
        (lambda: X.cumprod(1), "aten.cumprod", 24 - 4),  # 4 rows of 6: 5 multiplies each
        (lambda: X.cummax(0), "aten.cummax", 24 - 6),
        (lambda: torch.bincount(torch.tensor([0, 1, 1, 3]), weights=torch.ones(4)), "aten.bincount", 4),
        (lambda: torch.bincount(torch.tensor([0, 1, 1, 3])), "aten.bincount", 0),  # integer counting
        (lambda: torch.cdist(X[:2], X[2:]), "aten._cdist_forward", 4 * 3 * 6),  # 4 pairs of width 6
        (lambda: torch.cdist(X[:2], X[2:], p=1), "aten._cdist_forward", 4 * (3 * 6 - 1)),
        (lambda: torch.dist(X[0], X[1]), "aten.dist", 3 * 6),
        (lambda: torch.addmv(torch.ones(4), X, torch.ones(6)), "aten.addmv", 2 * 4 * 6 + 4),
        (lambda: torch.addr(X, torch.ones(4), torch.ones(6)), "aten.addr", 2 * 24),
        (
            lambda: torch.addbmm(torch.ones(4, 5), torch.ones(3, 4, 6), torch.ones(3, 6, 5)),
            "aten.addbmm",
            2 * 3 * 4 * 6 * 5 + 3 * 4 * 5,
        ),
        (lambda: torch.polar(torch.ones(8), torch.zeros(8)), "aten.polar", 4 * 8),
    ],
)
def test_more_reductions_scans_and_fused_products(workload, operator, expected):
    value, by_operator = complete(workload)
    assert value == expected and by_operator[operator] == expected


def test_fold_adds_every_column_element():
    columns = torch.ones(1, 3 * 2 * 2, 9)  # 3 channels, 2x2 kernel, 9 positions (4x4 image)
    value, by_operator = complete(lambda: F.fold(columns, (4, 4), (2, 2)))
    assert value == by_operator["aten.col2im"] == 108


def test_fused_dropout_counts_the_unfused_arithmetic():
    x = torch.ones(4, 8)
    assert complete(lambda: aten.native_dropout(x, 0.5, True)) == (64, {"aten.native_dropout": 64})
    assert complete(lambda: aten.native_dropout(x, 0.5, False)) == (0, {"aten.native_dropout": 0})


def test_weight_only_quantized_product():
    x, weight, scales = torch.rand(2, 8), torch.randint(-8, 8, (3, 8), dtype=torch.int8), torch.rand(3)
    assert complete(lambda: aten._weight_int8pack_mm(x, weight, scales)) == (
        2 * 2 * 8 * 3 + 2 * 3,
        {"aten._weight_int8pack_mm": 102},
    )
