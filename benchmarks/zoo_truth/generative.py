"""A diffusion UNet, a KL autoencoder and a segmenter with depthwise transposed convolutions
(issue #39), in plain PyTorch (no diffusers).

``LOSSES`` gives each its training loss: noise-prediction MSE, reconstruction MSE + KL, per-pixel
cross-entropy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from zoo_truth.blocks import Built, ConvNormAct, image, randn, sinusoidal

# --- diffusion UNet, VAE, depthwise-deconvolution decoder ----------------------------------------


class ResBlock(nn.Module):
    """DDPM's residual block: GroupNorm → SiLU → 3×3, plus the time embedding (a Linear), GroupNorm →
    SiLU → 3×3; a 1×1 shortcut when the width changes."""

    def __init__(self, cin: int, cout: int, time_dim: int | None = None) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.GroupNorm(8, cin), nn.GroupNorm(8, cout)
        self.conv1, self.conv2 = nn.Conv2d(cin, cout, 3, padding=1), nn.Conv2d(cout, cout, 3, padding=1)
        self.time = nn.Linear(time_dim, cout) if time_dim else None
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor, emb: torch.Tensor | None = None) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        if self.time is not None and emb is not None:
            h = h + self.time(F.silu(emb))[:, :, None, None]
        return self.skip(x) + self.conv2(F.silu(self.norm2(h)))


class AttentionBlock(nn.Module):
    """Single-head spatial self-attention: GroupNorm, 1×1 q/k/v, softmax over positions, 1×1 out."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.norm = nn.GroupNorm(8, channels)
        self.qkv = nn.Conv2d(channels, 3 * channels, 1)
        self.out = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, channels, height, width = x.shape
        q, k, v = self.qkv(self.norm(x)).flatten(2).chunk(3, dim=1)
        weights = (q.transpose(1, 2) @ k * channels**-0.5).softmax(-1)
        return x + self.out((v @ weights.transpose(1, 2)).view(batch, channels, height, width))


