"""Module-formula tables of formulas.md Part C (C1-C13), hand arithmetic beside every number.

Every case runs the real module on a real input, then applies the public ``torchscan.modules``
functions to that call; the same tables are replayed on the meta device, where no value exists.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin

from torchscan.modules import module_dmas, module_flops, module_macs, module_rf

PW = (1.0, 1.0, 0.0)  # pointwise receptive triple
NA = None  # receptive field not applicable


@dataclass(frozen=True)
class Case:
    make: Callable[[], nn.Module]
    inp: Callable[[str], torch.Tensor]
    expected: tuple[int, int, int, tuple[float, float, float] | None]


def case(
    case_id: str, make: Callable[[], nn.Module], inp: Any, flops: int, macs: int, dmas: int, rf: Any
) -> Any:
    """``inp`` is a shape (float ones) or a function of the device returning the input."""
    factory = inp if callable(inp) else (lambda device: torch.ones(*inp, device=device))
    return pytest.param(Case(make, factory, (flops, macs, dmas, rf)), id=case_id)


def indices(device: str) -> torch.Tensor:
    return torch.tensor([[1, 1], [2, 3]], device=device)


def uint8(*shape: int) -> Callable[[str], torch.Tensor]:
    return lambda device: torch.ones(*shape, dtype=torch.uint8, device=device)


def evaluate(module: nn.Module, x: torch.Tensor) -> tuple[Any, ...]:
    """Run ``module`` on ``x`` and apply the four public formula functions to that call."""
    with torch.no_grad():
        out = module(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # formulas are pure: a recognised module never warns
        return (
            module_flops(module, (x,), out),
            module_macs(module, x, out),
            module_dmas(module, x, out),
            module_rf(module, x, out),
        )


CONVOLUTIONS = [
    # C1: out (1,8,30,30), Nout 7200, terms 9·3 = 27: FLOPs 7200·(54−1+1); MACs 7200·27;
    # DMAs 27·7200 + 224 params + 7200
    case("C1-conv2d", lambda: nn.Conv2d(3, 8, 3), (1, 3, 32, 32), 388_800, 194_400, 201_824, (3, 1, 0)),
    # C2: 24 inputs scatter to 3 channels through 3 taps: MACs 216; FLOPs 432 + 72 biases;
    # DMAs 5·1 + (4·3·72)//2 + (36 + 6) + 72; field −3, stride 1/2
    case(
        "C2-convtranspose1d",
        lambda: nn.ConvTranspose1d(4, 6, 3, groups=2, stride=2, padding=1, output_padding=1),
        (2, 4, 3),
        504,
        216,
        551,
        (-3, 0.5, 0),
    ),
    # C3: 60 outputs × 6 terms: FLOPs 60·11, MACs 360; DMAs (4·3·60)//2 + 36 + 60
    case("C3-conv1d", lambda: nn.Conv1d(4, 6, 3, groups=2, bias=False), (2, 4, 7), 660, 360, 456, (3, 1, 0)),
    # unbatched: 30 outputs: 30·11, 30·6, (4·3·30)//2 + 36 + 30
    case(
        "C3-conv1d-unbatched",
        lambda: nn.Conv1d(4, 6, 3, groups=2, bias=False),
        (4, 7),
        330,
        180,
        246,
        (3, 1, 0),
    ),
    # 150 outputs × 9 terms: 150·(17 + 1); 1350; (3·9·150)//3 + (54 + 6) + 150
    case(
        "C3-conv2d-depthwise",
        lambda: nn.Conv2d(3, 6, 3, groups=3, padding=1),
        (1, 3, 5, 5),
        2_700,
        1_350,
        1_560,
        (3, 1, 1),
    ),
    # out (1,2,2,2,2) = 16 × 8 terms: 16·(15 + 1); 128; (2·8·16)//2 + (16 + 2) + 16; field 2·(2−1)+1
    case(
        "C3-conv3d-dilated",
        lambda: nn.Conv3d(2, 2, 2, groups=2, dilation=2),
        (1, 2, 4, 4, 4),
        256,
        128,
        162,
        (3, 1, 0),
    ),
    # out (2,6,3,3) = 108 × 12 terms: 108·23; 1296; (4·6·108)//2 + 72 + 108; first axis k 2, d 2, s 2, p 1
    case(
        "C3-conv2d-strided",
        lambda: nn.Conv2d(4, 6, (2, 3), groups=2, stride=(2, 1), padding=(1, 0), dilation=(2, 1), bias=False),
        (2, 4, 6, 5),
        2_484,
        1_296,
        1_476,
        (3, 2, 1),
    ),
    # out (1,4,5,5) = 100; MACs 12 inputs · 2 · 6 taps = 144; FLOPs 288 + 100;
    # DMAs 5·2 + (2·6·100)//2 + (24 + 4) + 100
    case(
        "C3-convtranspose2d",
        lambda: nn.ConvTranspose2d(2, 4, (2, 3), groups=2, stride=2, padding=(0, 1), output_padding=(1, 0)),
        (1, 2, 2, 3),
        388,
        144,
        738,
        (-2, 0.5, 0),
    ),
    # out (1,2,5,5,5) = 250; MACs 16·1·8 = 128; FLOPs 256; DMAs 5·3 + (2·8·250)//2 + 16 + 250
    case(
        "C3-convtranspose3d",
        lambda: nn.ConvTranspose3d(2, 2, 2, groups=2, stride=2, dilation=2, bias=False),
        (1, 2, 2, 2, 2),
        256,
        128,
        2_281,
        (-2, 0.5, 0),
    ),
    # lazy variant, materialised by its first call: as C1
    case("C1-lazyconv2d", lambda: nn.LazyConv2d(8, 3), (1, 3, 32, 32), 388_800, 194_400, 201_824, (3, 1, 0)),
    # batch of 0: nothing read or written (A.4 rule 6)
    case("conv2d-empty-batch", lambda: nn.Conv2d(3, 8, 3), (0, 3, 8, 8), 0, 0, 0, (3, 1, 0)),
    # padding="same": out (1,1,5), 3 terms: 5·(5 + 1); 15; 15 + (3 + 1) + 5;
    # field 2·(3−1)+1 = 5, padding 2·2//2 = 2
    case(
        "conv1d-same",
        lambda: nn.Conv1d(1, 1, 3, padding="same", dilation=2),
        (1, 1, 5),
        30,
        15,
        24,
        (5, 1, 2),
    ),
]


def empty_linear(bias: bool) -> nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch: "Initializing zero-element tensors is a no-op"
        return nn.Linear(0, 5, bias=bias)


LINEAR = [
    # C4: 6 vectors × 5 outputs × 7 = 210 + 30 biases; MACs 4·30; DMAs 24 + 25 + 30
    case("C4-linear", lambda: nn.Linear(4, 5), (2, 3, 4), 240, 120, 79, PW),
    case("C4-linear-nobias", lambda: nn.Linear(4, 5, bias=False), (2, 3, 4), 210, 120, 74, PW),
    # one vector: 5·7 + 5; 4·5; 4 + 25 + 5
    case("C4-linear-1d", lambda: nn.Linear(4, 5), (4,), 40, 20, 34, PW),
    # K = 0: empty dot products cost 0, the 30 biases still add; DMAs 0 + 5 bias + 30 writes
    case("C4-linear-k0", lambda: empty_linear(True), (2, 3, 0), 30, 0, 35, PW),
    case("C4-linear-k0-nobias", lambda: empty_linear(False), (2, 3, 0), 0, 0, 30, PW),
    # 6 multiplies + 4 adds + 2 biases; MACs 3·2; DMAs 3 + 8 + 2
    case("C4-linear-small", lambda: nn.Linear(3, 2), (1, 3), 12, 6, 13, PW),
]


def bn(**kwargs: Any) -> Callable[[], nn.Module]:
    return lambda: nn.BatchNorm1d(3, **kwargs).eval()


def bn_train() -> nn.Module:
    return nn.BatchNorm1d(3).train()


NORMALIZATION = [
    # C5: N 24, C 3. normalize 2·24 + eps/sqrt 2·3 + affine 2·24; MACs 24·2;
    # DMAs 24 + 1 + 6 (buffers) + 6 (affine) + 1 (momentum) + 24
    case("C5-batchnorm-eval", bn(), (2, 3, 4), 102, 48, 62, PW),
    # training: + batch stats 4·24 + updates 8·3; MACs 48 + 3·7 + 3·15 + 12; DMAs 62 + (1 + 6)
    case("C5-batchnorm-train", bn_train, (2, 3, 4), 222, 126, 69, PW),
    # no affine: 48 + 6; MACs 24; DMAs 24 + 1 + 6 + 1 + 24
    case("C5-batchnorm-noaffine", bn(affine=False), (2, 3, 4), 54, 24, 56, PW),
    case("C5-syncbatchnorm-eval", lambda: nn.SyncBatchNorm(3).eval(), (2, 3, 4), 102, 48, 62, PW),  # as eval
    case("C5-batchnorm-empty-batch", bn(), (0, 3, 4), 0, 0, 0, PW),
    case("C5-batchnorm-empty-length", bn(), (2, 3, 0), 0, 0, 0, PW),
    # C6: N 24, R 4: 6·24 + 2·4 + 2·24; MACs 24·2; DMAs 4·24 + 5·4 + 1 + 12 + 2·24
    case("C6-layernorm", lambda: nn.LayerNorm((2, 3)), (2, 2, 2, 3), 200, 48, 177, NA),
    # without affine: 144 + 8; MACs 24; DMAs 96 + 20 + 1
    case(
        "C6-layernorm-noaffine",
        lambda: nn.LayerNorm((2, 3), elementwise_affine=False),
        (2, 2, 2, 3),
        152,
        24,
        117,
        NA,
    ),
    # R = 2·3: 144 + 12 + 48; 48; 96 + 30 + 1 + 12 + 48
    case("C6-groupnorm", lambda: nn.GroupNorm(3, 6), (2, 6, 2), 204, 48, 187, NA),
    case("C6-groupnorm-noaffine", lambda: nn.GroupNorm(3, 6, affine=False), (2, 6, 2), 156, 24, 127, NA),
    case("C6-groupnorm-empty-batch", lambda: nn.GroupNorm(2, 4), (0, 4, 3), 0, 0, 0, NA),
    # RMSNorm(3) on (2, 3): N 6, R 2, W 1: (3 + 1)·6 + 4; MACs 12; DMAs 18 + 8 + 1 + (12 + 3)
    case("rmsnorm", lambda: nn.RMSNorm(3), (2, 3), 28, 12, 42, NA),
    # without weight: 3·6 + 4; 6; 18 + 8 + 1
    case("rmsnorm-noaffine", lambda: nn.RMSNorm(3, elementwise_affine=False), (2, 3), 22, 6, 27, NA),
]

POOLING = [
    # C7: 32 outputs, K 4: 32·3 comparisons; DMAs 32·(4 + 1)
    case("C7-maxpool2d", lambda: nn.MaxPool2d(2), (1, 2, 8, 8), 96, 96, 160, (2, 2, 0)),
    # 32·4; MACs 32·(3 + 2); DMAs 32·5
    case("C7-avgpool2d", lambda: nn.AvgPool2d(2), (1, 2, 8, 8), 128, 160, 160, (2, 2, 0)),
    # 8 outputs, K 2: 8·1; 8; 8·3
    case("C7-maxpool1d", lambda: nn.MaxPool1d(2), (1, 2, 8), 8, 8, 24, (2, 2, 0)),
    # 8·2; 8·(1 + 1); 8·3
    case("C7-avgpool1d", lambda: nn.AvgPool1d(2), (1, 2, 8), 16, 16, 24, (2, 2, 0)),
    # unbatched (2,4,4) → 8 outputs, K (2,)→2² = 4: 8·3; 8·3; 8·(4 + 1 + 1)
    case(
        "C7-maxpool2d-indices",
        lambda: nn.MaxPool2d((2,), return_indices=True),
        (2, 4, 4),
        24,
        24,
        48,
        (2, 2, 0),
    ),
    # dilation 2, padding 1, stride 1: out length (6 + 2 − 4 − 1) + 1 = 4 windows starting at −1, 0,
    # 1, 2, taps at start + {0, 2, 4}: in-bound 2, 3, 3, 2 (−1 and 6 lie outside; truth.md §6), 10 taps:
    # comparisons 1 + 2 + 2 + 1 = 6; 6; 10 reads + 4 writes = 14; field 2·(3−1)+1 = 5
    case("maxpool1d-dilated", lambda: nn.MaxPool1d(3, 1, 1, dilation=2), (1, 1, 6), 6, 6, 14, (5, 1, 1)),
    # C8: axes 5+3−1 = 7 and 7+2−1 = 8, visits 2·56 = 112, Nout 12: MACs 112 + 12; DMAs 112 + 12;
    # last axis 7 → 2: field ceil(3.5) = 4, padding (7 − 16)/2
    case(
        "C8-adaptiveavg2d",
        lambda: nn.AdaptiveAvgPool2d((3, 2)),
        (1, 2, 5, 7),
        112,
        124,
        124,
        (4, 4, -4.5),
    ),
    # 112 − 12; 100; 112 + 12·1
    case("C8-adaptivemax2d", lambda: nn.AdaptiveMaxPool2d((3, 2)), (1, 2, 5, 7), 100, 100, 124, (4, 4, -4.5)),
    # visits 2·(5 + 3 − 1) = 14, Nout 6: 14; 14 + 0; 14 + 6; field ceil(5/3) = 2, padding (5 − 4)/2
    case("C8-adaptiveavg1d", lambda: nn.AdaptiveAvgPool1d(3), (1, 2, 5), 14, 14, 20, (2, 2, 0.5)),
    # unbatched (2,4,4): visits 2·4·4 = 32, Nout 8: 24; 24; 32 + 8·2
    case(
        "C8-adaptivemax2d-indices",
        lambda: nn.AdaptiveMaxPool2d((2, 2), return_indices=True),
        (2, 4, 4),
        24,
        24,
        48,
        (2, 2, 0),
    ),
    # visits 8·16 = 128, Nout 32: 96; 96; 128 + 32
    case("C8-adaptivemax2d-rf", lambda: nn.AdaptiveMaxPool2d((2, 2)), (1, 8, 4, 4), 96, 96, 160, (2, 2, 0)),
    case("C8-adaptiveavg2d-empty", lambda: nn.AdaptiveAvgPool2d((3, 2)), (0, 2, 5, 7), 0, 0, 0, (4, 4, -4.5)),
    case("maxpool2d-empty", lambda: nn.MaxPool2d(2), (0, 2, 8, 8), 0, 0, 0, (2, 2, 0)),
]


def act(case_id: str, make: Callable[[], nn.Module], flops: int, dmas: int, rf: Any = PW) -> Any:
    """C9: activations on (2, 4), N = Nout = 8, MACs 0."""
    return case(f"C9-{case_id}", make, (2, 4), flops, 0, dmas, rf)


ACTIVATIONS = [
    act("relu", nn.ReLU, 8, 16),  # 1·8; 8 + 8
    act("relu-inplace", lambda: nn.ReLU(inplace=True), 8, 8),  # in place: no separate write
    act("relu6", nn.ReLU6, 16, 16),  # 2·8
    act("relu6-inplace", lambda: nn.ReLU6(inplace=True), 16, 8),
    act("elu", nn.ELU, 48, 17),  # 6·8; 8 + 1 (alpha) + 8
    act("leakyrelu", nn.LeakyReLU, 32, 17),  # 4·8; 8 + 1 (slope) + 8
    act("sigmoid", nn.Sigmoid, 32, 16),  # 4·8
    act("tanh", nn.Tanh, 48, 24),  # 6·8; 2·8 + 8
    act("hardtanh", nn.Hardtanh, 16, 16),  # 2·8
    act("hardtanh-inplace", lambda: nn.Hardtanh(inplace=True), 16, 16),  # A.5.6: in place still writes
    act("threshold", lambda: nn.Threshold(0, 0), 16, 16),  # 2·8
    act("hardshrink", nn.Hardshrink, 24, 16),  # 3·8
    act("softsign", nn.Softsign, 24, 16),  # 3·8
    act("hardsigmoid", nn.Hardsigmoid, 32, 16),  # 4·8
    act("prelu", nn.PReLU, 32, 17),  # 4·8; 8 + 8 + 1 weight
    act("rrelu", lambda: nn.RReLU().eval(), 32, 16),  # 4·8 (evaluation)
    act("hardswish", nn.Hardswish, 40, 16),  # 5·8
    act("softshrink", nn.Softshrink, 40, 16),  # 5·8
    act("silu", nn.SiLU, 40, 16),  # 5·8
    act("gelu", nn.GELU, 40, 16),  # 5·8
    act("gelu-tanh", lambda: nn.GELU(approximate="tanh"), 112, 16),  # 14·8
    act("celu", nn.CELU, 56, 16),  # 7·8
    act("selu", nn.SELU, 56, 16),
    act("logsigmoid", nn.LogSigmoid, 56, 16),
    act("softplus", nn.Softplus, 56, 16),
    act("tanhshrink", nn.Tanhshrink, 56, 16),
    act("mish", nn.Mish, 80, 16),  # 10·8
    act("glu", lambda: nn.GLU(dim=-1), 20, 12, NA),  # Nout 4: 5·4; 8 + 4
    # C10 (R 2, S 4): softmax 5·8 − 2·2, DMAs 8·8 + 4·2; log-softmax 4·8 − 2, 64 + 12;
    # softmin 6·8 − 4, 80 + 8
    case("C10-softmax", lambda: nn.Softmax(dim=-1), (2, 4), 36, 0, 72, NA),
    case("C10-logsoftmax", lambda: nn.LogSoftmax(dim=1), (2, 4), 30, 0, 76, NA),
    case("C10-softmin", lambda: nn.Softmin(dim=-1), (2, 4), 44, 0, 88, NA),
    # N 32, S 4 (dim −3), R 8: 160 − 16; DMAs 256 + 32
    case("C10-softmax2d", nn.Softmax2d, (2, 4, 2, 2), 144, 0, 288, NA),
    # dim 0 over (2, 4): S 2, R 4: 40 − 8; 64 + 16
    case("softmax-dim0", lambda: nn.Softmax(dim=0), (2, 4), 32, 0, 80, NA),
]

EMPTY_ACTIVATIONS = [
    pytest.param(param.values[0].make, id=param.id.replace("C9-", "C9-empty-").replace("C10-", "C10-empty-"))
    for param in ACTIVATIONS
    if "softmax2d" not in param.id
]


def dropout(p: float, training: bool, inplace: bool = False) -> Callable[[], nn.Module]:
    return lambda: nn.Dropout(p, inplace=inplace).train(training)


DROPOUT = [
    # C11 on (2, 3): evaluation any p: FLOPs 0; DMAs 6 + 1 + 6
    case("C11-eval-0.5", dropout(0.5, False), (2, 3), 0, 0, 13, PW),
    case("C11-eval-1", dropout(1.0, False), (2, 3), 0, 0, 13, PW),
    case("C11-train-0.5", dropout(0.5, True), (2, 3), 12, 0, 13, PW),  # mask + rescale: 2·6
    case("C11-train-0", dropout(0.0, True), (2, 3), 0, 0, 13, PW),
    case("C11-train-1", dropout(1.0, True), (2, 3), 6, 0, 13, PW),  # zero mask only: 6
    case("C11-eval-inplace", dropout(0.5, False, inplace=True), (2, 3), 0, 0, 7, PW),  # 6 + 1
]

LAYOUT = [
    # A.5.1 on (2, 4): Identity reads N; Flatten copies 2N; Unflatten is a view
    case("identity", nn.Identity, (2, 4), 0, 0, 8, PW),
    case("flatten", nn.Flatten, (2, 2, 2), 0, 0, 16, PW),
    # C12
    case("C12-embedding", lambda: nn.Embedding(10, 4), indices, 0, 0, 36, NA),  # 4 + 2·16
    case("C12-unflatten", lambda: nn.Unflatten(1, (2, 2)), (2, 4), 0, 0, 0, NA),
    case("C12-pixelshuffle", lambda: nn.PixelShuffle(2), (1, 4, 2, 2), 0, 0, 32, NA),  # 2·16
    case("C12-pixelunshuffle", lambda: nn.PixelUnshuffle(2), (1, 1, 4, 4), 0, 0, 32, NA),
    case("C12-channelshuffle", lambda: nn.ChannelShuffle(2), (1, 4, 2, 2), 0, 0, 32, NA),
    case("C12-unfold", lambda: nn.Unfold(2), (1, 1, 3, 3), 0, 0, 32, NA),  # out (1,4,4): 2·16
    case("C12-constantpad1d", lambda: nn.ConstantPad1d(1, 0), (2, 4), 0, 0, 20, NA),  # 8 kept + 12
    case("C12-constantpad1d-crop", lambda: nn.ConstantPad1d((-1, 0), 0), (2, 4), 0, 0, 12, NA),  # 6 + 6
    case("C12-constantpad2d-pair", lambda: nn.ConstantPad2d((1, 1), 0), (3, 4), 0, 0, 30, NA),  # 12 + 18
    # width 3 + 1 − 1, height 3 − 1: out 2·3 = 6; kept (3 − 1)·(3 − 1) = 4
    case("zeropad2d-crop", lambda: nn.ZeroPad2d((1, -1, -1, 0)), (1, 3, 3), 0, 0, 10, NA),
    case("C12-reflectionpad1d", lambda: nn.ReflectionPad1d(1), (2, 4), 0, 0, 24, NA),  # 2·12
    case("C12-replicationpad2d", lambda: nn.ReplicationPad2d(1), (1, 1, 2, 2), 0, 0, 32, NA),  # 2·16
    case("C12-circularpad1d", lambda: nn.CircularPad1d(1), (2, 4), 0, 0, 24, NA),
    # Nout 6, n 2: 3·6; 2·6; 3·6
    case("C12-upsample-linear", lambda: nn.Upsample(size=6, mode="linear"), (1, 1, 3), 18, 12, 18, NA),
    # Nout 16, n 4: 7·16; 4·16; 5·16
    case("C12-bilinear", lambda: nn.UpsamplingBilinear2d(size=4), (1, 1, 2, 2), 112, 64, 80, NA),
    # Nout 64, n 8: 15·64; 8·64; 9·64
    case(
        "C12-trilinear",
        lambda: nn.Upsample(size=4, mode="trilinear"),
        (1, 1, 2, 2, 2),
        960,
        512,
        576,
        NA,
    ),
    # Nout 16, n 16: 31·16; 16·16; 17·16
    case("C12-bicubic", lambda: nn.Upsample(size=4, mode="bicubic"), (1, 1, 2, 2), 496, 256, 272, NA),
    case("C12-nearest", lambda: nn.UpsamplingNearest2d(scale_factor=2), (1, 1, 2, 2), 0, 0, 32, NA),
    case(
        "C12-nearest-uint8", lambda: nn.UpsamplingNearest2d(scale_factor=2), uint8(1, 1, 2, 2), 0, 0, 32, NA
    ),
    case("nearest-exact", lambda: nn.Upsample(scale_factor=2, mode="nearest-exact"), (1, 1, 3), 0, 0, 12, NA),
    # visits 1·(4 + 2 − 2)² = 16, Nout 4: 16; 16 + 4·1; 16 + 4
    case("C12-area", lambda: nn.Upsample(size=2, mode="area"), (1, 1, 4, 4), 16, 20, 20, NA),
]

ALL_CASES = CONVOLUTIONS + LINEAR + NORMALIZATION + POOLING + ACTIVATIONS + DROPOUT + LAYOUT


@pytest.mark.parametrize("spec", ALL_CASES)
def test_part_c_module_formulas(spec: Case) -> None:
    """FLOPs, MACs, DMAs and the local receptive triple of one real call."""
    assert evaluate(spec.make(), spec.inp("cpu")) == spec.expected


@pytest.mark.parametrize("spec", ALL_CASES)
def test_formulas_are_value_free(spec: Case) -> None:
    """The same numbers on the meta device: formulas read shapes, dtypes and configuration only."""
    module = spec.make()
    if isinstance(module, LazyModuleMixin):
        module(spec.inp("cpu"))  # materialise the parameters before moving them to the meta device
    result = evaluate(module.to("meta"), spec.inp("meta"))
    assert result == spec.expected
    assert all(type(value) is int for value in result[:3])


@pytest.mark.parametrize("make", EMPTY_ACTIVATIONS)
def test_c9_empty_activation_inputs_count_zero(make: Callable[[], nn.Module]) -> None:
    """C9/C10: an input of shape (0, 4) gives 0 for every count."""
    assert evaluate(make(), torch.ones(0, 4))[:3] == (0, 0, 0)
