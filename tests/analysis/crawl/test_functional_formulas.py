"""Functional formulas in full analyses (real-models.md 1 and the acceptance examples of 3)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from torchscan import crawl_module

_COMPUTE = ("module_flops", "macs", "dmas")


def _row(report, path):
    return next(layer for layer in report["layers"] if layer["path"] == path)


def _totals(report, names=_COMPUTE):
    return {name: (report["totals"][name]["status"], report["totals"][name]["known_value"]) for name in names}


class _ConvResidual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.conv(x)) + x


def test_residual_block_is_complete_and_strict():
    report = crawl_module(_ConvResidual(), args=(torch.ones(1, 4, 8, 8),), strict=True)
    conv, relu = _row(report, "conv")["metrics"], _row(report, "relu")["metrics"]
    # conv: Nout = 256, terms = 4*9 = 36 -> 256*(2*36 - 1 + 1) = 18,432 FLOPs, 9,216 MACs;
    # DMAs 4*9*256 + 148 + 256 = 9,620. ReLU: 256 FLOPs, 512 DMAs. The add: 256 FLOPs, 3*256 DMAs.
    assert conv["module_flops"]["value"] == 18432 and relu["module_flops"]["value"] == 256
    assert _totals(report) == {
        "module_flops": ("complete", 18432 + 256 + 256),
        "macs": ("complete", 9216),
        "dmas": ("complete", 9620 + 512 + 768),
    }
    root = _row(report, "")["metrics"]
    assert [root[n]["value"] for n in _COMPUTE] == [256, 0, 768]
    assert {root[n]["method"] for n in _COMPUTE} == {"torchscan_module_formula"}


class _GeluLeaf(nn.Module):
    def forward(self, x):
        return F.gelu(x)


def test_leaf_without_formula_is_estimated_from_its_operators():
    x = torch.linspace(-2, 2, 8)
    leaf = crawl_module(_GeluLeaf(), args=(x,))
    module = crawl_module(nn.GELU(), args=(x,))
    row = _row(leaf, "")["metrics"]
    for name in _COMPUTE:
        assert row[name] == _row(module, "")["metrics"][name]
        assert row[name]["status"] == "complete"
    assert row["module_flops"]["value"] == 40  # exact GELU: 5 FLOPs per element, 8 elements
    # Its geometry is unknown: receptive field unavailable with the usual diagnostic.
    assert row["receptive_field"]["status"] == "unavailable"
    codes = {(d["code"], d["metric"]) for d in leaf["diagnostics"]}
    assert ("unsupported_module_metric", "receptive_field") in codes
    assert not any(d["metric"] in _COMPUTE for d in leaf["diagnostics"])


_LIB = torch.library.Library("torchscan_g_test", "DEF")
_LIB.define("twice(Tensor x) -> Tensor")
_LIB.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")


class _CustomOp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.relu = nn.ReLU()

    def forward(self, x):
        return torch.ops.torchscan_g_test.twice(self.relu(x))


def test_custom_operator_without_formula_leaves_its_row_unavailable():
    report = crawl_module(_CustomOp(), args=(torch.ones(4),))
    root = _row(report, "")["metrics"]
    assert {root[n]["status"] for n in _COMPUTE} == {"unavailable"}
    # The ReLU leaf stays estimated: 4 FLOPs, 0 MACs, 8 DMAs known, totals partial.
    assert _totals(report) == {
        "module_flops": ("partial", 4),
        "macs": ("partial", 0),
        "dmas": ("partial", 8),
    }
    functional = [d for d in report["diagnostics"] if d["code"] == "unestimated_functional_work"]
    assert len(functional) == 1 and functional[0]["path"] == ""
    assert "torchscan_g_test.twice (1 call(s))" in functional[0]["message"]
    uncounted = [d for d in report["diagnostics"] if d["code"] == "uncounted_operator"]
    assert [d["operator"] for d in uncounted] == ["torchscan_g_test.twice"]
    assert report["totals"]["operator_flops"]["status"] == "partial"


def test_structure_mode_runs_no_functional_formula():
    report = crawl_module(_ConvResidual(), args=(torch.ones(1, 4, 8, 8),), mode="structure")
    assert "module_flops" not in _row(report, "")["metrics"]


# --- modules vs functionals: identical module FLOPs/MACs/DMAs ------------------------------------


class _Pair(nn.Module):
    """One computation written with a module (``functional=False``) or with functionals."""

    def __init__(self, kind: str, features: int, functional: bool) -> None:
        super().__init__()
        self.kind, self.functional = kind, functional
        self.linear = nn.Linear(features, features)
        self.conv = nn.Conv2d(features, features, 3, padding=1)
        self.norm = nn.LayerNorm(features)
        self.relu, self.softmax = nn.ReLU(), nn.Softmax(dim=-1)

    def forward(self, x):
        kind, fn = self.kind, self.functional
        if kind == "relu":
            return F.relu(x) if fn else self.relu(x)
        if kind == "softmax":
            return torch.softmax(x, -1) if fn else self.softmax(x)
        if kind == "linear":
            return F.linear(x, self.linear.weight, self.linear.bias) if fn else self.linear(x)
        if kind == "layer_norm":
            return F.layer_norm(x, (x.shape[-1],), self.norm.weight, self.norm.bias) if fn else self.norm(x)
        if kind == "residual":
            return (F.relu(x) if fn else self.relu(x)) + x
        if kind == "conv":
            return F.conv2d(x, self.conv.weight, self.conv.bias, padding=1) if fn else self.conv(x)
        raise AssertionError(kind)


def _values(model, x):
    report = crawl_module(model, args=(x,))
    return {name: (r["status"], r["value"]) for name, r in report["totals"].items() if name in _COMPUTE}


@settings(max_examples=25, deadline=None)
@given(
    kind=st.sampled_from(["relu", "softmax", "linear", "layer_norm", "residual", "conv"]),
    features=st.integers(1, 4),
    rows=st.integers(1, 3),
)
def test_modules_and_functionals_agree(kind, features, rows):
    shape = (rows, features, 3, 3) if kind == "conv" else (rows, features)
    x = torch.randn(shape)
    by_module = _values(_Pair(kind, features, False), x)
    by_functional = _values(_Pair(kind, features, True), x)
    assert by_module == by_functional
    assert {status for status, _ in by_module.values()} == {"complete"}


@settings(max_examples=15, deadline=None)
@given(features=st.integers(1, 5), rows=st.integers(1, 4))
def test_matmul_plus_bias_has_the_linear_flops_and_macs(features, rows):
    class MatMul(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(features, 3)

        def forward(self, x):
            return x @ self.linear.weight.T + self.linear.bias

    x = torch.randn(rows, features)
    # mm (rows*3*(2F - 1)) + add (rows*3) = rows*3*2F, the Linear with bias; the separate add reads
    # and writes its own operands, so DMAs differ by design (real-models.md 1: "the same MACs").
    written = _values(MatMul(), x)
    module = _values(nn.Linear(features, 3), x)
    assert written["module_flops"] == module["module_flops"] and written["macs"] == module["macs"]


def test_inference_mode_gives_the_same_functional_estimates():
    x = torch.randn(2, 4, 3, 3)
    model = _Pair("conv", 4, True)
    with torch.no_grad():
        expected = _values(model, x)
    with torch.inference_mode():
        assert _values(model, x) == expected


# --- leaves whose inherited module formula does not apply (real-models.md 1 (b)) -----------------


class _LayerNorm2d(nn.LayerNorm):
    """torchvision's ConvNeXt LayerNorm2d: channels-first input, permuted around F.layer_norm."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class _FalconLinear(nn.Linear):
    """transformers' FalconLinear: the product and the bias written out."""

    def forward(self, x):
        return x @ self.weight.T + self.bias


