"""The built-in demo models behind ``torchscan demo`` and the ``demo:<name>`` targets.

Each demo is small enough to analyse in well under a second on a laptop CPU, needs no download, and
gets the same random weights on every build. Weights come from a private ``torch.Generator``: the
modules are constructed on the ``meta`` device (which draws no random numbers) and then filled, so
building a demo never consumes or reseeds the caller's global RNG state.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

DEMO_SEED = 0


class ResidualBlock(nn.Module):
    """Two 3x3 convolutions with batch norm and an identity shortcut.

    The shortcut addition happens in this module's own ``forward``: no module formula covers it, so
    a functional formula estimates it from the ``aten.add`` it dispatches (real-models.md 1).
    """

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + x)


class DemoCNN(nn.Module):
    """A small image classifier: conv stem, one residual block, global pooling, linear head."""

    def __init__(self, channels: int = 16, num_classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
        )
        self.block = ResidualBlock(channels)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.head = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.flatten(self.pool(self.block(self.stem(x)))))


def _fill_parameters(module: nn.Module, generator: torch.Generator) -> None:
    """Give every parameter and buffer of a freshly materialised module deterministic values.

    Normalisation layers get their documented defaults (weight 1, bias 0, fresh running
    statistics); every other tensor is drawn uniformly from ``±1/sqrt(fan_in)`` of its module's
    weight, which is PyTorch's default bound for linear and convolution layers.
    """
    norms = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.LayerNorm, nn.GroupNorm)
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, norms):
                sub.reset_parameters()  # ones/zeros and reset statistics: no random draw
                continue
            own = dict(sub.named_parameters(recurse=False))
            matrices = [p for p in own.values() if p.dim() >= 2]
            fallback_fan_in = matrices[0][0].numel() if matrices else 1
            for param in own.values():
                fan_in = param[0].numel() if param.dim() >= 2 else fallback_fan_in
                bound = 1.0 / math.sqrt(max(fan_in, 1))
                values = torch.rand(param.shape, generator=generator, dtype=torch.float32)
                param.copy_(values.mul_(2 * bound).sub_(bound))


def _materialise(factory: Callable[[], nn.Module], seed: int) -> nn.Module:
    """Build ``factory()`` on the meta device, move it to CPU storage and fill it deterministically."""
    with torch.device("meta"):
        module = factory()
    module = module.to_empty(device="cpu")
    generator = torch.Generator(device="cpu")
    generator.manual_seed(seed)
    _fill_parameters(module, generator)
    return module.eval()


def build_cnn() -> tuple[nn.Module, tuple[int, ...]]:
    """The ``cnn`` demo and its default input shape (one 3x32x32 image; the batch is prepended)."""
    return _materialise(DemoCNN, DEMO_SEED), (3, 32, 32)


def build_transformer() -> tuple[nn.Module, tuple[int, ...]]:
    """The ``transformer`` demo: a 2-layer native ``nn.TransformerEncoder`` and its input shape.

    Width 32, 4 heads, feed-forward width 64, batch-first, no nested-tensor packing; the default
    input is 16 tokens of width 32 (the batch dimension of 1 is prepended by the analysis).
    """

    def factory() -> nn.Module:
        layer = nn.TransformerEncoderLayer(
            d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True
        )
        return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

    return _materialise(factory, DEMO_SEED), (16, 32)


DEMO_MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[int, ...]]]] = {
    "cnn": build_cnn,
    "transformer": build_transformer,
}
"""Demo name -> builder returning ``(model in eval mode, default input shape without batch)``."""


def build_demo(name: str) -> tuple[nn.Module, tuple[int, ...]]:
    """Build the demo called ``name``; raise ``KeyError`` naming the known demos otherwise."""
    try:
        builder = DEMO_MODELS[name]
    except KeyError:
        known = ", ".join(sorted(DEMO_MODELS))
        raise KeyError(f"unknown demo model {name!r}; known: {known}") from None
    return builder()
