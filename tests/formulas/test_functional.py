"""Functional formulas on captured calls (real-models.md 1): the §1 table, one family at a time."""

from __future__ import annotations

import torch
from torch import nn

from torchscan.analysis.dispatch import kinds as resolution
from torchscan.formulas import functional, meta_modules
from torchscan.formulas.functional import TensorMeta, capture, estimate_call
from torchscan.formulas.registry import dmas, flops, macs

F32 = torch.float32


def _call(name, *args, kind=functional.INHERITED, flops_=0, complete=True, ignored=False, out=None, **kwargs):
    return capture(name, kind, flops_, complete, ignored, args, kwargs, out)


def _module_counts(module, x):
    out = module(x)
    return (
        flops.lookup(type(module))(module, (x,), out),
        macs.lookup(type(module))(module, x, out),
        dmas.lookup(type(module))(module, x, out),
    )


def test_kinds_match_the_observer():
    assert (functional.CUSTOM, functional.INHERITED, functional.SUPPLEMENTAL) == (
        resolution.CUSTOM,
        resolution.INHERITED,
        resolution.SUPPLEMENTAL,
    )
    assert (functional.IGNORED, functional.UNCOUNTED) == (
        resolution.IGNORED,
        resolution.UNCOUNTED,
    )


def test_capture_keeps_shapes_and_dtypes_only():
    call = _call("aten.add", torch.ones(2, 3), 2.0, out=torch.ones(2, 3), alpha=1)
    assert call.args == (TensorMeta((2, 3), F32), 2.0)
    assert call.kwargs == (("alpha", 1),)
    assert hash(call) == hash(_call("aten.add", torch.zeros(2, 3), 2.0, out=torch.zeros(2, 3), alpha=1))


def test_addmm_is_a_linear_with_bias():
    x, layer = torch.randn(3, 5), nn.Linear(5, 2)
    out = layer(x)
    call = _call("aten.addmm", layer.bias, x, layer.weight.T, out=out)
    assert estimate_call(call) == _module_counts(layer, x)


def test_mm_is_a_linear_without_bias_and_bmm_one_per_batch():
    x, layer = torch.randn(3, 5), nn.Linear(5, 2, bias=False)
    assert estimate_call(_call("aten.mm", x, layer.weight.T, out=layer(x))) == _module_counts(layer, x)
    a, b = torch.randn(4, 3, 5), torch.randn(4, 5, 2)
    per = _module_counts(layer, x)
    # 4 batches of the (3, 5) x (5, 2) product: DMAs read each batch's own right operand.
    assert estimate_call(_call("aten.bmm", a, b, out=a @ b)) == tuple(4 * v for v in per)


def test_convolution_is_the_conv_module():
    conv, x = nn.Conv2d(2, 4, 3, stride=2, padding=1, groups=2), torch.randn(1, 2, 7, 7)
    call = _call(
        "aten.convolution", x, conv.weight, conv.bias, [2, 2], [1, 1], [1, 1], False, [0, 0], 2, out=conv(x)
    )
    assert estimate_call(call) == _module_counts(conv, x)


def test_activations_softmax_and_norms_are_their_modules():
    x = torch.randn(2, 6)
    assert estimate_call(_call("aten.relu", x, out=x.relu())) == _module_counts(nn.ReLU(), x)
    assert estimate_call(_call("aten.relu_", x, out=x)) == _module_counts(nn.ReLU(inplace=True), x.clone())
    assert estimate_call(_call("aten.tanh", x, out=x.tanh())) == _module_counts(nn.Tanh(), x)
    gelu = _call("aten.gelu", x, approximate="tanh", out=x)
    assert estimate_call(gelu) == _module_counts(nn.GELU("tanh"), x)
    assert estimate_call(_call("aten._softmax", x, 1, False, out=x)) == _module_counts(nn.Softmax(1), x)
    norm = nn.LayerNorm(6)
    call = _call("aten.native_layer_norm", x, [6], norm.weight, norm.bias, 1e-5, out=(x, x, x))
    assert estimate_call(call) == _module_counts(norm, x)


def test_pointwise_copy_view_and_indexing_rules():
    x = torch.randn(4, 3)
    add = _call("aten.add", x, x[0], kind=functional.SUPPLEMENTAL, flops_=12, out=x)
    assert estimate_call(add) == (12, 0, 12 + 3 + 12)  # operator FLOPs, 0 MACs, reads + writes
    # A pointwise call whose operator formula failed: FLOPs unknown, MACs still 0, DMAs known.
    failed = _call("aten.add", x, x, kind=functional.SUPPLEMENTAL, complete=False, out=x)
    assert estimate_call(failed) == (None, 0, 36)
    cat = _call("aten.cat", (x, x), kind=functional.IGNORED, ignored=True, out=torch.cat((x, x)))
    assert estimate_call(cat) == (0, 0, 24 + 24)
    assert "aten.view" in functional.ZERO_COST and "aten.randn" not in functional.ZERO_COST
    index = torch.tensor([0, 2])
    emb = _call("aten.embedding", x, index, kind=functional.IGNORED, ignored=True, out=x[index])
    assert estimate_call(emb) == (0, 0, 2 + 6)  # index elements read + output elements written
    rand = _call("aten.rand", [4], kind=functional.IGNORED, ignored=True, out=x)
    assert estimate_call(rand) == (0, 0, 0)