class _OffsetEmbedding(nn.Embedding):
    """OPT's learned positional embedding: positions shifted by an offset before the lookup."""

    def forward(self, positions):
        return super().forward(positions + 2)


class _PlainLinear(nn.Linear):
    """A subclass keeping the native forward: the Linear formula still applies."""


def _compute_row(report, path=""):
    return {name: _row(report, path)["metrics"][name] for name in _COMPUTE}


def test_subclass_with_its_own_forward_is_estimated_from_its_operators():
    x = torch.randn(1, 4, 3, 3)
    subclass = crawl_module(_LayerNorm2d(4), args=(x,), strict=True)
    native = crawl_module(nn.LayerNorm(4), args=(x.permute(0, 2, 3, 1),))
    # The permutes are views: the row is exactly nn.LayerNorm(4) on the 36-element permuted input.
    assert _compute_row(subclass) == _compute_row(native)
    assert {r["status"] for r in _compute_row(subclass).values()} == {"complete"}
    assert not any(d["metric"] in _COMPUTE for d in subclass["diagnostics"])
    # Its geometry is unknown: receptive field unavailable with the usual diagnostic.
    assert _row(subclass, "")["metrics"]["receptive_field"]["status"] == "unavailable"
    assert ("unsupported_module_metric", "receptive_field") in {
        (d["code"], d["metric"]) for d in subclass["diagnostics"]
    }


