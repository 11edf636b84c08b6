"""Fourier neural operators, graph networks, a quantisation-aware CNN and an STFT front end
(issues #32, #39), in plain PyTorch (no PyG).

FNO multiplies complex spectral weights (complex ``einsum``); AFNO runs its block-diagonal MLP on
real and imaginary parts; GCN and GAT pass messages with ``index_add``, ``scatter_add`` and
``scatter_reduce``; the quantiser divides with ``rounding_mode="floor"``; the STFT front end takes a
complex magnitude.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils import parametrize

from zoo_truth.blocks import Built, Classifier, ConvNormAct, Mlp, image, randn

# --- Fourier neural operators (Li et al.; Guibas et al.) -----------------------------------------


class SpectralConv(nn.Module):
    """Keep the lowest ``modes`` frequencies of ``rfftn``, multiply them by complex weights (an
    ``einsum`` over channels per mode), invert. 1-D keeps one corner, 2-D the two low-row corners."""

    def __init__(self, width: int, modes: int, dims: int) -> None:
        super().__init__()
        self.modes, self.dims = modes, dims
        scale = 1 / (width * width)
        corners = 1 if dims == 1 else 2
        shape = (corners, width, width) + (modes,) * dims
        self.weights = nn.Parameter(scale * torch.rand(*shape, dtype=torch.cfloat))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spatial = tuple(range(-self.dims, 0))
        spectrum = torch.fft.rfftn(x, dim=spatial)
        out = torch.zeros_like(spectrum)
        m = self.modes
        if self.dims == 1:
            out[..., :m] = torch.einsum("bix,iox->box", spectrum[..., :m], self.weights[0])
        else:
            out[..., :m, :m] = torch.einsum("bixy,ioxy->boxy", spectrum[..., :m, :m], self.weights[0])
            out[..., -m:, :m] = torch.einsum("bixy,ioxy->boxy", spectrum[..., -m:, :m], self.weights[1])
        return torch.fft.irfftn(out, s=x.shape[-self.dims :], dim=spatial)


class FNO(nn.Module):
    """Lift (Linear), four Fourier layers (spectral conv + 1×1 conv, GELU), project (two Linears)."""

    def __init__(self, dims: int, width: int = 16, modes: int = 6) -> None:
        super().__init__()
        self.dims = dims
        self.lift = nn.Linear(dims + 1, width)
        self.spectral = nn.ModuleList(SpectralConv(width, modes, dims) for _ in range(4))
        pointwise = nn.Conv1d if dims == 1 else nn.Conv2d
        self.pointwise = nn.ModuleList(pointwise(width, width, 1) for _ in range(4))
        self.project = nn.Sequential(nn.Linear(width, 64), nn.GELU(), nn.Linear(64, 1))

    def forward(self, field: torch.Tensor) -> torch.Tensor:
        axes = [torch.linspace(0, 1, n) for n in field.shape[1:-1]]
        grid = torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1).expand(*field.shape[:-1], self.dims)
        x = self.lift(torch.cat([field, grid], dim=-1)).movedim(-1, 1)
        for index, (spectral, pointwise) in enumerate(zip(self.spectral, self.pointwise, strict=True)):
            x = spectral(x) + pointwise(x)
            if index < 3:
                x = F.gelu(x)
        return self.project(x.movedim(1, -1))


def fno1d() -> Built:
    """FNO-1D (Burgers-style) on 2 fields × 64 points."""
    return FNO(1), (randn(2, 64, 1),), {}


def fno2d() -> Built:
    """FNO-2D (Darcy-style) on 2 fields × 16×16 points."""
    return FNO(2, width=12, modes=4), (randn(2, 16, 16, 1),), {}


class AFNOMixer(nn.Module):
    """AFNO's token mixer: ``rfft2`` over the grid, a two-layer block-diagonal complex MLP written
    with real and imaginary parts (four real ``einsum`` per layer), soft-shrinkage, ``irfft2``."""

    def __init__(self, dim: int, blocks: int = 4) -> None:
        super().__init__()
        self.blocks, self.size = blocks, dim // blocks
        scale = 0.02
        self.w1 = nn.Parameter(scale * torch.randn(2, blocks, self.size, self.size))
        self.b1 = nn.Parameter(scale * torch.randn(2, blocks, self.size))
        self.w2 = nn.Parameter(scale * torch.randn(2, blocks, self.size, self.size))
        self.b2 = nn.Parameter(scale * torch.randn(2, blocks, self.size))

    def _layer(
        self, real: torch.Tensor, imag: torch.Tensor, w: torch.Tensor, b: torch.Tensor
    ) -> tuple[Any, Any]:
        mix = "...bi,bio->...bo"
        new_real = torch.einsum(mix, real, w[0]) - torch.einsum(mix, imag, w[1]) + b[0]
        new_imag = torch.einsum(mix, imag, w[0]) + torch.einsum(mix, real, w[1]) + b[1]
        return new_real, new_imag

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, height, width, dim = x.shape
        spectrum = torch.fft.rfft2(x, dim=(1, 2), norm="ortho").reshape(
            batch, height, -1, self.blocks, self.size
        )
        real, imag = self._layer(spectrum.real, spectrum.imag, self.w1, self.b1)
        real, imag = self._layer(F.relu(real), F.relu(imag), self.w2, self.b2)
        mixed = F.softshrink(torch.stack([real, imag], dim=-1), 0.01)
        mixed = torch.view_as_complex(mixed.contiguous()).reshape(batch, height, -1, dim)
        return torch.fft.irfft2(mixed, s=(height, width), dim=(1, 2), norm="ortho") + x


class AFNO(nn.Module):
    """FourCastNet-style: 4×4 patch embedding, two blocks of LayerNorm → AFNO mixer → LayerNorm → MLP,
    a Linear head back to 4×4×channels per token."""

    def __init__(self, channels: int = 4, dim: int = 32) -> None:
        super().__init__()
        self.embed = nn.Conv2d(channels, dim, 4, 4)
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(4))
        self.mixers = nn.ModuleList(AFNOMixer(dim) for _ in range(2))
        self.mlps = nn.ModuleList(Mlp(dim, 4 * dim) for _ in range(2))
        self.head = nn.Linear(dim, 16 * channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(x).permute(0, 2, 3, 1)
        for index, (mixer, mlp) in enumerate(zip(self.mixers, self.mlps, strict=True)):
            tokens = mixer(self.norms[2 * index](tokens))
            tokens = tokens + mlp(self.norms[2 * index + 1](tokens))
        return self.head(tokens)


def afno() -> Built:
    """AFNO on 2 × 4 channels × 32×32 (an 8×8 token grid)."""
    return AFNO(), (randn(2, 4, 32, 32),), {}


# --- graph networks -------------------------------------------------------------------------------

NODES, FEATURES, EDGES = 48, 16, 160


def _graph() -> tuple[torch.Tensor, torch.Tensor]:
    """Node features and a fixed random edge list (with a self-loop per node)."""
    g = torch.Generator().manual_seed(1)
    edges = torch.randint(0, NODES, (2, EDGES), generator=g)
    loops = torch.arange(NODES).expand(2, NODES)
    return randn(NODES, FEATURES), torch.cat([edges, loops], dim=1)


class GCNLayer(nn.Module):
    """Kipf & Welling: ``D^-½ (A + I) D^-½ X W`` with degrees and messages summed by ``index_add``."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.linear = nn.Linear(cin, cout, bias=False)
        self.bias = nn.Parameter(torch.zeros(cout))

    def forward(self, x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        source, target = edges
        degree = torch.zeros(x.shape[0]).index_add_(0, target, torch.ones(target.shape[0]))
        norm = degree[source].rsqrt() * degree[target].rsqrt()
        messages = self.linear(x)[source] * norm[:, None]
        return torch.zeros(x.shape[0], messages.shape[1]).index_add(0, target, messages) + self.bias


class GCN(nn.Module):
    """Two GCN layers with ReLU: per-node logits over 4 classes."""

    def __init__(self) -> None:
        super().__init__()
        self.layer1, self.layer2 = GCNLayer(FEATURES, 32), GCNLayer(32, 4)

    def forward(self, x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        return self.layer2(F.relu(self.layer1(x, edges)), edges)


class GATLayer(nn.Module):
    """Veličković et al.: per-head scores ``LeakyReLU(aᵀ[Wh_i ‖ Wh_j])``, softmax over each node's
    incoming edges (max by ``scatter_reduce`` on detached scores, sums by ``index_add``), weighted
    messages summed by ``scatter_add``."""

    def __init__(self, cin: int, cout: int, heads: int) -> None:
        super().__init__()
        self.heads, self.cout = heads, cout
        self.linear = nn.Linear(cin, heads * cout, bias=False)
        self.source_score = nn.Parameter(0.1 * torch.randn(heads, cout))
        self.target_score = nn.Parameter(0.1 * torch.randn(heads, cout))

    def forward(self, x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        source, target = edges
        nodes = x.shape[0]
        h = self.linear(x).view(nodes, self.heads, self.cout)
        scores = F.leaky_relu(
            (h * self.source_score).sum(-1)[source] + (h * self.target_score).sum(-1)[target], 0.2
        )
        index = target[:, None].expand_as(scores)
        peak = torch.zeros(nodes, self.heads).scatter_reduce(
            0, index, scores.detach(), "amax", include_self=False
        )
        weights = (scores - peak[target]).exp()
        weights = weights / torch.zeros(nodes, self.heads).index_add(0, target, weights)[target]
        messages = h[source] * weights[..., None]
        out = torch.zeros(nodes, self.heads, self.cout)
        return out.scatter_add(0, target[:, None, None].expand_as(messages), messages).flatten(1)


class GAT(nn.Module):
    """Two GAT layers (4 heads then 1), ELU between: per-node logits over 4 classes."""

    def __init__(self) -> None:
        super().__init__()
        self.layer1, self.layer2 = GATLayer(FEATURES, 8, 4), GATLayer(32, 4, 1)

    def forward(self, x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        return self.layer2(F.elu(self.layer1(x, edges)), edges)


def gcn() -> Built:
    """GCN on a 48-node graph with 160 random edges plus self-loops."""
    return GCN(), _graph(), {}


def gat() -> Built:
    """GAT on the same graph."""
    return GAT(), _graph(), {}


# --- quantisation-aware training, STFT front end -------------------------------------------------


def fake_quantize(x: torch.Tensor, scale: torch.Tensor, bits: int = 8) -> torch.Tensor:
    """Round-down quantisation ``clamp(floor(x / s)) · s`` with a straight-through gradient."""
    limit = 2 ** (bits - 1)
    quantized = torch.div(x, scale, rounding_mode="floor").clamp(-limit, limit - 1) * scale
    return x + (quantized - x).detach()


class WeightQuantizer(nn.Module):
    """A parametrization: the weight seen by the layer is its fake-quantised value (per output channel)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.full((channels, 1, 1, 1), 0.01))

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        return fake_quantize(weight, self.scale)


class ActivationQuantizer(nn.Module):
    """Fake-quantises activations with a learned scale."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(0.05))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fake_quantize(x, self.scale)


def quant_qat() -> Built:
    """A quantisation-aware CNN: three conv–BN–ReLU–quantiser units (weights quantised through a
    parametrization, one unit depthwise) and a float head."""
    layers: list[nn.Module] = []
    for cin, cout, groups in ((3, 16, 1), (16, 16, 16), (16, 32, 1)):
        unit = ConvNormAct(cin, cout, 3, 2 if cin != cout else 1, groups=groups)
        parametrize.register_parametrization(unit[0], "weight", WeightQuantizer(cout))
        layers += [unit, ActivationQuantizer()]
    return nn.Sequential(*layers, Classifier(32)), image(32), {}


class SpectrogramClassifier(nn.Module):
    """``torch.stft`` (Hann window) → power from the complex magnitude → log-mel (a fixed filterbank
    product) → a small CNN with a depthwise-separable unit → 10 classes."""

    def __init__(self, n_fft: int = 128, mels: int = 24) -> None:
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("window", torch.hann_window(n_fft), persistent=False)
        bins = n_fft // 2 + 1
        centers = torch.linspace(0, bins - 1, mels + 2)
        grid = torch.arange(bins, dtype=torch.float32)
        width = centers[1] - centers[0]
        filterbank = (1 - (grid[None] - centers[1:-1, None]).abs() / width).clamp(min=0)
        self.register_buffer("filterbank", filterbank, persistent=False)
        self.cnn = nn.Sequential(
            ConvNormAct(1, 16, 3, 2),
            ConvNormAct(16, 16, 3, groups=16),
            ConvNormAct(16, 32, 1),
            Classifier(32),
        )

    def forward(self, waveform: torch.Tensor) -> torch.Tensor:
        spectrum = torch.stft(waveform, self.n_fft, self.n_fft // 2, window=self.window, return_complex=True)
        power = spectrum.abs().square()
        mel = torch.log(self.filterbank @ power + 1e-6)
        return self.cnn(mel.unsqueeze(1))


def stft_frontend() -> Built:
    """The spectrogram classifier on 2 waveforms of 2,048 samples."""
    return SpectrogramClassifier(), (randn(2, 2048),), {}


MODELS: dict[str, Callable[[], Built]] = {
    "fno-1d": fno1d,
    "fno-2d": fno2d,
    "afno": afno,
    "gcn": gcn,
    "gat": gat,
    "quant-qat": quant_qat,
    "stft-frontend": stft_frontend,
}
"""Builders by zoo name (``zoo_truth.catalogue`` adds issue, group and loss)."""
