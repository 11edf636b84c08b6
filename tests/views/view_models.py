"""A ResNet-50-shaped torch model (torchvision's layout, written out) analysed by ``crawl_module``.

Only the documentation screenshot and the real-report tests import this; views never import torch.
"""

from __future__ import annotations

from typing import Any


def resnet50() -> Any:
    """torchvision-style ResNet-50 (Bottleneck blocks [3, 4, 6, 3]) with random weights."""
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, width * 4, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(width * 4)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or cin != width * 4:
                self.downsample = nn.Sequential(
                    nn.Conv2d(cin, width * 4, 1, stride, bias=False), nn.BatchNorm2d(width * 4)
                )

        def forward(self, x: Any) -> Any:
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return self.relu(out + identity)

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            cin = 64
            for index, (blocks, width, stride) in enumerate(
                ((3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2))
            ):
                layers = []
                for b in range(blocks):
                    layers.append(Bottleneck(cin, width, stride if b == 0 else 1))
                    cin = width * 4
                setattr(self, f"layer{index + 1}", nn.Sequential(*layers))
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(2048, 1000)

        def forward(self, x: Any) -> Any:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            for name in ("layer1", "layer2", "layer3", "layer4"):
                x = getattr(self, name)(x)
            return self.fc(self.avgpool(x).flatten(1))

    return ResNet()


def resnet50_crawl() -> dict[str, Any]:
    """``crawl_module`` on the ResNet-50-shaped model at 3×224×224, as saved JSON would hold it."""
    import json

    import torchscan

    report = torchscan.crawl_module(resnet50(), (3, 224, 224))
    return json.loads(json.dumps(report))
