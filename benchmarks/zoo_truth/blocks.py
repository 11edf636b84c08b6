"""Building blocks shared by the zoo's paper-built architectures (``zoo_truth``), their inputs and losses.

Plain PyTorch only (no timm, diffusers or PyG): each block is the one its paper defines, at small
widths, with PyTorch's default random initialisation. Inputs come from fixed generators so every
run sees the same tensors and the caller's RNG is untouched.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

Built = tuple[nn.Module, tuple[Any, ...], dict[str, Any]]


def generator(seed: int = 0) -> torch.Generator:
    """A fixed CPU generator."""
    return torch.Generator().manual_seed(seed)


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    """Standard-normal values of ``shape`` from a fixed generator."""
    return torch.randn(*shape, generator=generator(seed))


def image(size: int = 32, batch: int = 2, channels: int = 3) -> tuple[torch.Tensor, ...]:
    """The positional arguments of an image model: one ``batch×channels×size×size`` image tensor."""
    return (randn(batch, channels, size, size),)


def divisible(value: float, divisor: int = 8) -> int:
    """``value`` rounded to a multiple of ``divisor`` (MobileNet's channel rule), never below it."""
    return max(divisor, int(value + divisor / 2) // divisor * divisor)


class ConvNormAct(nn.Sequential):
    """Convolution (no bias), BatchNorm, activation: the stem and body unit of mobile CNNs."""

    def __init__(
        self,
        cin: int,
        cout: int,
        kernel: int = 3,
        stride: int = 1,
        groups: int = 1,
        act: type[nn.Module] | None = nn.ReLU,
        dim: int = 2,
    ) -> None:
        conv = (nn.Conv1d, nn.Conv2d, nn.Conv3d)[dim - 1]
        norm = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)[dim - 1]
        layers: list[nn.Module] = [
            conv(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
            norm(cout),
        ]
        if act is not None:
            layers.append(act())
        super().__init__(*layers)


class SqueezeExcite(nn.Module):
    """Squeeze-and-excitation (Hu et al.): global pool, two 1×1 convolutions, a sigmoid gate."""

    def __init__(self, channels: int, reduced: int, gate: type[nn.Module] = nn.Sigmoid) -> None:
        super().__init__()
        self.reduce = nn.Conv2d(channels, reduced, 1)
        self.expand = nn.Conv2d(reduced, channels, 1)
        self.gate = gate()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = x.mean((2, 3), keepdim=True)
        return x * self.gate(self.expand(F.relu(self.reduce(scale))))


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an ``N×C×H×W`` tensor (ConvNeXt's channels-first norm)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class Classifier(nn.Sequential):
    """Global average pooling, flatten and a linear head."""

    def __init__(self, channels: int, classes: int = 10) -> None:
        super().__init__(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, classes))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1×1 expansion, depthwise k×k, optional SE, 1×1 projection, residual."""

    def __init__(
        self,
        cin: int,
        cout: int,
        stride: int = 1,
        expand: int = 4,
        kernel: int = 3,
        se: bool = False,
        act: type[nn.Module] = nn.ReLU6,
    ) -> None:
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = [] if expand == 1 else [ConvNormAct(cin, hidden, 1, act=act)]
        layers.append(ConvNormAct(hidden, hidden, kernel, stride, groups=hidden, act=act))
        if se:
            layers.append(SqueezeExcite(hidden, max(8, cin // 4)))
        layers.append(ConvNormAct(hidden, cout, 1, act=None))
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.block(x)
        return x + out if self.residual else out


class Mlp(nn.Sequential):
    """Transformer feed-forward: Linear, activation, Linear."""

    def __init__(self, dim: int, hidden: int, act: type[nn.Module] = nn.GELU) -> None:
        super().__init__(nn.Linear(dim, hidden), act(), nn.Linear(hidden, dim))


def relative_index(height: int, width: int) -> torch.Tensor:
    """Index of the offset table for every (query, key) pair of an ``height×width`` grid.

    The absolute offsets ``(|dy|, |dx|)`` of EfficientFormer, EfficientViT and LeViT: pairs at the same
    offset share one learned bias per head.
    """
    points = [(y, x) for y in range(height) for x in range(width)]
    offsets: dict[tuple[int, int], int] = {}
    index = []
    for p in points:
        for q in points:
            offset = (abs(p[0] - q[0]), abs(p[1] - q[1]))
            index.append(offsets.setdefault(offset, len(offsets)))
    return torch.tensor(index).view(len(points), len(points))


class BiasedAttention(nn.Module):
    """Multi-head attention over an ``H×W`` grid with a learned offset bias read as ``bias[:, idx]``.

    The attention-bias table of EfficientFormer / EfficientViT / LeViT: ``attention_biases`` holds
    one value per head and distinct offset; ``bias[:, idx]`` spreads it over every (query, key) pair.
    Its backward is an accumulating ``index_put`` whose first index is ``None`` (the head axis).
    """

    def __init__(self, dim: int, heads: int, key_dim: int, resolution: tuple[int, int]) -> None:
        super().__init__()
        self.heads, self.key_dim = heads, key_dim
        self.scale = key_dim**-0.5
        self.qkv = nn.Linear(dim, heads * key_dim * 3)
        self.proj = nn.Linear(heads * key_dim, dim)
        index = relative_index(*resolution)
        self.attention_biases = nn.Parameter(torch.zeros(heads, int(index.max()) + 1))
        self.register_buffer("attention_bias_idxs", index, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, _ = x.shape
        qkv = self.qkv(x).view(batch, tokens, 3, self.heads, self.key_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        bias = self.attention_biases[:, self.attention_bias_idxs]
        attn = (q @ k.transpose(-2, -1)) * self.scale + bias
        out = attn.softmax(-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, tokens, -1))


def sinusoidal(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Transformer/diffusion sinusoidal embedding of ``positions`` (any float tensor) into ``dim``."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    angles = positions.float()[:, None] * freqs[None]
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


# --- losses of the training steps ---------------------------------------------------------------


def classification_loss(output: Any) -> torch.Tensor:
    """Cross-entropy of ``(N, classes)`` logits against fixed labels ``0, 1, …`` modulo classes."""
    logits = output.logits if hasattr(output, "logits") else output
    labels = torch.arange(logits.shape[0]) % logits.shape[-1]
    return F.cross_entropy(logits, labels)


def mean_square_loss(output: Any) -> torch.Tensor:
    """The mean square of every floating tensor of the output, summed (a regression-style loss)."""
    leaves = [t for t in torch.utils._pytree.tree_leaves(output) if isinstance(t, torch.Tensor)]
    floating = [t for t in leaves if t.is_floating_point() and t.requires_grad]
    if not floating:
        raise ValueError("the model's output holds no floating tensor that needs a gradient")
    total = floating[0].square().mean()
    for tensor in floating[1:]:
        total = total + tensor.square().mean()
    return total
