"""Benchmark models built from configs with random weights (no downloads).

Every model is described by a :class:`ModelSpec` whose ``build`` is lazy, so a fresh process measuring
peak RSS builds only the one model it needs. torchvision's own ResNet-50 and MobileNetV3-Large are used
when torchvision is importable; otherwise the equivalent definitions below (same layers, same shapes,
same parameter counts) stand in, and ``source`` says which one ran.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

Built = tuple[nn.Module, tuple[Any, ...], dict[str, Any]]


@dataclass(frozen=True)
class ModelSpec:
    """One benchmark model: a stable key (command-line safe), a display name and a lazy builder."""

    key: str
    name: str
    build: Callable[[], Built]
    pairs: int | None = None  # layer pairs of a Linear+ReLU stack, for the µs/pair column


# --- ResNet-50 ------------------------------------------------------------------------------------


class Bottleneck(nn.Module):
    """A ResNet-50 bottleneck block (1x1, 3x3, 1x1 convolutions and a residual addition)."""

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        width, out = planes, planes * 4
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = (
            nn.Sequential(nn.Conv2d(inplanes, out, 1, stride=stride, bias=False), nn.BatchNorm2d(out))
            if stride != 1 or inplanes != out
            else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        return self.relu(self.bn3(self.conv3(y)) + identity)


def resnet50_shaped(width: int = 64, blocks: tuple[int, ...] = (3, 4, 6, 3)) -> nn.Module:
    """A ResNet-50-shaped network (25,557,032 parameters at full size); torchvision's own when installed."""
    if width == 64 and blocks == (3, 4, 6, 3):
        try:
            from torchvision.models import resnet50

            return resnet50()
        except ImportError:
            pass
    layers: list[nn.Module] = [
        nn.Conv2d(3, width, 7, stride=2, padding=3, bias=False),
        nn.BatchNorm2d(width),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, stride=2, padding=1),
    ]
    inplanes = width
    for stage, count in enumerate(blocks):
        planes = width * 2**stage
        for index in range(count):
            layers.append(Bottleneck(inplanes, planes, stride=2 if stage and index == 0 else 1))
            inplanes = planes * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inplanes, 1000)]
    return nn.Sequential(*layers)


# --- MobileNetV3-Large ----------------------------------------------------------------------------


