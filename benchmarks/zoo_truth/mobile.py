"""Depthwise-heavy CNNs built from their papers' blocks (issue #32): ConvMixer, GhostNet, Xception,
ConvNeXt-V2 (GRN), MobileNet V1, MobileNeXt, MixNet.

Small widths, random weights, 2-image batches; every model ends in a 10-class classifier. The block
each paper defines is kept (its convolution groups, kernel sizes, branches and residuals); the
depth and width are not.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from zoo_truth.blocks import Built, Classifier, ConvNormAct, LayerNorm2d, SqueezeExcite, image

# --- ConvMixer (Trockman & Kolter, "Patches Are All You Need?") --------------------------------


class Residual(nn.Module):
    """``x + fn(x)``."""

    def __init__(self, fn: nn.Module) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x) + x


def convmixer() -> Built:
    """ConvMixer-64/4, kernel 9, patch 4: depthwise "same" convolutions mix space, 1×1 mix channels."""
    dim, kernel = 64, 9

    def mixer() -> nn.Module:
        spatial = nn.Sequential(
            nn.Conv2d(dim, dim, kernel, groups=dim, padding="same"), nn.GELU(), nn.BatchNorm2d(dim)
        )
        return nn.Sequential(Residual(spatial), nn.Conv2d(dim, dim, 1), nn.GELU(), nn.BatchNorm2d(dim))

    model = nn.Sequential(
        nn.Conv2d(3, dim, 4, stride=4),
        nn.GELU(),
        nn.BatchNorm2d(dim),
        *[mixer() for _ in range(4)],
        Classifier(dim),
    )
    return model, image(32), {}


# --- GhostNet (Han et al.) -------------------------------------------------------------------


class GhostModule(nn.Module):
    """Half the channels from a 1×1 convolution, the other half from a cheap depthwise 3×3 on them."""

    def __init__(self, cin: int, cout: int, relu: bool = True) -> None:
        super().__init__()
        self.cout = cout
        primary = math.ceil(cout / 2)
        act = nn.ReLU if relu else None
        self.primary = ConvNormAct(cin, primary, 1, act=act)
        self.cheap = ConvNormAct(primary, primary, 3, groups=primary, act=act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.primary(x)
        return torch.cat([y, self.cheap(y)], dim=1)[:, : self.cout]


class GhostBottleneck(nn.Module):
    """Ghost module, depthwise stride, optional SE, ghost module; depthwise + 1×1 shortcut when reshaped."""

    def __init__(self, cin: int, mid: int, cout: int, kernel: int, stride: int, se: bool) -> None:
        super().__init__()
        layers: list[nn.Module] = [GhostModule(cin, mid)]
        if stride > 1:
            layers.append(ConvNormAct(mid, mid, kernel, stride, groups=mid, act=None))
        if se:
            layers.append(SqueezeExcite(mid, max(4, mid // 4), gate=nn.Hardsigmoid))
        layers.append(GhostModule(mid, cout, relu=False))
        self.body = nn.Sequential(*layers)
        self.shortcut: nn.Module = nn.Identity()
        if stride > 1 or cin != cout:
            self.shortcut = nn.Sequential(
                ConvNormAct(cin, cin, kernel, stride, groups=cin, act=None),
                ConvNormAct(cin, cout, 1, act=None),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x) + self.shortcut(x)


def ghostnet() -> Built:
    """A GhostNet with the paper's first six bottlenecks (kernel, expansion, out, SE, stride)."""
    config = [(3, 16, 16, False, 1), (3, 48, 24, False, 2), (3, 72, 24, False, 1), (5, 72, 40, True, 2)]
    config += [(5, 120, 40, True, 1), (3, 240, 80, False, 2)]
    layers: list[nn.Module] = [ConvNormAct(3, 16, 3, 2)]
    cin = 16
    for kernel, mid, cout, se, stride in config:
        layers.append(GhostBottleneck(cin, mid, cout, kernel, stride, se))
        cin = cout
    layers += [ConvNormAct(cin, 160, 1), Classifier(160)]
    return nn.Sequential(*layers), image(32), {}


