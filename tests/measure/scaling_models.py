"""Small models for the measure_scaling tests and docs: a GPT-style decoder on the math attention path."""

from __future__ import annotations

import torch
from torch import nn


class CausalSelfAttention(nn.Module):
    """Multi-head causal attention written with explicit matmuls, softmax and a causal mask tensor.

    The math path computes every (query, key) score and then masks: all ``n²`` pairs are counted,
    whatever a fused causal kernel would skip.
    """

    def __init__(self, width: int, heads: int, max_len: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        blocked = ~torch.ones(max_len, max_len, dtype=torch.bool).tril()
        self.register_buffer("blocked", blocked, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, n, width = x.shape
        q, k, v = (
            t.view(batch, n, self.heads, width // self.heads).transpose(1, 2)
            for t in self.qkv(x).split(width, dim=-1)
        )
        scores = (q @ k.transpose(-2, -1)) * (width // self.heads) ** -0.5
        scores = scores.masked_fill(self.blocked[:n, :n], float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, n, width))


class MLP(nn.Module):
    """The feed-forward block: width -> 4 x width -> width with GELU."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.up = nn.Linear(width, 4 * width)
        self.act = nn.GELU()
        self.down = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.act(self.up(x)))


class Block(nn.Module):
    """Pre-norm transformer block with residual additions."""

    def __init__(self, width: int, heads: int, max_len: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, max_len)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = MLP(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    """Token and position embeddings, ``layers`` blocks, a final norm and a language-model head."""

    def __init__(self, vocab: int = 50, width: int = 32, heads: int = 4, layers: int = 2, max_len: int = 256):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(max_len, width)
        self.blocks = nn.ModuleList(Block(width, heads, max_len) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))
