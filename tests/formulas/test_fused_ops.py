"""Fused kernels, ``out=`` forms of composites, quantization and the kernels joined to the ignored
tables by category (issue #19 coverage): hand-derived numbers, each measured under every grad mode."""

from __future__ import annotations

import pytest
import torch
from kernel_checks import complete, unsupported

from torchscan.analysis.dispatch.resolution import classify_overload
from torchscan.formulas import fused_ops
from torchscan.formulas.operators import METADATA_REASON, MOVE_REASON
from torchscan.measure.flops import measure_flops

aten = torch.ops.aten
X = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 10  # 24 elements, 4 rows of 6
W, B = torch.ones(5, 6), torch.ones(5)
META = torch.empty(4, 6, device="meta")
NO_MASK = torch.zeros(4, 6, dtype=torch.bool)


@pytest.mark.parametrize(
    ("workload", "operator", "expected"),
    [
        (lambda: aten._add_relu.Tensor(X, X), "aten._add_relu", 2 * 24),  # add, then the comparison
        (lambda: aten._add_relu.Tensor(X, X, alpha=2), "aten._add_relu", 3 * 24),  # + the scaling
        # addmm's native 2·m·k·n (4·6·5) and the tanh-approximated GELU's 14 per output (20)
        (lambda: aten._addmm_activation(B, X, W.T, use_gelu=True), "aten._addmm_activation", 240 + 14 * 20),
        (lambda: aten._addmm_activation(B, X, W.T), "aten._addmm_activation", 240 + 20),  # ReLU
        # softmax's 5N − 2R along the rows; the mask selects, which is free
        (lambda: aten._masked_softmax(X, NO_MASK, 1), "aten._masked_softmax", 112),
        # bias add over the packed q, k, v (3·B·T·D = 24) and the query scaling (8)
        (lambda: aten._transform_bias_rescale_qkv(torch.ones(1, 2, 12), torch.ones(12), 2), None, 32),
        # 4 slices of 6: the norms, the factor (compare, add eps, divide, select) per slice, the scaling
        (lambda: torch.renorm(X, 2, 0, 1.0), "aten.renorm", 3 * 24 + 4 * 4),
        (lambda: torch.renorm(X, 1, 0, 1.0), "aten.renorm", 3 * 24 + 3 * 4),
        (lambda: torch.linalg.cross(torch.ones(4, 3), torch.ones(4, 3)), "aten.linalg_cross", 3 * 12),
        (lambda: torch.pdist(X), "aten._pdist_forward", 6 * 3 * 6),  # 6 pairs of rows, 3M each
        # ‖x‖² (4 and 2 rows: 11 each), −2x (24), the product 2·4·2·(6 + 2), clamp and root per pair
        (lambda: aten._euclidean_dist(X, X[:2]), "aten._euclidean_dist", 6 * 11 + 24 + 128 + 16),
        # a CUDA kernel: meta tensors carry the shapes (mask multiply and scale per element)
        (lambda: aten._masked_scale(META, torch.ones(4, 6, device="meta"), 2.0), "aten._masked_scale", 48),
    ],
)
def test_fused_kernels_count_their_parts(workload, operator, expected):
    value, by_operator = complete(workload)
    assert value == expected
    if operator is not None:
        assert by_operator == {operator: expected}


def test_index_writes_count_only_when_they_accumulate():
    index, source = torch.tensor([0, 1, 5]), torch.ones(3)
    assert complete(lambda: X.clone().put_(index, source, accumulate=True))[1]["aten.put_"] == 3
    value, by_operator = complete(lambda: X.clone().put_(index, source))
    assert value == 0 and "aten.put_" not in by_operator  # a plain write is indexing (ignored)
    rows = torch.ones(2, 6)
    mean = complete(lambda: X.clone().index_reduce_(0, torch.tensor([0, 2]), rows, "mean"))
    assert mean[1] == {"aten.index_reduce_": 12 + 24}  # one combine per source element + a divide per output
    assert classify_overload(aten.put.default) == ("supplemental", "Indexing and selection move data and are "
                                                   "excluded from FLOPs.")  # fmt: skip


@pytest.mark.parametrize(
    ("workload", "operator", "expected"),
    [
        # 2·rows·k·n as the addmm the functional overload becomes; the bias add is not counted there
        (lambda: aten.linear.out(X, W, B, out=torch.empty(4, 5)), "aten.linear", 240),
        (lambda: aten.softmax.int_out(X, 1, out=torch.empty(4, 6)), "aten.softmax", 112),
        (lambda: aten.log_softmax.int_out(X, 1, out=torch.empty(4, 6)), "aten.log_softmax", 4 * 24 - 4),
        # exact adaptive windows: 6 -> 3 reads 6 + 3 − 3 = 6 per axis, 36 per plane, 2 planes
        (
            lambda: aten.adaptive_avg_pool2d.out(torch.ones(1, 2, 6, 6), [3, 3], out=torch.empty(1, 2, 3, 3)),
            "aten.adaptive_avg_pool2d",
            72,
        ),
        (
            lambda: aten.avg_pool1d.out(torch.ones(1, 2, 6), [2], out=torch.empty(1, 2, 3)),
            "aten.avg_pool1d",
            6 * 2,
        ),
    ],
)
def test_out_forms_of_composites_count_as_their_decomposition(workload, operator, expected):
    assert complete(workload) == (expected, {operator: expected})