class DiffusionUNet(nn.Module):
    """DDPM-style UNet (32, 64 channels; attention at 8×8): sinusoidal time embedding → MLP, two
    resolutions down (strided 3×3) and up (nearest ×2 + 3×3), skip concatenation; predicts noise."""

    def __init__(self) -> None:
        super().__init__()
        self.time = nn.Sequential(nn.Linear(32, 128), nn.SiLU(), nn.Linear(128, 128))
        self.conv_in = nn.Conv2d(3, 32, 3, padding=1)
        self.down1, self.downsample = ResBlock(32, 32, 128), nn.Conv2d(32, 32, 3, 2, 1)
        self.down2, self.down_attention = ResBlock(32, 64, 128), AttentionBlock(64)
        self.mid1, self.mid_attention, self.mid2 = (
            ResBlock(64, 64, 128),
            AttentionBlock(64),
            ResBlock(64, 64, 128),
        )
        self.up2, self.up_attention = ResBlock(128, 64, 128), AttentionBlock(64)
        self.upsample = nn.Sequential(
            nn.Upsample(scale_factor=2.0, mode="nearest"), nn.Conv2d(64, 64, 3, padding=1)
        )
        self.up1 = ResBlock(96, 32, 128)
        self.out = nn.Sequential(nn.GroupNorm(8, 32), nn.SiLU(), nn.Conv2d(32, 3, 3, padding=1))

    def forward(self, x: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        emb = self.time(sinusoidal(steps, 32))
        h1 = self.down1(self.conv_in(x), emb)
        h2 = self.down_attention(self.down2(self.downsample(h1), emb))
        h = self.mid2(self.mid_attention(self.mid1(h2, emb)), emb)
        h = self.up_attention(self.up2(torch.cat([h, h2], dim=1), emb))
        h = self.up1(torch.cat([self.upsample(h), h1], dim=1), emb)
        return self.out(h)


NOISE = randn(2, 3, 16, 16, seed=2)


def diffusion_unet() -> Built:
    """The UNet on noised 2×3×16×16 images at steps 10 and 500 (the loss is MSE to the noise)."""
    alpha = torch.tensor([0.99, 0.6]).view(2, 1, 1, 1)
    noised = alpha.sqrt() * randn(2, 3, 16, 16) + (1 - alpha).sqrt() * NOISE
    return DiffusionUNet(), (noised, torch.tensor([10.0, 500.0])), {}


class VAE(nn.Module):
    """A Stable-Diffusion-style KL autoencoder: conv-in, residual blocks, an asymmetric-pad strided
    downsample, a mid block with attention, mean and log-variance of a 4-channel latent, a sample,
    and the mirrored decoder with nearest upsampling. Returns (reconstruction, mean, logvar)."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            ResBlock(32, 32),
            _PadDown(32),
            ResBlock(32, 64),
            AttentionBlock(64),
        )
        self.to_moments = nn.Sequential(
            nn.GroupNorm(8, 64), nn.SiLU(), nn.Conv2d(64, 8, 3, padding=1), nn.Conv2d(8, 8, 1)
        )
        self.decoder = nn.Sequential(
            nn.Conv2d(4, 4, 1),
            nn.Conv2d(4, 64, 3, padding=1),
            AttentionBlock(64),
            ResBlock(64, 32),
            nn.Upsample(scale_factor=2.0, mode="nearest"),
            nn.Conv2d(32, 32, 3, padding=1),
            ResBlock(32, 32),
            nn.GroupNorm(8, 32),
            nn.SiLU(),
            nn.Conv2d(32, 3, 3, padding=1),
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mean, logvar = self.to_moments(self.encoder(x)).chunk(2, dim=1)
        latent = mean + (0.5 * logvar).exp() * torch.randn_like(mean)
        return self.decoder(latent), mean, logvar


class _PadDown(nn.Module):
    """Pad right and bottom by one, then a 3×3 stride-2 convolution (the SD VAE's downsample)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(F.pad(x, (0, 1, 0, 1)))


VAE_IMAGE = randn(2, 3, 16, 16, seed=3)


def vae() -> Built:
    """The VAE on 2×3×16×16 images."""
    return VAE(), (VAE_IMAGE,), {}


def vae_loss(output: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Reconstruction MSE plus the KL divergence to a standard normal."""
    reconstruction, mean, logvar = output
    kl = 0.5 * (mean.square() + logvar.exp() - 1 - logvar).mean()
    return F.mse_loss(reconstruction, VAE_IMAGE) + kl


class DepthwiseDecoder(nn.Module):
    """A segmentation net whose decoder upsamples with depthwise (per-channel) transposed 4×4/2
    convolutions, FCN-style, each followed by a 1×1 mix; per-pixel logits over 5 classes."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            ConvNormAct(3, 16, 3, 2), ConvNormAct(16, 32, 3, 2), ConvNormAct(32, 64, 3, 2)
        )
        self.up = nn.ModuleList(nn.ConvTranspose2d(c, c, 4, 2, 1, groups=c, bias=False) for c in (64, 32, 16))
        self.mix = nn.ModuleList(ConvNormAct(cin, cout, 1) for cin, cout in ((64, 32), (32, 16), (16, 16)))
        self.head = nn.Conv2d(16, 5, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.encoder(x)
        for up, mix in zip(self.up, self.mix, strict=True):
            h = mix(up(h))
        return self.head(h)


def dw_deconv() -> Built:
    """The depthwise-deconvolution segmenter on 2×3×32×32 images."""
    return DepthwiseDecoder(), image(32), {}


def segmentation_loss(output: torch.Tensor) -> torch.Tensor:
    """Per-pixel cross-entropy against a fixed label map."""
    labels = torch.arange(output[:, 0].numel()).view_as(output[:, 0]) % output.shape[1]
    return F.cross_entropy(output, labels)


MODELS: dict[str, Callable[[], Built]] = {
    "diffusion-unet": diffusion_unet,
    "vae": vae,
    "dw-deconv-segmenter": dw_deconv,
}
"""Builders by zoo name (``zoo_truth.catalogue`` adds issue, group and loss)."""


def _noise_loss(output: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(output, NOISE)


LOSSES: dict[str, Callable[[Any], torch.Tensor]] = {
    "diffusion-unet": _noise_loss,
    "vae": vae_loss,
    "dw-deconv-segmenter": segmentation_loss,
}
"""The training loss of each model."""
