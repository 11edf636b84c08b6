"""Mobile convolution-attention hybrids from their papers' blocks (issues #32, #39): FastViT
(RepMixer), EfficientFormer (pooling mixer, attention-bias table), EfficientViT (cascaded group
attention), LeViT, MobileViT and MobileViT-v2.

The attention-bias tables are read as ``bias[:, idx]``: their backward is an accumulating
``index_put`` with a ``None`` index. Small widths, random weights, 10-class heads.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

from zoo_truth.blocks import (
    BiasedAttention,
    Built,
    Classifier,
    ConvNormAct,
    InvertedResidual,
    Mlp,
    image,
    relative_index,
)

# --- FastViT (Vasu et al.) ---------------------------------------------------------------------


class RepMixer(nn.Module):
    """``x + γ·(BN(dwconv(x)) − BN(x))``: a depthwise 3×3 token mixer, trained with its BN branch."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.mixer = ConvNormAct(dim, dim, 3, groups=dim, act=None)
        self.norm = nn.BatchNorm2d(dim)
        self.scale = nn.Parameter(torch.full((dim, 1, 1), 1e-5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.scale * (self.mixer(x) - self.norm(x))


class ConvFFN(nn.Module):
    """Depthwise 7×7 + BN, then 1×1 expansion, GELU, 1×1 projection."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.conv = ConvNormAct(dim, dim, 7, groups=dim, act=None)
        self.fc1, self.fc2 = nn.Conv2d(dim, hidden, 1), nn.Conv2d(hidden, dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(self.conv(x))))


class FastViTAttention(nn.Module):
    """The last stage's block: depthwise 7×7 conditional positional encoding, BN, multi-head
    self-attention over the flattened grid, ConvFFN."""

    def __init__(self, dim: int, heads: int = 2) -> None:
        super().__init__()
        self.cpe = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.BatchNorm2d(dim)
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim)
        self.ffn = ConvFFN(dim, 3 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.cpe(x)
        batch, channels, height, width = x.shape
        tokens = self.norm(x).flatten(2).transpose(1, 2)
        q, k, v = (
            self.qkv(tokens).view(batch, -1, 3, self.heads, channels // self.heads).permute(2, 0, 3, 1, 4)
        )
        attended = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(batch, -1, channels)
        x = x + self.proj(attended).transpose(1, 2).reshape(batch, channels, height, width)
        return x + self.ffn(x)


class RepMixerBlock(nn.Module):
    """RepMixer then a ConvFFN, each residual with its layer scale."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.mixer = RepMixer(dim)
        self.ffn = ConvFFN(dim, 3 * dim)
        self.scale = nn.Parameter(torch.full((dim, 1, 1), 1e-5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.mixer(x)
        return x + self.scale * self.ffn(x)


def _large_kernel_embed(cin: int, cout: int) -> nn.Module:
    """FastViT's patch embedding: a depthwise 7×7 stride-2 convolution with its 3×3 branch, then 1×1."""

    class Embed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.large = ConvNormAct(cin, cin, 7, 2, groups=cin, act=None)
            self.small = ConvNormAct(cin, cin, 3, 2, groups=cin, act=None)
            self.project = ConvNormAct(cin, cout, 1, act=nn.GELU)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.project(F.gelu(self.large(x) + self.small(x)))

    return Embed()


def fastvit() -> Built:
    """FastViT-T-like on 64² images: MobileOne-style stem, two RepMixer stages, an attention stage."""
    model = nn.Sequential(
        ConvNormAct(3, 16, 3, 2, act=nn.GELU),
        ConvNormAct(16, 16, 3, 2, groups=16, act=nn.GELU),
        ConvNormAct(16, 16, 1, act=nn.GELU),
        RepMixerBlock(16),
        _large_kernel_embed(16, 32),
        RepMixerBlock(32),
        _large_kernel_embed(32, 64),
        FastViTAttention(64),
        Classifier(64),
    )
    return model, image(64), {}


# --- EfficientFormer (Li et al.) ---------------------------------------------------------------


class Meta4D(nn.Module):
    """``x + γ₁·(pool(x) − x)`` with a 3×3 average pool (padding excluded from the divisor), then
    ``x + γ₂·MLP(x)`` with 1×1 convolutions and BatchNorm."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
        self.mlp = nn.Sequential(
            ConvNormAct(dim, 4 * dim, 1, act=nn.GELU), ConvNormAct(4 * dim, dim, 1, act=None)
        )
        self.scale1 = nn.Parameter(torch.full((dim, 1, 1), 1e-5))
        self.scale2 = nn.Parameter(torch.full((dim, 1, 1), 1e-5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.scale1 * (self.pool(x) - x)
        return x + self.scale2 * self.mlp(x)


class Meta3D(nn.Module):
    """Pre-norm attention with the offset-bias table, then a pre-norm MLP, both layer-scaled."""

    def __init__(self, dim: int, resolution: tuple[int, int]) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attention = BiasedAttention(dim, heads=4, key_dim=16, resolution=resolution)
        self.mlp = Mlp(dim, 4 * dim)
        self.scale1 = nn.Parameter(torch.full((dim,), 1e-5))
        self.scale2 = nn.Parameter(torch.full((dim,), 1e-5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.scale1 * self.attention(self.norm1(x))
        return x + self.scale2 * self.mlp(self.norm2(x))


class EfficientFormer(nn.Module):
    """Stem ×4, Meta4D stages with strided-conv downsampling, a Meta3D stage on the 4×4 grid."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            ConvNormAct(3, 8, 3, 2),
            ConvNormAct(8, 16, 3, 2),
            Meta4D(16),
            ConvNormAct(16, 32, 3, 2, act=None),
            Meta4D(32),
            ConvNormAct(32, 64, 3, 2, act=None),
            Meta4D(64),
        )
        self.tokens = Meta3D(64, (4, 4))
        self.norm = nn.LayerNorm(64)
        self.head = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.tokens(self.features(x).flatten(2).transpose(1, 2))
        return self.head(self.norm(tokens).mean(1))


def efficientformer() -> Built:
    """EfficientFormer-L1-like on 64² images."""
    return EfficientFormer(), image(64), {}


# --- EfficientViT (Liu et al., cascaded group attention) ---------------------------------------


class CascadedGroupAttention(nn.Module):
    """Each head attends over its own channel split, fed the previous head's output; queries get a
    depthwise convolution; every head adds its slice of the offset-bias table ``bias[:, idx]``."""

    def __init__(self, dim: int, heads: int, key_dim: int, resolution: int) -> None:
        super().__init__()
        self.heads, self.key_dim = heads, key_dim
        self.split = dim // heads
        self.qkvs = nn.ModuleList(
            ConvNormAct(self.split, 2 * key_dim + self.split, 1, act=None) for _ in range(heads)
        )
        self.dws = nn.ModuleList(
            ConvNormAct(key_dim, key_dim, 5, groups=key_dim, act=None) for _ in range(heads)
        )
        self.proj = nn.Sequential(nn.ReLU(), ConvNormAct(self.split * heads, dim, 1, act=None))
        index = relative_index(resolution, resolution)
        self.attention_biases = nn.Parameter(torch.zeros(heads, int(index.max()) + 1))
        self.register_buffer("attention_bias_idxs", index, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, _, height, width = x.shape
        bias = self.attention_biases[:, self.attention_bias_idxs]
        chunks = x.chunk(self.heads, dim=1)
        outputs = []
        feature = chunks[0]
        for head, (qkv, dw) in enumerate(zip(self.qkvs, self.dws, strict=True)):
            if head:
                feature = feature + chunks[head]
            q, k, v = qkv(feature).split([self.key_dim, self.key_dim, self.split], dim=1)
            q = dw(q)
            q, k, v = q.flatten(2), k.flatten(2), v.flatten(2)
            attention = (q.transpose(-2, -1) @ k) * self.key_dim**-0.5 + bias[head]
            feature = (v @ attention.softmax(-1).transpose(-2, -1)).view(batch, self.split, height, width)
            outputs.append(feature)
        return self.proj(torch.cat(outputs, 1))


class EfficientViTBlock(nn.Module):
    """The sandwich: depthwise conv + FFN, cascaded group attention, depthwise conv + FFN (residuals)."""

    def __init__(self, dim: int, resolution: int) -> None:
        super().__init__()

        def dw() -> nn.Module:
            return ConvNormAct(dim, dim, 3, groups=dim, act=None)

        def ffn() -> nn.Module:
            return nn.Sequential(ConvNormAct(dim, 2 * dim, 1), ConvNormAct(2 * dim, dim, 1, act=None))

        self.parts = nn.ModuleList([dw(), ffn(), CascadedGroupAttention(dim, 2, 8, resolution), dw(), ffn()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for part in self.parts:
            x = x + part(x)
        return x


def efficientvit() -> Built:
    """EfficientViT-M0-like on 64² images: a ×16 convolutional stem and two stages (8² and 4²)."""
    model = nn.Sequential(
        ConvNormAct(3, 8, 3, 2),
        ConvNormAct(8, 16, 3, 2),
        ConvNormAct(16, 32, 3, 2),
        EfficientViTBlock(32, 8),
        InvertedResidual(32, 48, 2, expand=2, act=nn.ReLU),
        EfficientViTBlock(48, 4),
        Classifier(48),
    )
    return model, image(64), {}


# --- LeViT (Graham et al.) ---------------------------------------------------------------------


class LeViT(nn.Module):
    """A ×8 Hardswish convolutional stem, attention stages with the offset-bias table, Hardswish MLPs."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            ConvNormAct(3, 16, 3, 2, act=nn.Hardswish),
            ConvNormAct(16, 32, 3, 2, act=nn.Hardswish),
            ConvNormAct(32, 64, 3, 2, act=None),
        )
        self.attention = nn.ModuleList(BiasedAttention(64, 4, 16, (4, 4)) for _ in range(2))
        self.mlps = nn.ModuleList(Mlp(64, 128, nn.Hardswish) for _ in range(2))
        self.norm = nn.BatchNorm1d(64)
        self.head = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.stem(x).flatten(2).transpose(1, 2)
        for attention, mlp in zip(self.attention, self.mlps, strict=True):
            tokens = tokens + attention(tokens)
            tokens = tokens + mlp(tokens)
        return self.head(self.norm(tokens.mean(1)))


def levit() -> Built:
    """LeViT-128S-like on 32² images (4×4 tokens)."""
    return LeViT(), image(32), {}


# --- MobileViT (Mehta & Rastegari), v1 and v2 ---------------------------------------------------


class TransformerLayer(nn.Module):
    """Pre-norm multi-head attention (SDPA) and MLP over ``(batch, tokens, dim)``."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = Mlp(dim, 2 * dim, nn.SiLU)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, dim = x.shape
        qkv = self.qkv(self.norm1(x)).view(batch, tokens, 3, self.heads, dim // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(batch, tokens, dim)
        x = x + self.proj(attended)
        return x + self.mlp(self.norm2(x))


class MobileViTBlock(nn.Module):
    """Local 3×3 + 1×1, unfold into 2×2 patches, transformer across patches, fold, 1×1, fuse with the
    input through a 3×3 convolution."""

    def __init__(self, channels: int, dim: int, patch: int = 2) -> None:
        super().__init__()
        self.patch = patch
        self.local = nn.Sequential(
            ConvNormAct(channels, channels, 3, act=nn.SiLU), nn.Conv2d(channels, dim, 1, bias=False)
        )
        self.transformer = TransformerLayer(dim, 2)
        self.project = ConvNormAct(dim, channels, 1, act=nn.SiLU)
        self.fuse = ConvNormAct(2 * channels, channels, 3, act=nn.SiLU)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.local(x)
        batch, dim, height, width = y.shape
        p = self.patch
        patches = y.reshape(batch, dim, height // p, p, width // p, p).permute(0, 3, 5, 2, 4, 1)
        patches = patches.reshape(batch * p * p, (height // p) * (width // p), dim)
        patches = self.transformer(patches)
        y = patches.reshape(batch, p, p, height // p, width // p, dim).permute(0, 5, 3, 1, 4, 2)
        y = self.project(y.reshape(batch, dim, height, width))
        return self.fuse(torch.cat([x, y], dim=1))


class SeparableAttention(nn.Module):
    """MobileViT-v2's linear-complexity attention over unfolded patches ``(B, d, P, N)``: context
    scores ``softmax_N(I(x))``, context vector ``Σ_N scores·K(x)``, output ``O(ReLU(V(x))·context)``."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.qkv = nn.Conv2d(dim, 1 + 2 * dim, 1)
        self.out = nn.Conv2d(dim, dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        query, key, value = self.qkv(x).split([1, self.dim, self.dim], dim=1)
        context = (key * query.softmax(dim=-1)).sum(dim=-1, keepdim=True)
        return self.out(F.relu(value) * context)


class MobileViTv2Block(nn.Module):
    """Depthwise 3×3 + 1×1 local representation, unfolded patches, GroupNorm(1) pre-norm separable
    attention and 1×1 FFN, folded back and projected."""

    def __init__(self, channels: int, dim: int) -> None:
        super().__init__()
        self.local = nn.Sequential(
            ConvNormAct(channels, channels, 3, groups=channels, act=nn.SiLU),
            nn.Conv2d(channels, dim, 1, bias=False),
        )
        self.norm1, self.norm2 = nn.GroupNorm(1, dim), nn.GroupNorm(1, dim)
        self.attention = SeparableAttention(dim)
        self.ffn = nn.Sequential(nn.Conv2d(dim, 2 * dim, 1), nn.SiLU(), nn.Conv2d(2 * dim, dim, 1))
        self.project = ConvNormAct(dim, channels, 1, act=None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.local(x)
        batch, dim, height, width = y.shape
        patches = F.unfold(y, 2, stride=2).view(batch, dim, 4, -1)
        patches = patches + self.attention(self.norm1(patches))
        patches = patches + self.ffn(self.norm2(patches))
        y = F.fold(patches.view(batch, dim * 4, -1), (height, width), 2, stride=2)
        return self.project(y)


def mobilevit() -> Built:
    """MobileViT-XXS-like on 64² images: MV2 blocks and two MobileViT blocks."""
    model = nn.Sequential(
        ConvNormAct(3, 16, 3, 2, act=nn.SiLU),
        InvertedResidual(16, 16, 1, 2, act=nn.SiLU),
        InvertedResidual(16, 24, 2, 2, act=nn.SiLU),
        InvertedResidual(24, 32, 2, 2, act=nn.SiLU),
        MobileViTBlock(32, 48),
        InvertedResidual(32, 48, 2, 2, act=nn.SiLU),
        MobileViTBlock(48, 64),
        Classifier(48),
    )
    return model, image(64), {}


def mobilevit_v2() -> Built:
    """MobileViT-v2-0.5-like on 64² images."""
    model = nn.Sequential(
        ConvNormAct(3, 16, 3, 2, act=nn.SiLU),
        InvertedResidual(16, 32, 2, 2, act=nn.SiLU),
        InvertedResidual(32, 32, 2, 2, act=nn.SiLU),
        MobileViTv2Block(32, 32),
        InvertedResidual(32, 64, 2, 2, act=nn.SiLU),
        MobileViTv2Block(64, 48),
        Classifier(64),
    )
    return model, image(64), {}


MODELS: dict[str, Callable[[], Built]] = {
    "fastvit": fastvit,
    "efficientformer": efficientformer,
    "efficientvit": efficientvit,
    "levit": levit,
    "mobilevit": mobilevit,
    "mobilevit-v2": mobilevit_v2,
}
"""Builders by zoo name (``zoo_truth.catalogue`` adds issue, group and loss)."""
