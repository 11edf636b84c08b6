"""Benchmark models built from configs with random weights (no downloads)."""

from __future__ import annotations

import torch
from torch import nn


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
    """A ResNet-50-shaped network; torchvision's own when installed."""
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


def bert(hidden: int = 768, layers: int = 12, heads: int = 12, tokens: int = 128) -> tuple[nn.Module, tuple]:
    """A BERT-base-shaped transformers model with random weights, or None without transformers."""
    from transformers import BertConfig, BertModel

    config = BertConfig(
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
    )
    model = BertModel(config)
    return model, (torch.zeros(1, tokens, dtype=torch.long),)


def linear_stack(pairs: int, width: int = 64) -> nn.Module:
    """``pairs`` × (Linear(width, width) + ReLU)."""
    layers: list[nn.Module] = []
    for _ in range(pairs):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers)


def build_models(smoke: bool) -> dict[str, tuple[nn.Module, tuple[torch.Tensor, ...]]]:
    """The benchmark set; ``smoke`` keeps every model tiny so the run takes seconds."""
    if smoke:
        models = {
            "resnet-shaped (tiny)": (resnet50_shaped(8, (1, 1)), (torch.rand(1, 3, 32, 32),)),
            "linear stack 100": (linear_stack(100), (torch.rand(1, 64),)),
        }
        try:
            models["bert (tiny)"] = bert(hidden=32, layers=2, heads=2, tokens=8)
        except ImportError:
            pass
        return models
    models = {"ResNet-50": (resnet50_shaped(), (torch.rand(1, 3, 224, 224),))}
    try:
        models["BERT-base"] = bert()
    except ImportError:
        pass
    models["5000 x (Linear+ReLU)"] = (linear_stack(5000), (torch.rand(1, 64),))
    return models