def test_operators_without_functional_formula_are_unestimated():
    x = torch.randn(3)
    assert estimate_call(_call("mylib.op", x, kind=functional.UNCOUNTED, complete=False, out=x)) == (
        None,
        None,
        None,
    )
    assert estimate_call(_call("mylib.op", x, kind=functional.CUSTOM, flops_=3, out=x)) == (None, None, None)
    # A listed operator whose call the formula rejects (a malformed convolution) is unestimated too.
    assert estimate_call(_call("aten.convolution", x, out=x)) == (None, None, None)


def test_sdpa_core_counts_scores_softmax_and_values():
    q = k = v = torch.randn(1, 2, 3, 4)  # lead 2, T = S = 3, D = Dv = 4 -> A = 18, R = 6
    call = _call("aten._scaled_dot_product_flash_attention_for_cpu", q, k, v, 0.0, False, out=(q, q))
    flops_, macs_, dmas_ = estimate_call(call)
    # 24 scaling + 18*7 scores + 5*18 - 2*6 softmax + 24*5 values = 24 + 126 + 78 + 120
    assert flops_ == 348
    assert macs_ == 18 * 4 + 18 * 4
    assert dmas_ == 24 * 3 + 4 * 18 + 24


def test_grouped_mm_is_one_expert_linear_per_row():
    # 6 packed rows of width 4 through 3 experts of (4, 2): as nn.Linear(4, 2) without bias on 6 rows,
    # FLOPs 6*2*(2*4 - 1) = 84, MACs 4*12 = 48; DMAs read the rows 24, all expert weights 3*8 = 24 and
    # the 3 offsets, and write 12: 63.
    rows, experts, offs = torch.randn(6, 4), torch.randn(3, 4, 2), torch.tensor([2, 4, 6], dtype=torch.int32)
    call = _call("aten._grouped_mm", rows, experts, offs, kind=functional.SUPPLEMENTAL, out=torch.ones(6, 2))
    assert estimate_call(call) == (84, 48, 63)
    layer = nn.Linear(4, 2, bias=False)
    assert estimate_call(call)[:2] == _module_counts(layer, rows)[:2]


def test_vector_products_are_single_row_linears():
    a, x = torch.randn(3, 5), torch.randn(5)
    # mv: nn.Linear(5, 3) without bias on one row: FLOPs 3*9 = 27, MACs 15, DMAs 5 + 15 + 3 = 23
    assert estimate_call(_call("aten.mv", a, x, kind=functional.SUPPLEMENTAL, out=a @ x)) == (27, 15, 23)
    # dot of two 5-vectors: nn.Linear(5, 1): FLOPs 9, MACs 5, DMAs 5 + 5 + 1 = 11
    assert estimate_call(_call("aten.dot", x, x, kind=functional.SUPPLEMENTAL, out=x @ x)) == (9, 5, 11)


def test_product_kernels_are_never_pointwise():
    # A recurrent or bilinear kernel multiplies matrices: the pointwise rule (0 MACs) must not apply,
    # and without a functional formula of its own the call is unestimated in all three metrics.
    x = torch.randn(2, 3)
    for name in ("aten.lstm", "aten._trilinear", "aten._native_multi_head_attention"):
        assert name in functional.PRODUCT_KERNELS
        call = _call(name, x, kind=functional.SUPPLEMENTAL, flops_=10, out=x)
        assert estimate_call(call) == (None, None, None)


def test_complex_products_cost_four_real_ones():
    # truth.md 3: bmm of (2, 3, 4) by (2, 4, 5) complex, as Linear(4, 5) on 3 rows per batch: FLOPs
    # 3·5·(2·4 − 1) = 105, MACs 60 per batch; ×2 batches ×4 (a complex MAC is 4 real ones): 840 and
    # 480; DMAs are element accesses, unchanged by the dtype
    a, b = torch.ones(2, 3, 4), torch.ones(2, 4, 5)
    real = estimate_call(_call("aten.bmm", a, b, out=a @ b))
    ca, cb = a.to(torch.complex64), b.to(torch.complex64)
    flops_, macs_, dmas_ = estimate_call(_call("aten.bmm", ca, cb, out=ca @ cb))
    assert (flops_, macs_) == (840, 480) == (4 * real[0], 4 * real[1])
    assert dmas_ == real[2]


def test_meta_modules_are_keyed_by_type_and_never_by_an_unhashable_value():
    # truth.md 2: 1, 1.0 and True configure three modules; a list is keyed by a copy of its items; a
    # value that cannot be keyed (a tensor) builds a module for the call without caching it.
    by_int = meta_modules.meta_module(nn.Threshold, 1, 0)
    assert meta_modules.meta_module(nn.Threshold, 1, 0) is by_int
    by_float = meta_modules.meta_module(nn.Threshold, 1.0, 0.0)
    assert by_float is not by_int and type(by_float.threshold) is float
    shape = [4]
    listed = meta_modules.meta_module(nn.LayerNorm, shape)
    shape[0] = 8  # mutating the caller's list never changes the stored key
    assert meta_modules.meta_module(nn.LayerNorm, [4]) is listed
    assert meta_modules.meta_module(nn.LayerNorm, [8]).normalized_shape == (8,)
    uncached = meta_modules.meta_module(nn.Threshold, torch.tensor(1.0), 0)
    assert meta_modules.meta_module(nn.Threshold, torch.tensor(1.0), 0) is not uncached
