"""Recurrent networks trained on CPU and two mixtures of experts (issue #32, #39): an LSTM language
model, a bidirectional GRU classifier, a top-2 MoE over ``torch._grouped_mm`` experts and a
Switch-style top-1 MoE over ``nn.Linear`` experts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from zoo_truth.blocks import Built, Mlp, randn

# --- recurrent networks trained on CPU -----------------------------------------------------------

VOCAB = 64
SEQUENCE = torch.randint(0, VOCAB, (2, 24), generator=torch.Generator().manual_seed(4))


class LSTMLanguageModel(nn.Module):
    """Embedding, a 2-layer LSTM, a Linear over the vocabulary (next-token logits)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.lstm = nn.LSTM(32, 48, num_layers=2, batch_first=True)
        self.head = nn.Linear(48, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.lstm(self.embed(ids))[0])


class GRUClassifier(nn.Module):
    """Embedding, a bidirectional GRU, mean over time, a Linear over 5 classes."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.gru = nn.GRU(32, 32, batch_first=True, bidirectional=True)
        self.head = nn.Linear(64, 5)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.gru(self.embed(ids))[0].mean(1))


def lstm_lm() -> Built:
    """The LSTM language model on 2 sequences of 24 tokens."""
    return LSTMLanguageModel(), (SEQUENCE,), {}


def gru_classifier() -> Built:
    """The GRU classifier on the same sequences."""
    return GRUClassifier(), (SEQUENCE,), {}


def next_token_loss(logits: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of each position's logits against the next token of ``SEQUENCE``."""
    return F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), SEQUENCE[:, 1:].reshape(-1))


# --- mixtures of experts ---------------------------------------------------------------------------


class GroupedMoE(nn.Module):
    """Top-2 of 4 experts; tokens sorted by expert and run through two ``torch._grouped_mm`` products
    (SiLU between) with per-expert row offsets; outputs weighted by the router and summed back."""

    def __init__(self, dim: int = 32, hidden: int = 64, experts: int = 4) -> None:
        super().__init__()
        self.experts = experts
        self.router = nn.Linear(dim, experts, bias=False)
        self.w1 = nn.Parameter(0.05 * torch.randn(experts, dim, hidden))
        self.w2 = nn.Parameter(0.05 * torch.randn(experts, hidden, dim))
        self.head = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = x.reshape(-1, x.shape[-1])
        weights, chosen = self.router(tokens).softmax(-1).topk(2, dim=-1)
        flat = chosen.flatten()
        order = flat.argsort()
        rows = tokens[order // 2]
        offsets = torch.bincount(flat, minlength=self.experts).cumsum(0).to(torch.int32)
        hidden = F.silu(torch._grouped_mm(rows, self.w1, offs=offsets))
        out = torch._grouped_mm(hidden, self.w2, offs=offsets) * weights.flatten()[order, None]
        mixed = torch.zeros_like(tokens).index_add(0, order // 2, out)
        return self.head(mixed.view_as(x).mean(1))


class SwitchMoE(nn.Module):
    """Switch Transformer's layer: top-1 routing, each expert an MLP of ``nn.Linear`` run on its own
    tokens (``index_select``), scaled by the router probability, written back by ``index_add``."""

    def __init__(self, dim: int = 32, hidden: int = 64, experts: int = 4) -> None:
        super().__init__()
        self.router = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList(Mlp(dim, hidden, nn.ReLU) for _ in range(experts))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.norm(x).reshape(-1, x.shape[-1])
        probability, chosen = self.router(tokens).softmax(-1).max(-1)
        mixed = torch.zeros_like(tokens)
        for index, expert in enumerate(self.experts):
            rows = (chosen == index).nonzero().flatten()
            if rows.numel():
                selected = tokens.index_select(0, rows)
                mixed = mixed.index_add(0, rows, expert(selected) * probability[rows, None])
        return self.head((tokens + mixed).view_as(x).mean(1))


def moe_grouped() -> Built:
    """The grouped-matmul MoE on 2 sequences of 16 tokens of width 32."""
    return GroupedMoE(), (randn(2, 16, 32),), {}


def moe_switch() -> Built:
    """The Switch MoE on the same tokens."""
    return SwitchMoE(), (randn(2, 16, 32),), {}


MODELS: dict[str, Callable[[], Built]] = {
    "lstm-lm": lstm_lm,
    "gru-classifier": gru_classifier,
    "moe-grouped-mm": moe_grouped,
    "moe-switch": moe_switch,
}
"""Builders by zoo name (``zoo_truth.catalogue`` adds issue, group and loss)."""

LOSSES: dict[str, Callable[[Any], torch.Tensor]] = {"lstm-lm": next_token_loss}
"""Losses other than classification."""