# --- Xception (Chollet) ------------------------------------------------------------------------


class SeparableConv(nn.Sequential):
    """Depthwise 3×3 then pointwise 1×1 (no bias), then BatchNorm."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__(
            nn.Conv2d(cin, cin, 3, padding=1, groups=cin, bias=False),
            nn.Conv2d(cin, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )


class XceptionBlock(nn.Module):
    """ReLU-separable-conv units, a strided max pool, and a strided 1×1 residual projection."""

    def __init__(self, cin: int, cout: int, reps: int, stride: int, first_relu: bool = True) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for index in range(reps):
            if index or first_relu:
                layers.append(nn.ReLU())
            layers.append(SeparableConv(cin if index == 0 else cout, cout))
        if stride > 1:
            layers.append(nn.MaxPool2d(3, stride, 1))
        self.body = nn.Sequential(*layers)
        self.skip: nn.Module = nn.Identity()
        if stride > 1 or cin != cout:
            self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x) + self.skip(x)


def xception() -> Built:
    """Entry flow (two stems, three strided blocks), two middle-flow blocks, the exit flow."""
    model = nn.Sequential(
        ConvNormAct(3, 16, 3, 2),
        ConvNormAct(16, 32, 3),
        XceptionBlock(32, 48, 2, 2, first_relu=False),
        XceptionBlock(48, 64, 2, 2),
        XceptionBlock(64, 96, 2, 2),
        XceptionBlock(96, 96, 3, 1),
        XceptionBlock(96, 96, 3, 1),
        XceptionBlock(96, 128, 2, 2),
        SeparableConv(128, 192),
        nn.ReLU(),
        SeparableConv(192, 256),
        nn.ReLU(),
        Classifier(256),
    )
    return model, image(64), {}


# --- ConvNeXt V2 (Woo et al.) ------------------------------------------------------------------


class GRN(nn.Module):
    """Global response normalisation: ``γ·(x·N(x)) + β + x``, ``N = ‖x‖₂ over space ÷ its channel mean``."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.zeros(1, 1, 1, dim))
        self.beta = nn.Parameter(torch.zeros(1, 1, 1, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
        nx = gx / (gx.mean(dim=-1, keepdim=True) + 1e-6)
        return self.gamma * (x * nx) + self.beta + x


class ConvNeXtV2Block(nn.Module):
    """Depthwise 7×7, channels-last LayerNorm, Linear 4×, GELU, GRN, Linear back, residual."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.grn = GRN(4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(self.grn(self.act(self.pwconv1(self.norm(y)))))
        return x + y.permute(0, 3, 1, 2)


def convnext_v2() -> Built:
    """ConvNeXt-V2 at dims 24/48/96/192, depths 1/1/2/1 (the atto layout, narrower)."""
    dims, depths = (24, 48, 96, 192), (1, 1, 2, 1)
    layers: list[nn.Module] = [nn.Conv2d(3, dims[0], 4, stride=4), LayerNorm2d(dims[0], eps=1e-6)]
    for stage, (dim, depth) in enumerate(zip(dims, depths, strict=True)):
        if stage:
            layers += [LayerNorm2d(dims[stage - 1], eps=1e-6), nn.Conv2d(dims[stage - 1], dim, 2, stride=2)]
        layers += [ConvNeXtV2Block(dim) for _ in range(depth)]
    head = nn.Sequential(
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(dims[-1]), nn.Linear(dims[-1], 10)
    )
    return nn.Sequential(*layers, head), image(32), {}


# --- MobileNet V1, MobileNeXt, MixNet -----------------------------------------------------------


def mobilenet_v1() -> Built:
    """MobileNetV1 at width 0.25: depthwise-separable units (dw 3×3 BN ReLU, pw 1×1 BN ReLU)."""
    layers: list[nn.Module] = [ConvNormAct(3, 8, 3, 2)]
    cin = 8
    for cout, stride in ((16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2), (128, 1), (256, 2)):
        layers += [ConvNormAct(cin, cin, 3, stride, groups=cin), ConvNormAct(cin, cout, 1)]
        cin = cout
    return nn.Sequential(*layers, Classifier(cin)), image(32), {}


class SandGlass(nn.Module):
    """MobileNeXt's block: depthwise 3×3, 1×1 reduce, 1×1 expand, depthwise 3×3 (stride), residual."""

    def __init__(self, cin: int, cout: int, stride: int, reduction: int = 4) -> None:
        super().__init__()
        mid = cin // reduction
        self.body = nn.Sequential(
            ConvNormAct(cin, cin, 3, groups=cin, act=nn.ReLU6),
            ConvNormAct(cin, mid, 1, act=None),
            ConvNormAct(mid, cout, 1, act=nn.ReLU6),
            ConvNormAct(cout, cout, 3, stride, groups=cout, act=None),
        )
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.body(x)
        return x + out if self.residual else out


def mobilenext() -> Built:
    """MobileNeXt: a stem and five sandglass blocks."""
    config = [(32, 64, 2), (64, 64, 1), (64, 96, 2), (96, 96, 1), (96, 128, 2)]
    blocks = [SandGlass(cin, cout, stride) for cin, cout, stride in config]
    return nn.Sequential(ConvNormAct(3, 32, 3, 2, act=nn.ReLU6), *blocks, Classifier(128)), image(32), {}


class MixConv(nn.Module):
    """MixNet's depthwise convolution: channel groups with kernels 3, 5, 7, 9, concatenated."""

    def __init__(self, channels: int, kernels: tuple[int, ...], stride: int) -> None:
        super().__init__()
        splits = [channels // len(kernels)] * len(kernels)
        splits[0] += channels - sum(splits)
        self.splits = splits
        self.convs = nn.ModuleList(
            nn.Conv2d(c, c, k, stride, k // 2, groups=c, bias=False)
            for c, k in zip(splits, kernels, strict=True)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = torch.split(x, self.splits, dim=1)
        return torch.cat([conv(part) for conv, part in zip(self.convs, parts, strict=True)], dim=1)


class MixBlock(nn.Module):
    """Grouped 1×1 expansion, MixConv, SE, grouped 1×1 projection (MixNet-S units), residual."""

    def __init__(
        self, cin: int, cout: int, expand: int, kernels: tuple[int, ...], stride: int, groups: int
    ) -> None:
        super().__init__()
        hidden = cin * expand
        self.body = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, groups=groups, bias=False),
            nn.BatchNorm2d(hidden),
            nn.SiLU(),
            MixConv(hidden, kernels, stride),
            nn.BatchNorm2d(hidden),
            nn.SiLU(),
            SqueezeExcite(hidden, max(4, cin // 2)),
            nn.Conv2d(hidden, cout, 1, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.body(x)
        return x + out if self.residual else out


def mixnet() -> Built:
    """MixNet-S-like: five mixed-kernel blocks, two with grouped pointwise convolutions."""
    blocks = [
        MixBlock(16, 24, 3, (3,), 2, 2),
        MixBlock(24, 24, 3, (3,), 1, 2),
        MixBlock(24, 40, 6, (3, 5, 7), 2, 1),
        MixBlock(40, 40, 6, (3, 5), 1, 2),
        MixBlock(40, 80, 6, (3, 5, 7, 9), 2, 1),
    ]
    return nn.Sequential(ConvNormAct(3, 16, 3, 2), *blocks, Classifier(80)), image(32), {}


MODELS: dict[str, Callable[[], Built]] = {
    "convmixer": convmixer,
    "ghostnet": ghostnet,
    "xception": xception,
    "convnext-v2": convnext_v2,
    "mobilenet-v1": mobilenet_v1,
    "mobilenext": mobilenext,
    "mixnet": mixnet,
}
"""Builders by zoo name (``zoo_truth.catalogue`` adds issue, group and loss)."""