def test_written_out_linear_subclass_has_the_linear_flops_and_macs():
    torch.manual_seed(0)
    layer, x = _FalconLinear(5, 3), torch.randn(2, 5)
    native = nn.Linear(5, 3)
    written = _compute_row(crawl_module(layer, args=(x,)))
    module = _compute_row(crawl_module(native, args=(x,)))
    # mm 2*3*(2*5 - 1) = 54 + bias add 6 = 60 FLOPs, 30 MACs: the Linear with bias. The separate add
    # reads and writes its own operands, so DMAs differ by design.
    for name in ("module_flops", "macs"):
        assert written[name] == module[name]
    assert (written["module_flops"]["value"], written["macs"]["value"]) == (60, 30)


def test_embedding_with_offset_positions_is_estimated_from_its_operators():
    positions = torch.arange(3).reshape(1, 3)
    report = crawl_module(_OffsetEmbedding(10, 4), args=(positions,), strict=True)
    # int64 + 2: 0 FLOPs (integer result), DMAs 3 read + 3 written; the lookup: 3 indices read and
    # 12 output elements written (the Embedding convention of real-models.md 1). Total DMAs 21.
    assert {n: (r["status"], r["value"]) for n, r in _compute_row(report).items()} == {
        "module_flops": ("complete", 0),
        "macs": ("complete", 0),
        "dmas": ("complete", 21),
    }
    # The Embedding formula's refusal is kept for the geometry only.
    [error] = [d for d in report["diagnostics"] if d["code"] == "module_metric_error"]
    assert error["metric"] == "receptive_field"
    assert "Layout estimates require unchanged native forwards." in error["message"]


def test_subclass_keeping_the_native_forward_keeps_its_module_formula():
    x = torch.ones(1, 3)
    row = _compute_row(crawl_module(_PlainLinear(3, 2), args=(x,), strict=True))
    assert {n: r["value"] for n, r in row.items()} == {"module_flops": 12, "macs": 6, "dmas": 13}  # C4
    assert row == _compute_row(crawl_module(nn.Linear(3, 2), args=(x,)))


@settings(max_examples=15, deadline=None)
@given(channels=st.integers(1, 5), height=st.integers(1, 3), width=st.integers(1, 3), rows=st.integers(1, 3))
def test_library_subclasses_agree_with_their_native_bases(channels, height, width, rows):
    # Property: a subclass's own forward estimated from its operators gives the base module's numbers
    # on the tensors the base actually sees (all three metrics for LayerNorm2d; FLOPs and MACs for
    # the written-out Linear, whose separate bias add has its own DMAs).
    x = torch.randn(rows, channels, height, width)
    assert _compute_row(crawl_module(_LayerNorm2d(channels), args=(x,))) == _compute_row(
        crawl_module(nn.LayerNorm(channels), args=(x.permute(0, 2, 3, 1),))
    )
    flat = torch.randn(rows, channels)
    written = _compute_row(crawl_module(_FalconLinear(channels, 3), args=(flat,)))
    native = _compute_row(crawl_module(nn.Linear(channels, 3), args=(flat,)))
    assert [written[n] for n in ("module_flops", "macs")] == [native[n] for n in ("module_flops", "macs")]
