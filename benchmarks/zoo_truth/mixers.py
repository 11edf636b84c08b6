"""Token mixers beside depthwise convolutions, from their papers' blocks (issue #39): EdgeNeXt and
XCiT (cross-covariance attention, Fourier positions with a float ``floor`` division), CoAtNet
(relative bias gathered per offset), PoolFormer (pooling mixer) and a Conformer (depthwise 1-D
convolution module beside self-attention).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

from zoo_truth.blocks import Built, Classifier, ConvNormAct, InvertedResidual, LayerNorm2d, Mlp, image, randn

# --- EdgeNeXt and XCiT: cross-covariance attention, Fourier positions ------------------------------


class FourierPositions(nn.Module):
    """XCiT's positional encoding: sine/cosine of normalised grid coordinates, with
    ``temperature^(2·floor(i/2)/d)`` exponents (a ``floor`` division on a float tensor), then 1×1."""

    def __init__(self, dim: int, hidden: int = 16) -> None:
        super().__init__()
        self.hidden = hidden
        self.project = nn.Conv2d(2 * hidden, dim, 1)

    def forward(self, batch: int, height: int, width: int) -> torch.Tensor:
        rows = torch.arange(1, height + 1, dtype=torch.float32).view(1, -1, 1).expand(batch, height, width)
        cols = torch.arange(1, width + 1, dtype=torch.float32).view(1, 1, -1).expand(batch, height, width)
        rows, cols = rows / height * 6.2832, cols / width * 6.2832
        steps = torch.arange(self.hidden, dtype=torch.float32)
        steps = 10000.0 ** (2 * torch.div(steps, 2, rounding_mode="floor") / self.hidden)
        pos_x, pos_y = cols[..., None] / steps, rows[..., None] / steps
        pos_x = torch.stack([pos_x[..., 0::2].sin(), pos_x[..., 1::2].cos()], dim=4).flatten(3)
        pos_y = torch.stack([pos_y[..., 0::2].sin(), pos_y[..., 1::2].cos()], dim=4).flatten(3)
        return self.project(torch.cat([pos_y, pos_x], dim=3).permute(0, 3, 1, 2))


class XCA(nn.Module):
    """Cross-covariance attention: ``softmax(τ·q̂ᵀk̂)`` over channels (L2-normalised tokens), × v."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.temperature = nn.Parameter(torch.ones(heads, 1, 1))
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, dim = x.shape
        q, k, v = self.qkv(x).view(batch, tokens, 3, self.heads, dim // self.heads).permute(2, 0, 3, 4, 1)
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        attention = (q @ k.transpose(-2, -1) * self.temperature).softmax(-1)
        return self.proj((attention @ v).permute(0, 3, 1, 2).reshape(batch, tokens, dim))


class SDTA(nn.Module):
    """EdgeNeXt's split depth-wise transposed attention: hierarchical depthwise 3×3 over channel
    splits, Fourier positions, XCA, then an inverted MLP (all residual)."""

    def __init__(self, dim: int, scales: int = 2) -> None:
        super().__init__()
        self.width = dim // scales
        self.convs = nn.ModuleList(
            nn.Conv2d(self.width, self.width, 3, padding=1, groups=self.width) for _ in range(scales - 1)
        )
        self.positions = FourierPositions(dim)
        self.norm_xca, self.norm = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.xca = XCA(dim, 2)
        self.mlp = Mlp(dim, 4 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        splits = torch.split(x, self.width, dim=1)
        out, previous = [], splits[0]
        for index, conv in enumerate(self.convs):
            previous = conv(previous if index == 0 else previous + splits[index])
            out.append(previous)
        y = torch.cat([*out, splits[-1]], dim=1)
        batch, channels, height, width = y.shape
        y = y + self.positions(batch, height, width)
        tokens = y.flatten(2).transpose(1, 2)
        tokens = tokens + self.xca(self.norm_xca(tokens))
        tokens = tokens + self.mlp(self.norm(tokens))
        return x + tokens.transpose(1, 2).reshape(batch, channels, height, width)


class ConvEncoder(nn.Module):
    """EdgeNeXt's convolution encoder: depthwise k×k, channels-last LayerNorm, MLP, residual."""

    def __init__(self, dim: int, kernel: int) -> None:
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, kernel, padding=kernel // 2, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, 4 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.mlp(self.norm(self.dw(x).permute(0, 2, 3, 1)))
        return x + y.permute(0, 3, 1, 2)


def edgenext() -> Built:
    """EdgeNeXt-XXS-like on 64² images: patchify ×4, conv encoders with growing kernels, SDTA."""
    model = nn.Sequential(
        nn.Conv2d(3, 24, 4, 4),
        LayerNorm2d(24),
        ConvEncoder(24, 3),
        LayerNorm2d(24),
        nn.Conv2d(24, 48, 2, 2),
        ConvEncoder(48, 5),
        SDTA(48),
        LayerNorm2d(48),
        nn.Conv2d(48, 88, 2, 2),
        ConvEncoder(88, 7),
        SDTA(88),
        Classifier(88),
    )
    return model, image(64), {}


class XCiT(nn.Module):
    """Convolutional patch embedding ×8, Fourier positions, XCA blocks with local patch interaction
    (depthwise 3×3 → GELU → BN → depthwise 3×3), then one class-attention block."""

    def __init__(self, dim: int = 48, depth: int = 2) -> None:
        super().__init__()
        self.embed = nn.Sequential(
            ConvNormAct(3, dim // 4, 3, 2, act=nn.GELU),
            ConvNormAct(dim // 4, dim // 2, 3, 2, act=nn.GELU),
            ConvNormAct(dim // 2, dim, 3, 2, act=None),
        )
        self.positions = FourierPositions(dim)
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(3 * depth))
        self.xcas = nn.ModuleList(XCA(dim, 4) for _ in range(depth))
        self.lpis = nn.ModuleList(
            nn.Sequential(
                nn.Conv2d(dim, dim, 3, padding=1, groups=dim),
                nn.GELU(),
                nn.BatchNorm2d(dim),
                nn.Conv2d(dim, dim, 3, padding=1, groups=dim),
            )
            for _ in range(depth)
        )
        self.mlps = nn.ModuleList(Mlp(dim, 4 * dim) for _ in range(depth))
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.class_attention = nn.MultiheadAttention(dim, 4, batch_first=True)
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        batch, dim, height, width = x.shape
        tokens = (x + self.positions(batch, height, width)).flatten(2).transpose(1, 2)
        for index, (xca, lpi, mlp) in enumerate(zip(self.xcas, self.lpis, self.mlps, strict=True)):
            n1, n2, n3 = self.norms[3 * index : 3 * index + 3]
            tokens = tokens + xca(n1(tokens))
            grid = n3(tokens).transpose(1, 2).reshape(batch, dim, height, width)
            tokens = tokens + lpi(grid).flatten(2).transpose(1, 2)
            tokens = tokens + mlp(n2(tokens))
        cls = self.cls_token.expand(batch, -1, -1)
        everything = torch.cat([cls, tokens], dim=1)
        cls = cls + self.class_attention(cls, everything, everything, need_weights=False)[0]
        return self.head(self.norm(cls[:, 0]))


def xcit() -> Built:
    """XCiT-nano-like on 32² images (4×4 tokens)."""
    return XCiT(), image(32), {}


# --- CoAtNet, PoolFormer, Conformer ------------------------------------------------------------


class RelativeAttention(nn.Module):
    """CoAtNet's attention: a ``((2H−1)(2W−1), heads)`` relative bias table gathered per (query, key)
    pair (Swin-style ``table[index]``, no ``None`` index)."""

    def __init__(self, dim: int, heads: int, size: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.table = nn.Parameter(torch.zeros((2 * size - 1) ** 2, heads))
        coords = torch.stack(torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")).flatten(1)
        relative = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + size - 1
        self.register_buffer("index", relative[..., 0] * (2 * size - 1) + relative[..., 1], persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, dim = x.shape
        q, k, v = self.qkv(x).view(batch, tokens, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        bias = self.table[self.index.view(-1)].view(tokens, tokens, -1).permute(2, 0, 1)
        attention = (q @ k.transpose(-2, -1)) * (dim // self.heads) ** -0.5 + bias
        return self.proj((attention.softmax(-1) @ v).transpose(1, 2).reshape(batch, tokens, dim))


class CoAtNetTransformer(nn.Module):
    """A downsampling transformer block: pooled shortcut with a 1×1 projection, pre-norm relative
    attention on the pooled grid, pre-norm MLP."""

    def __init__(self, cin: int, dim: int, size: int) -> None:
        super().__init__()
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.project = nn.Conv2d(cin, dim, 1)
        self.norm1, self.norm2 = nn.LayerNorm(cin), nn.LayerNorm(dim)
        self.reduce = nn.Linear(cin, dim)
        self.attention = RelativeAttention(dim, 2, size)
        self.mlp = Mlp(dim, 4 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = self.pool(x)
        batch, _, height, width = pooled.shape
        shortcut = self.project(pooled).flatten(2).transpose(1, 2)
        tokens = shortcut + self.attention(self.reduce(self.norm1(pooled.flatten(2).transpose(1, 2))))
        tokens = tokens + self.mlp(self.norm2(tokens))
        return tokens.transpose(1, 2).reshape(batch, -1, height, width)


def coatnet() -> Built:
    """CoAtNet-0-like on 32² images: convolution stem, MBConv stages with SE, two transformer stages."""
    model = nn.Sequential(
        ConvNormAct(3, 16, 3, 2, act=nn.GELU),
        InvertedResidual(16, 24, 1, 4, se=True, act=nn.GELU),
        InvertedResidual(24, 32, 2, 4, se=True, act=nn.GELU),
        CoAtNetTransformer(32, 48, 4),
        CoAtNetTransformer(48, 64, 2),
        Classifier(64),
    )
    return model, image(32), {}


class PoolFormerBlock(nn.Module):
    """MetaFormer with a pooling mixer: ``x + γ₁·(pool(GN(x)) − GN(x))``, ``x + γ₂·MLP(GN(x))``."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.GroupNorm(1, dim), nn.GroupNorm(1, dim)
        self.pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
        self.mlp = nn.Sequential(nn.Conv2d(dim, 4 * dim, 1), nn.GELU(), nn.Conv2d(4 * dim, dim, 1))
        self.scale1 = nn.Parameter(torch.full((dim, 1, 1), 1e-5))
        self.scale2 = nn.Parameter(torch.full((dim, 1, 1), 1e-5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm1(x)
        x = x + self.scale1 * (self.pool(y) - y)
        return x + self.scale2 * self.mlp(self.norm2(x))


def poolformer() -> Built:
    """PoolFormer-S12-like on 32² images: a 7×7/4 patch embedding and three stages."""
    model = nn.Sequential(
        nn.Conv2d(3, 32, 7, 4, 2),
        PoolFormerBlock(32),
        nn.Conv2d(32, 64, 3, 2, 1),
        PoolFormerBlock(64),
        nn.Conv2d(64, 96, 3, 2, 1),
        PoolFormerBlock(96),
        nn.GroupNorm(1, 96),
        Classifier(96),
    )
    return model, image(32), {}


class ConformerBlock(nn.Module):
    """Half-step FFN, self-attention, convolution module (pointwise, GLU, depthwise conv1d, BN, SiLU,
    pointwise), half-step FFN, LayerNorm."""

    def __init__(self, dim: int, kernel: int = 15) -> None:
        super().__init__()
        self.ffn1 = nn.Sequential(nn.LayerNorm(dim), Mlp(dim, 4 * dim, nn.SiLU))
        self.ffn2 = nn.Sequential(nn.LayerNorm(dim), Mlp(dim, 4 * dim, nn.SiLU))
        self.norm_attention = nn.LayerNorm(dim)
        self.attention = nn.MultiheadAttention(dim, 4, batch_first=True)
        self.norm_conv = nn.LayerNorm(dim)
        self.pointwise1 = nn.Conv1d(dim, 2 * dim, 1)
        self.depthwise = nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=dim)
        self.bn = nn.BatchNorm1d(dim)
        self.pointwise2 = nn.Conv1d(dim, dim, 1)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 0.5 * self.ffn1(x)
        y = self.norm_attention(x)
        x = x + self.attention(y, y, y, need_weights=False)[0]
        y = F.glu(self.pointwise1(self.norm_conv(x).transpose(1, 2)), dim=1)
        x = x + self.pointwise2(F.silu(self.bn(self.depthwise(y)))).transpose(1, 2)
        return self.norm(x + 0.5 * self.ffn2(x))


class Conformer(nn.Module):
    """Mel features (B, T, 40): 2-D convolutional subsampling ×4, a Linear, two Conformer blocks,
    per-frame logits over 32 symbols."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__()
        self.subsample = nn.Sequential(nn.Conv2d(1, 16, 3, 2), nn.ReLU(), nn.Conv2d(16, 16, 3, 2), nn.ReLU())
        self.input = nn.Linear(16 * 9, dim)
        self.blocks = nn.Sequential(ConformerBlock(dim), ConformerBlock(dim))
        self.output = nn.Linear(dim, 32)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        y = self.subsample(features.unsqueeze(1))
        batch, channels, frames, bins = y.shape
        y = self.input(y.permute(0, 2, 1, 3).reshape(batch, frames, channels * bins))
        return self.output(self.blocks(y)).flatten(0, 1)


def conformer() -> Built:
    """A Conformer on 2 utterances × 64 frames × 40 mel bins."""
    return Conformer(), (randn(2, 64, 40),), {}


MODELS: dict[str, Callable[[], Built]] = {
    "edgenext": edgenext,
    "xcit": xcit,
    "coatnet": coatnet,
    "poolformer": poolformer,
    "conformer": conformer,
}
"""Builders by zoo name (``zoo_truth.catalogue`` adds issue, group and loss)."""
