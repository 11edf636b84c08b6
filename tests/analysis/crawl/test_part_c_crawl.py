"""formulas.md Part C through the whole pipeline: crawl_module's module totals and operator FLOPs.

Each row: module, input shape (torch.ones, no batch added), module FLOPs / MACs / DMAs, operator
FLOPs ("Op"). The hand arithmetic is in formulas.md Part C; comments repeat the key products.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import crawl_module

CASES = [
    # C1: Nout 7,200 x (2*27 - 1 + 1) = 388,800; MACs 7,200*27; DMAs 27*7,200 + 224 + 7,200
    ("conv2d", lambda: nn.Conv2d(3, 8, 3), (1, 3, 32, 32), 388_800, 194_400, 201_824, 388_800),
    # C2: 24 inputs scatter to 3 channels through 3 taps = 216 MACs; FLOPs 432 + 72 biases
    (
        "conv_transpose1d",
        lambda: nn.ConvTranspose1d(4, 6, 3, groups=2, stride=2, padding=1, output_padding=1),
        (2, 4, 3),
        504,
        216,
        551,
        432,
    ),
    # C3: 60 outputs x 6 terms (no bias): 60*11 = 660; Op 2*360
    ("conv1d_grouped", lambda: nn.Conv1d(4, 6, 3, groups=2, bias=False), (2, 4, 7), 660, 360, 456, 720),
    # C4: 6 vectors x 5 outputs x 7 + 30 biases
    ("linear", lambda: nn.Linear(4, 5), (2, 3, 4), 240, 120, 79, 240),
    ("linear_small", lambda: nn.Linear(3, 2), (1, 3), 12, 6, 13, 12),
    # C5: normalize 48 + epsilon/sqrt 6 + affine 48
    ("batchnorm1d", lambda: nn.BatchNorm1d(3), (2, 3, 4), 102, 48, 62, 102),
    # C6: 4*(6 + 18) + 8 + 48 + 48
    ("layernorm", lambda: nn.LayerNorm((2, 3)), (2, 2, 2, 3), 200, 48, 177, 200),
    ("groupnorm", lambda: nn.GroupNorm(3, 6), (2, 6, 2), 204, 48, 187, 204),
    # C7: 32 outputs, K = 4
    ("maxpool2d", lambda: nn.MaxPool2d(2), (1, 2, 8, 8), 96, 96, 160, 96),
    ("avgpool2d", lambda: nn.AvgPool2d(2), (1, 2, 8, 8), 128, 160, 160, 128),
    # C8: visits 2*7*8 = 112, Nout 12
    ("adaptive_avg", lambda: nn.AdaptiveAvgPool2d((3, 2)), (1, 2, 5, 7), 112, 124, 124, 112),
    ("adaptive_max", lambda: nn.AdaptiveMaxPool2d((3, 2)), (1, 2, 5, 7), 100, 100, 124, 100),
    # C9: (2, 4), N = 8
    ("relu", lambda: nn.ReLU(), (2, 4), 8, 0, 16, 8),
    ("softsign", lambda: nn.Softsign(), (2, 4), 24, 0, 16, 24),
    ("selu", lambda: nn.SELU(), (2, 4), 56, 0, 16, 56),
    ("tanhshrink", lambda: nn.Tanhshrink(), (2, 4), 56, 0, 16, 56),
    ("gelu_tanh", lambda: nn.GELU(approximate="tanh"), (2, 4), 112, 0, 16, 112),
    ("mish", lambda: nn.Mish(), (2, 4), 80, 0, 16, 80),
    ("glu", lambda: nn.GLU(dim=-1), (2, 4), 20, 0, 12, 20),
    # C10: R = 2, S = 4
    ("softmax", lambda: nn.Softmax(dim=-1), (2, 4), 36, 0, 72, 36),
    ("logsoftmax", lambda: nn.LogSoftmax(dim=-1), (2, 4), 30, 0, 76, 30),
    ("softmin", lambda: nn.Softmin(dim=-1), (2, 4), 44, 0, 88, 44),
    # C11: evaluation dropout dispatches nothing
    ("dropout", lambda: nn.Dropout(0.5), (2, 3), 0, 0, 13, 0),
    # C12: layout modules
    ("pixel_shuffle", lambda: nn.PixelShuffle(2), (1, 4, 2, 2), 0, 0, 32, 0),
    ("constant_pad", lambda: nn.ConstantPad1d(1, 0), (2, 4), 0, 0, 20, 0),
    ("upsample_linear", lambda: nn.Upsample(size=6, mode="linear"), (1, 1, 3), 18, 12, 18, 18),
    ("upsample_bicubic", lambda: nn.Upsample(size=4, mode="bicubic"), (1, 1, 2, 2), 496, 256, 272, 496),
    ("upsample_area", lambda: nn.Upsample(size=2, mode="area"), (1, 1, 4, 4), 16, 20, 20, 16),
]


@pytest.mark.parametrize(
    ("build", "shape", "flops", "macs", "dmas", "op"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_part_c_through_crawl_module(build, shape, flops, macs, dmas, op):
    report = crawl_module(build(), args=(torch.ones(shape),), strict=True)
    totals = report["totals"]
    assert (totals["module_flops"]["value"], totals["macs"]["value"], totals["dmas"]["value"]) == (
        flops,
        macs,
        dmas,
    )
    assert totals["operator_flops"]["status"] == "complete"
    assert totals["operator_flops"]["value"] == op


def test_embedding_with_integer_indices():
    # C12: Embedding(10, 4) on [[1, 1], [2, 3]]: DMAs N + 2*Nout = 4 + 32; Op 0 (aten.embedding ignored)
    report = crawl_module(nn.Embedding(10, 4), args=(torch.tensor([[1, 1], [2, 3]]),), strict=True)
    assert report["totals"]["dmas"]["value"] == 36
    assert report["totals"]["operator_flops"]["value"] == 0
    assert "aten.embedding" in report["operator_flops"]["ignored_operators"]


def test_replaced_forward_fails_strict():
    # C9: a Softplus whose instance forward was replaced is not the native family.
    from torchscan import IncompleteAnalysisError

    softplus = nn.Softplus()
    softplus.forward = lambda x: torch.nn.functional.softplus(x)  # type: ignore[method-assign]
    with pytest.raises(IncompleteAnalysisError):
        crawl_module(softplus, args=(torch.ones(2, 4),), strict=True)


def test_complex_linear_module_flops_unavailable():
    # C21
    left = torch.ones(1, 2, dtype=torch.complex64)
    report = crawl_module(nn.Linear(2, 1, dtype=torch.complex64), args=(left,))
    assert report["totals"]["module_flops"]["status"] == "unavailable"


def test_sparse_relu():
    # C22
    sparse = torch.sparse_coo_tensor([[0, 1], [1, 2]], [1.0, 2.0], (3, 3))
    report = crawl_module(nn.ReLU(), args=(sparse,))
    assert report["totals"]["module_flops"]["status"] == "unavailable"
    assert report["totals"]["operator_flops"]["status"] == "partial"


def test_custom_mapping_is_scoped_to_one_analysis():
    class Atan(nn.Module):
        def forward(self, x):
            return torch.logcumsumexp(x, 0)  # no formula of its own (atan is now a pointwise row)

    mapping = {torch.ops.aten.logcumsumexp: lambda *a, out_shape, **k: 7}
    counted = crawl_module(Atan(), (3,), custom_mapping=mapping)
    assert counted["totals"]["operator_flops"]["status"] == "complete"
    assert counted["totals"]["operator_flops"]["value"] == 7
    assert counted["layers"][0]["metrics"]["operator_flops_self"]["value"] == 7
    again = crawl_module(Atan(), (3,))
    assert again["totals"]["operator_flops"]["status"] == "partial"