def test_out_forms_match_the_functional_call():
    functional = complete(lambda: torch.nn.functional.linear(X, W, B))[0]
    assert complete(lambda: aten.linear.out(X, W, B, out=torch.empty(4, 5)))[0] == functional  # addmm's count
    into = torch.empty(4, 6)
    assert (
        complete(lambda: torch.softmax(X, 1))[0] == complete(lambda: aten.softmax.int_out(X, 1, out=into))[0]
    )


def test_quantization_arithmetic():
    quantized = torch.quantize_per_tensor(X, 0.1, 0, torch.quint8)
    # divide, round, add the zero point, two comparisons per element of the floating input
    assert complete(lambda: torch.quantize_per_tensor(X, 0.1, 0, torch.quint8)) == (
        120,
        {"aten.quantize_per_tensor": 120},
    )
    assert complete(quantized.dequantize) == (48, {"aten.dequantize": 48})  # (q − z)·s
    assert complete(quantized.int_repr) == (0, {})  # the stored integers: data movement
    assert classify_overload(aten.int_repr.default) == ("ignored", MOVE_REASON)
    # fake quantization: divide, round, add, clamp (2), subtract, multiply
    fake = complete(lambda: torch.fake_quantize_per_tensor_affine(X, 0.1, 0, 0, 255))
    assert fake == (168, {"aten.fake_quantize_per_tensor_affine_cachemask": 168})


def test_learnable_fake_quantization_trains_completely():
    inputs = X.clone().requires_grad_()
    scale = torch.tensor([0.1], requires_grad=True)

    def step():
        zero_point = torch.tensor([0.0])
        torch._fake_quantize_learnable_per_tensor_affine(inputs, scale, zero_point, 0, 255).sum().backward()

    report = measure_flops(step)  # a training step: measured with autograd only
    assert report["total"]["status"] == "complete", report["diagnostics"]
    by_operator = report["by_operator"]
    assert by_operator["aten._fake_quantize_learnable_per_tensor_affine"] == 7 * 24
    assert by_operator["aten._fake_quantize_learnable_per_tensor_affine_backward"] == 11 * 24


def test_affine_grids_and_linear_combinations():
    theta = torch.ones(1, 2, 3)
    # the base grid [H·W, 3] times θᵀ: 6 per output coordinate (4·5 locations, 2 coordinates)
    assert complete(lambda: aten.affine_grid_generator(theta, [1, 1, 4, 5], False)) == (
        240,
        {"aten.affine_grid_generator": 240},
    )
    assert complete(lambda: aten._compute_linear_combination(torch.ones(3, 4), torch.ones(2, 3))) == (
        2 * 8 * 3,
        {"aten._compute_linear_combination": 48},
    )
    pairs = ([torch.ones(2, 3), torch.ones(4, 3)], [torch.ones(3, 5), torch.ones(3, 1)])
    assert complete(lambda: aten._foreach_mm(*pairs)) == (60 + 24, {"aten._foreach_mm": 84})


def test_renorm_names_its_unsupported_order():
    assert "orders 1, 2 and infinity" in unsupported(lambda: torch.renorm(X, 3, 0, 1.0), "aten.renorm")


def test_backend_packing_and_queries_are_ignored_with_their_category():
    assert classify_overload(aten._cudnn_rnn_flatten_weight.default) == ("ignored", MOVE_REASON)
    assert classify_overload(aten._fused_sdp_choice.default) == ("ignored", METADATA_REASON)
    assert classify_overload(aten.cudnn_convolution_relu.default)[0] == "supplemental"


def test_dequantize_lists_sum_their_results():
    results = [torch.empty(2, 3), torch.empty(4)]
    assert fused_ops.dequantize((results,), {}, results) == 2 * (6 + 4)


def test_the_qat_observer_is_unsupported_naming_its_tensor_flags():
    from torch.ao.quantization import get_default_qat_qconfig, prepare_qat

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3)).train()
    model.qconfig = get_default_qat_qconfig("fbgemm")
    model = prepare_qat(model)
    report = measure_flops(lambda: model(torch.ones(1, 3, 8, 8)))
    assert report["total"]["status"] == "partial" and report["total"]["known_value"] > 0
    messages = {entry["operator"]: entry["message"] for entry in report["diagnostics"]}
    assert messages == {"aten._fused_moving_avg_obs_fq_helper": fused_ops.OBSERVER_FLAGS_REASON}
