"""Modules called without a tensor (families.md 3): estimated from their operators, shapes say "Size[…]".

A positional-embedding module called with a ``torch.Size`` (or a sequence length) used to be left
``unavailable`` with ``missing_metric_tensor``; it is now estimated by the functional formulas of
real-models.md 1 (b), and its input metadata records the size it was called with.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchscan
from torchscan.analysis.crawl.inputs import describe
from torchscan.views.analysis.evidence import call_shapes
from torchscan.views.analysis.table_cells import (
    shape_text as _shape,  # the table's own shape wording, under test
)

COMPUTE = ("module_flops", "macs", "dmas")


class SizePositions(nn.Embedding):
    """Learned positions looked up from the sequence length of a ``torch.Size`` (BART/Marian-style)."""

    def forward(self, shape: torch.Size) -> torch.Tensor:  # type: ignore[override]
        return super().forward(torch.arange(shape[1]))


class LengthScaled(nn.Module):
    """A module called with an ``int`` length: scales the first ``n`` rows of a table."""

    def __init__(self) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.randn(16, 8))

    def forward(self, n: int) -> torch.Tensor:
        return self.table[:n] * 2


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pos = SizePositions(16, 8)
        self.scaled = LengthScaled()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.pos(x.shape) + self.scaled(x.shape[1])


def _layer(report: dict, path: str) -> dict:
    return next(layer for layer in report["layers"] if layer["path"] == path)


def _values(layer: dict) -> dict[str, tuple[str, int | None]]:
    return {name: (layer["metrics"][name]["status"], layer["metrics"][name]["value"]) for name in COMPUTE}


def test_size_called_embedding_is_estimated_from_its_operators() -> None:
    report = torchscan.crawl_module(Net(), args=(torch.randn(1, 10, 8),))
    pos = _layer(report, "pos")
    # embedding of 10 positions × 8 dims: FLOPs 0, MACs 0, DMAs = 10 indices read + 80 outputs written
    assert _values(pos) == {
        "module_flops": ("complete", 0),
        "macs": ("complete", 0),
        "dmas": ("complete", 90),
    }
    assert pos["input"]["args"] == [{"kind": "size", "shape": [1, 10, 8]}]
    codes = {(d["code"], d["metric"]) for d in report["diagnostics"] if d.get("path") == "pos"}
    # only its geometry is unknown (no input tensor): never a compute metric
    assert codes == {("missing_metric_tensor", "receptive_field")}
    for name in COMPUTE:
        assert report["totals"][name]["status"] == "complete"


def test_int_called_module_is_estimated() -> None:
    report = torchscan.crawl_module(Net(), args=(torch.randn(1, 10, 8),))
    scaled = _layer(report, "scaled")
    # mul of a 10×8 slice by 2: 80 FLOPs, 0 MACs, DMAs 80 read + 80 written
    assert _values(scaled) == {
        "module_flops": ("complete", 80),
        "macs": ("complete", 0),
        "dmas": ("complete", 160),
    }
    assert scaled["input"]["args"] == [{"kind": "scalar", "type": "int"}]


def test_shape_columns_say_what_the_call_got() -> None:
    assert describe(torch.Size([1, 128])) == {"kind": "size", "shape": [1, 128]}
    assert _shape(describe(torch.Size([1, 128]))) == "Size[1, 128]"
    assert _shape(describe(128)) == "int"  # the type, never the value
    report = torchscan.crawl_module(Net(), args=(torch.randn(1, 10, 8),))
    assert call_shapes(_layer(report, "pos")) == "Size[1, 10, 8] → [10, 8]"
    assert call_shapes(_layer(report, "scaled")) == "scalar int → [10, 8]"


def test_marian_size_called_positions_are_complete() -> None:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.MarianConfig(
        vocab_size=100,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=64,
        pad_token_id=0,
        decoder_start_token_id=0,
    )
    model = transformers.MarianModel(config).eval()
    kwargs = {
        "input_ids": torch.randint(1, 100, (1, 12)),
        "decoder_input_ids": torch.randint(1, 100, (1, 5)),
        "use_cache": False,
    }
    report = torchscan.crawl_module(model, kwargs=kwargs)
    encoder_positions = _layer(report, "encoder.embed_positions")
    assert encoder_positions["type"] == "MarianSinusoidalPositionalEmbedding"
    assert encoder_positions["input"]["args"][0] == {"kind": "size", "shape": [1, 12]}
    # 12 positions × 16 dims looked up: DMAs = 12 indices + 192 outputs
    assert _values(encoder_positions) == {
        "module_flops": ("complete", 0),
        "macs": ("complete", 0),
        "dmas": ("complete", 204),
    }
    assert not [
        d for d in report["diagnostics"] if d["code"] == "missing_metric_tensor" and d["metric"] in COMPUTE
    ]
    for name in COMPUTE:
        assert report["totals"][name]["status"] == "complete", name
    assert report["operator_flops"]["total"]["status"] == "complete"


class OptionalNorm(nn.Module):
    """Perceiver-style: a native leaf (``nn.Identity``) called with ``None`` when no context is given."""

    def __init__(self) -> None:
        super().__init__()
        self.context_norm = nn.Identity()
        self.norm = nn.LayerNorm(8)

    def forward(self, x: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
        context = self.context_norm(context)
        return self.norm(x) if context is None else self.norm(x + context)


def test_native_leaf_called_with_none_is_a_complete_zero() -> None:
    report = torchscan.crawl_module(OptionalNorm(), args=(torch.randn(2, 8),))
    identity = _layer(report, "context_norm")
    assert _values(identity) == {name: ("complete", 0) for name in COMPUTE}
    codes = {(d["code"], d.get("metric")) for d in report["diagnostics"] if d.get("path") == "context_norm"}
    assert ("missing_metric_tensor", "module_flops") not in codes
    assert all(report["totals"][name]["status"] == "complete" for name in COMPUTE)
    # the LayerNorm, called with a tensor, keeps its module formula
    norm = _layer(report, "norm")
    assert norm["metrics"]["module_flops"]["status"] == "complete"
    assert norm["metrics"]["module_flops"]["value"] > 0
