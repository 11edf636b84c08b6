"""Grouped, re-parameterisable, 3-D and 1-D convolution models from their papers' blocks (issues #32,
#39): ShuffleNet V1, ResNeSt, MobileOne, RepVGG, X3D, QuartzNet, TCN (weight-normalised).

Small widths, random weights; QuartzNet trains with CTC (``ctc_loss``), the others classify.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils import parametrizations

from zoo_truth.blocks import Built, Classifier, ConvNormAct, image, randn

# --- ShuffleNet V1, ResNeSt --------------------------------------------------------------------


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    """ShuffleNet's channel shuffle: reshape to (groups, channels/groups), transpose, flatten."""
    batch, channels, height, width = x.shape
    x = x.view(batch, groups, channels // groups, height, width).transpose(1, 2)
    return x.reshape(batch, channels, height, width)


class ShuffleUnit(nn.Module):
    """Grouped 1×1, shuffle, depthwise 3×3 (stride), grouped 1×1; add, or concat a 3×3 average pool."""

    def __init__(self, cin: int, cout: int, stride: int, groups: int = 3) -> None:
        super().__init__()
        self.stride, self.groups = stride, groups
        branch = cout - cin if stride > 1 else cout
        mid = cout // 4
        self.reduce = ConvNormAct(cin, mid, 1, groups=groups)
        self.depthwise = ConvNormAct(mid, mid, 3, stride, groups=mid, act=None)
        self.expand = ConvNormAct(mid, branch, 1, groups=groups, act=None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.expand(self.depthwise(channel_shuffle(self.reduce(x), self.groups)))
        if self.stride > 1:
            return F.relu(torch.cat([F.avg_pool2d(x, 3, 2, 1), out], dim=1))
        return F.relu(x + out)


def shufflenet_v1() -> Built:
    """ShuffleNet V1 with 3 groups, two stages of two units, narrow."""
    units = [ShuffleUnit(24, 48, 2), ShuffleUnit(48, 48, 1), ShuffleUnit(48, 96, 2), ShuffleUnit(96, 96, 1)]
    model = nn.Sequential(ConvNormAct(3, 24, 3, 2), nn.MaxPool2d(3, 2, 1), *units, Classifier(96))
    return model, image(64), {}


class SplitAttention(nn.Module):
    """ResNeSt's split attention: a grouped 3×3 producing ``radix`` splits, attention over them."""

    def __init__(self, channels: int, radix: int = 2, cardinality: int = 2) -> None:
        super().__init__()
        self.radix, self.channels = radix, channels
        groups = radix * cardinality
        inter = max(channels // 2, 16)
        self.conv = ConvNormAct(channels, channels * radix, 3, groups=groups)
        self.fc1 = nn.Conv2d(channels, inter, 1, groups=cardinality)
        self.bn = nn.BatchNorm2d(inter)
        self.fc2 = nn.Conv2d(inter, channels * radix, 1, groups=cardinality)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch = x.shape[0]
        splits = self.conv(x).view(batch, self.radix, self.channels, *x.shape[2:])
        gap = splits.sum(1).mean((2, 3), keepdim=True)
        attention = self.fc2(F.relu(self.bn(self.fc1(gap)))).view(batch, self.radix, self.channels, 1, 1)
        return (splits * attention.softmax(dim=1)).sum(1)


class ResNeStBlock(nn.Module):
    """Bottleneck: 1×1, split attention, (average-pool downsampling), 1×1; projected residual."""

    def __init__(self, cin: int, mid: int, cout: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            ConvNormAct(cin, mid, 1),
            SplitAttention(mid),
            nn.AvgPool2d(stride) if stride > 1 else nn.Identity(),
            ConvNormAct(mid, cout, 1, act=None),
        )
        self.skip = nn.Sequential(
            nn.AvgPool2d(stride) if stride > 1 else nn.Identity(), ConvNormAct(cin, cout, 1, act=None)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.body(x) + self.skip(x))


def resnest() -> Built:
    """ResNeSt with radix 2, cardinality 2: a deep stem and three split-attention bottlenecks."""
    model = nn.Sequential(
        ConvNormAct(3, 16, 3, 2),
        ConvNormAct(16, 32, 3),
        ResNeStBlock(32, 16, 64, 1),
        ResNeStBlock(64, 32, 128, 2),
        ResNeStBlock(128, 32, 128, 1),
        Classifier(128),
    )
    return model, image(32), {}


# --- MobileOne, RepVGG (train-time multi-branch blocks) ----------------------------------------


class Branches(nn.Module):
    """The sum of parallel conv+BN branches and an identity BN, then ReLU (re-parameterised at
    inference; trained as branches)."""

    def __init__(self, cin: int, cout: int, kernels: tuple[int, ...], stride: int, groups: int) -> None:
        super().__init__()
        self.branches = nn.ModuleList(
            ConvNormAct(cin, cout, k, stride, groups=groups, act=None) for k in kernels
        )
        self.identity = nn.BatchNorm2d(cin) if cin == cout and stride == 1 else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.branches[0](x)
        for branch in self.branches[1:]:
            out = out + branch(x)
        return F.relu(out + self.identity(x) if self.identity is not None else out)


def mobileone() -> Built:
    """MobileOne-S0-like: depthwise blocks with two 3×3 branches and a 1×1 branch, then pointwise
    blocks with two 1×1 branches (k = 2 over-parameterisation)."""
    layers: list[nn.Module] = [Branches(3, 16, (3, 1), 2, 1)]
    cin = 16
    for cout, stride in ((32, 2), (32, 1), (64, 2), (64, 1)):
        layers.append(Branches(cin, cin, (3, 3, 1), stride, cin))  # depthwise
        layers.append(Branches(cin, cout, (1, 1), 1, 1))  # pointwise
        cin = cout
    return nn.Sequential(*layers, Classifier(cin)), image(32), {}


def repvgg() -> Built:
    """RepVGG-A-like: 3×3 + 1×1 + identity branches; every other layer grouped by 2 (RepVGG-g2)."""
    layers: list[nn.Module] = [Branches(3, 16, (3, 1), 2, 1)]
    cin = 16
    for index, (cout, stride) in enumerate(((32, 2), (32, 1), (64, 2), (64, 1), (64, 1))):
        layers.append(Branches(cin, cout, (3, 1), stride, 2 if index % 2 else 1))
        cin = cout
    return nn.Sequential(*layers, Classifier(cin)), image(32), {}


# --- X3D (3-D depthwise), QuartzNet and TCN (1-D) ----------------------------------------------


class X3DBlock(nn.Module):
    """1×1×1, depthwise 3×3×3 (stride in space), SE, Swish, 1×1×1; residual."""

    def __init__(self, cin: int, mid: int, cout: int, stride: int) -> None:
        super().__init__()
        self.a = ConvNormAct(cin, mid, 1, dim=3)
        self.b = nn.Sequential(
            nn.Conv3d(mid, mid, 3, (1, stride, stride), 1, groups=mid, bias=False), nn.BatchNorm3d(mid)
        )
        self.se = nn.Sequential(
            nn.AdaptiveAvgPool3d(1),
            nn.Conv3d(mid, mid // 4, 1),
            nn.ReLU(),
            nn.Conv3d(mid // 4, mid, 1),
            nn.Sigmoid(),
        )
        self.c = nn.Sequential(nn.SiLU(), ConvNormAct(mid, cout, 1, act=None, dim=3))
        self.skip: nn.Module = nn.Identity()
        if stride > 1 or cin != cout:
            self.skip = nn.Sequential(
                nn.Conv3d(cin, cout, 1, (1, stride, stride), bias=False), nn.BatchNorm3d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.b(self.a(x))
        return F.relu(self.c(y * self.se(y)) + self.skip(x))


def x3d() -> Built:
    """X3D-XS-like video model on 2×3×4×32×32 clips: a (1×3×3) stem and a depthwise (5×1×1) temporal
    convolution, three X3D blocks, a classifier."""
    model = nn.Sequential(
        nn.Conv3d(3, 12, (1, 3, 3), (1, 2, 2), (0, 1, 1), bias=False),
        nn.Conv3d(12, 12, (5, 1, 1), 1, (2, 0, 0), groups=12, bias=False),
        nn.BatchNorm3d(12),
        nn.ReLU(),
        X3DBlock(12, 27, 24, 2),
        X3DBlock(24, 54, 24, 1),
        X3DBlock(24, 108, 48, 2),
        nn.AdaptiveAvgPool3d(1),
        nn.Flatten(),
        nn.Linear(48, 10),
    )
    return model, (randn(2, 3, 4, 32, 32),), {}


class SeparableBlock1d(nn.Module):
    """QuartzNet's block: R × (depthwise conv1d k, pointwise conv1d, BN, ReLU), 1×1 + BN residual."""

    def __init__(self, cin: int, cout: int, kernel: int, repeats: int = 2) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for index in range(repeats):
            channels = cin if index == 0 else cout
            layers += [
                nn.Conv1d(channels, channels, kernel, padding=kernel // 2, groups=channels, bias=False),
                nn.Conv1d(channels, cout, 1, bias=False),
                nn.BatchNorm1d(cout),
            ]
            if index < repeats - 1:
                layers.append(nn.ReLU())
        self.body = nn.Sequential(*layers)
        self.skip = nn.Sequential(nn.Conv1d(cin, cout, 1, bias=False), nn.BatchNorm1d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.body(x) + self.skip(x))


class QuartzNet(nn.Module):
    """Mel features (B, 40, T) → CTC log-probabilities over 29 symbols (T/2 frames, time-major)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(40, 40, 33, 2, 16, groups=40, bias=False),
            nn.Conv1d(40, 64, 1, bias=False),
            nn.BatchNorm1d(64),
            nn.ReLU(),
            SeparableBlock1d(64, 64, 33),
            SeparableBlock1d(64, 96, 39),
            nn.Conv1d(96, 96, 87, padding=86, dilation=2, groups=96, bias=False),
            nn.Conv1d(96, 128, 1, bias=False),
            nn.BatchNorm1d(128),
            nn.ReLU(),
            nn.Conv1d(128, 29, 1),
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features).permute(2, 0, 1).log_softmax(-1)


def quartznet() -> Built:
    """QuartzNet on 2 × 40 mel bins × 64 frames."""
    return QuartzNet(), (randn(2, 40, 64),), {}


def ctc_loss(output: torch.Tensor) -> torch.Tensor:
    """CTC against fixed 6-symbol targets (labels 1..28, 0 is the blank)."""
    targets = torch.arange(12).view(2, 6) % 28 + 1
    frames = torch.full((2,), output.shape[0], dtype=torch.long)
    return F.ctc_loss(output, targets, frames, torch.full((2,), 6, dtype=torch.long))


class TemporalBlock(nn.Module):
    """TCN's block (Bai et al.): two weight-normalised dilated causal conv1d + ReLU, 1×1 residual."""

    def __init__(self, cin: int, cout: int, kernel: int, dilation: int) -> None:
        super().__init__()
        self.trim = (kernel - 1) * dilation
        self.conv1 = parametrizations.weight_norm(
            nn.Conv1d(cin, cout, kernel, padding=self.trim, dilation=dilation)
        )
        self.conv2 = parametrizations.weight_norm(
            nn.Conv1d(cout, cout, kernel, padding=self.trim, dilation=dilation)
        )
        self.skip = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.conv1(x)[..., : -self.trim])
        y = F.relu(self.conv2(y)[..., : -self.trim])
        return F.relu(y + self.skip(x))


def tcn() -> Built:
    """A temporal convolutional network on 2 sequences × 8 channels × 64 steps, dilations 1, 2, 4."""
    blocks = [TemporalBlock(8, 32, 3, 1), TemporalBlock(32, 32, 3, 2), TemporalBlock(32, 32, 3, 4)]
    model = nn.Sequential(*blocks, nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 10))
    return model, (randn(2, 8, 64),), {}


MODELS: dict[str, Callable[[], Built]] = {
    "shufflenet-v1": shufflenet_v1,
    "resnest": resnest,
    "mobileone": mobileone,
    "repvgg": repvgg,
    "x3d": x3d,
    "quartznet": quartznet,
    "tcn": tcn,
}
"""Builders by zoo name (``zoo_truth.catalogue`` adds issue, group and loss)."""