def _divisible(value: float, divisor: int = 8) -> int:
    """Round channels to a multiple of ``divisor`` without losing more than 10 % (MobileNet rule)."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def _conv_bn_act(cin: int, cout: int, kernel: int, stride: int, groups: int, act: type[nn.Module] | None):
    layers: list[nn.Module] = [
        nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout, eps=0.001, momentum=0.01),
    ]
    if act is not None:
        layers.append(act(inplace=True))
    return nn.Sequential(*layers)


class SqueezeExcitation(nn.Module):
    """Global average pool, 1x1 squeeze + ReLU, 1x1 excite + hardsigmoid, channel-wise scale."""

    def __init__(self, channels: int, squeeze: int) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.relu = nn.ReLU(inplace=True)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.scale = nn.Hardsigmoid(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale(self.fc2(self.relu(self.fc1(self.avgpool(x)))))


class InvertedResidual(nn.Module):
    """MobileNetV3 block: optional 1x1 expansion, depthwise conv, optional SE, 1x1 projection, residual."""

    def __init__(self, cin: int, kernel: int, expanded: int, cout: int, se: bool, hs: bool, stride: int):
        super().__init__()
        act = nn.Hardswish if hs else nn.ReLU
        layers: list[nn.Module] = []
        if expanded != cin:
            layers.append(_conv_bn_act(cin, expanded, 1, 1, 1, act))
        layers.append(_conv_bn_act(expanded, expanded, kernel, stride, expanded, act))
        if se:
            layers.append(SqueezeExcitation(expanded, _divisible(expanded // 4)))
        layers.append(_conv_bn_act(expanded, cout, 1, 1, 1, None))
        self.block = nn.Sequential(*layers)
        self.use_residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return y + x if self.use_residual else y


# (kernel, expanded channels, output channels, squeeze-excitation, hardswish, stride): the paper's table 1
_MOBILENET_V3_LARGE = (
    (3, 16, 16, False, False, 1),
    (3, 64, 24, False, False, 2),
    (3, 72, 24, False, False, 1),
    (5, 72, 40, True, False, 2),
    (5, 120, 40, True, False, 1),
    (5, 120, 40, True, False, 1),
    (3, 240, 80, False, True, 2),
    (3, 200, 80, False, True, 1),
    (3, 184, 80, False, True, 1),
    (3, 184, 80, False, True, 1),
    (3, 480, 112, True, True, 1),
    (3, 672, 112, True, True, 1),
    (5, 672, 160, True, True, 2),
    (5, 960, 160, True, True, 1),
    (5, 960, 160, True, True, 1),
)


class MobileNetV3(nn.Module):
    """A MobileNetV3-Large-shaped network (5,483,032 parameters at full size, as torchvision's)."""

    def __init__(self, blocks=_MOBILENET_V3_LARGE, last: int = 1280, classes: int = 1000) -> None:
        super().__init__()
        cin = blocks[0][1]
        layers: list[nn.Module] = [_conv_bn_act(3, cin, 3, 2, 1, nn.Hardswish)]
        for kernel, expanded, cout, se, hs, stride in blocks:
            layers.append(InvertedResidual(cin, kernel, expanded, cout, se, hs, stride))
            cin = cout
        layers.append(_conv_bn_act(cin, 6 * cin, 1, 1, 1, nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(6 * cin, last),
            nn.Hardswish(inplace=True),
            nn.Dropout(0.2, inplace=True),
            nn.Linear(last, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


def mobilenet_v3_large_shaped(tiny: bool = False) -> nn.Module:
    """MobileNetV3-Large; torchvision's own when installed, this file's equivalent otherwise."""
    if tiny:
        return MobileNetV3(_MOBILENET_V3_LARGE[:4], last=64, classes=10)
    try:
        from torchvision.models import mobilenet_v3_large

        return mobilenet_v3_large()
    except ImportError:
        return MobileNetV3()


# --- transformers ---------------------------------------------------------------------------------


def bert(hidden: int = 768, layers: int = 12, heads: int = 12, tokens: int = 128) -> Built:
    """A BERT-base-shaped ``BertModel`` (no task head), random weights; ImportError without transformers."""
    from transformers import BertConfig, BertModel

    config = BertConfig(
        hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=4 * hidden
    )
    return BertModel(config), (), {"input_ids": torch.zeros(1, tokens, dtype=torch.long)}


def gpt2(hidden: int = 768, layers: int = 12, heads: int = 12, tokens: int = 128) -> Built:
    """A GPT-2-shaped ``GPT2Model`` (no LM head) with random weights; ImportError without transformers.

    ``use_cache=False``: one analysis forward has no use for a key/value cache, and a cache object in
    the output is not a tensor, which tracing-based peers cannot return.
    """
    from transformers import GPT2Config, GPT2Model

    config = GPT2Config(n_embd=hidden, n_layer=layers, n_head=heads, use_cache=False)
    return GPT2Model(config), (), {"input_ids": torch.zeros(1, tokens, dtype=torch.long)}


# --- depth scaling --------------------------------------------------------------------------------


def linear_stack(pairs: int, width: int = 64) -> nn.Module:
    """``pairs`` × (Linear(width, width) + ReLU)."""
    layers: list[nn.Module] = []
    for _ in range(pairs):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers)


def _stack(pairs: int) -> ModelSpec:
    return ModelSpec(
        f"stack{pairs}",
        f"{pairs:,} × (Linear+ReLU)",
        lambda: (linear_stack(pairs), (torch.rand(1, 64),), {}),
        pairs=pairs,
    )


def _image(build: Callable[[], nn.Module], size: int) -> Callable[[], Built]:
    return lambda: (build(), (torch.rand(1, 3, size, size),), {})


FULL = (
    ModelSpec("resnet50", "ResNet-50", _image(resnet50_shaped, 224)),
    ModelSpec("mobilenetv3", "MobileNetV3-Large", _image(mobilenet_v3_large_shaped, 224)),
    ModelSpec("bert", "BERT-base", bert),
    ModelSpec("gpt2", "GPT-2", gpt2),
    *(_stack(pairs) for pairs in (100, 1_000, 5_000, 10_000)),
)

SMOKE = (
    ModelSpec("resnet-tiny", "ResNet-shaped (tiny)", _image(lambda: resnet50_shaped(8, (1, 1)), 32)),
    ModelSpec(
        "mobilenet-tiny", "MobileNetV3-shaped (tiny)", _image(lambda: mobilenet_v3_large_shaped(True), 32)
    ),
    ModelSpec("bert-tiny", "BERT (tiny)", lambda: bert(hidden=32, layers=2, heads=2, tokens=8)),
    ModelSpec("gpt2-tiny", "GPT-2 (tiny)", lambda: gpt2(hidden=32, layers=2, heads=2, tokens=8)),
    ModelSpec("stack-tiny", "20 × (Linear+ReLU)", lambda: (linear_stack(20), (torch.rand(1, 64),), {}), 20),
)

BY_KEY = {spec.key: spec for spec in (*FULL, *SMOKE)}


def source(key: str) -> str:
    """Where a model's definition comes from, for the report header."""
    if key in ("resnet50", "mobilenetv3"):
        try:
            import torchvision  # noqa: F401
        except ImportError:
            return "benchmarks/models.py (torchvision not installed)"
        return "torchvision.models"
    if key in ("bert", "gpt2", "bert-tiny", "gpt2-tiny"):
        return "transformers, random weights"
    return "benchmarks/models.py"
