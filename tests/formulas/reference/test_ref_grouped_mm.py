"""Reference checks of ``_grouped_mm`` forward and backward (truth.md 3: MoE training).

The reference re-implements every grouped product as one ``mm`` per group over the group's own rows
(or columns, or contraction slice), with the group boundaries read from ``offs`` (the test may read
values; formulas never do), forward and through autograd, and counts ``2 · MACs`` of those products
with the harness's :class:`TrivialCounter` (reference (a)). ``measure_flops`` runs the real kernel:
on every tested torch, autograd differentiates ``_grouped_mm(x[M, K], w[G, K, N], offs)`` into two more
``_grouped_mm`` calls, ``grad_a = _grouped_mm(grad[M, N], wᵀ[G, N, K], offs)`` and
``grad_b = _grouped_mm(xᵀ[K, M], grad[M, N], offs) -> [G, K, N]``, whose counts must be the groups'
real sizes, never ``G`` full products.

Routing sends every packed row to exactly one group, so the cases' ``offs`` end at the packed size
(the convention the formula states). Sizes are multiples of 4 (float32) or 8 (bfloat16): the CPU
kernel wants 16-byte strides.
"""

from __future__ import annotations

import random

import pytest
import torch
from torch import nn

from reference.harness import cases, library_count, seeded, trivial_count

pytestmark = pytest.mark.skipif(not hasattr(torch, "_grouped_mm"), reason="no torch._grouped_mm")


def group_sizes(rng: random.Random, groups: int, total: int) -> list[int]:
    """``groups`` sizes summing to ``total`` (some may be 0: an expert no token chose)."""
    cuts = sorted(rng.randint(0, total) for _ in range(groups - 1))
    return [end - start for start, end in zip([0, *cuts], [*cuts, total], strict=True)]


def bounds(sizes: list[int]) -> list[tuple[int, int]]:
    """``(start, end)`` of each group from its size (what ``offs`` encodes)."""
    ends = torch.tensor(sizes).cumsum(0).tolist()
    return list(zip([0, *ends[:-1]], ends, strict=True))


def reference_products(left: torch.Tensor, right: torch.Tensor, sizes: list[int] | None) -> torch.Tensor:
    """The grouped product as plain ``mm`` per group (``bmm`` when both operands are batched)."""
    if left.dim() == 3 and right.dim() == 3:
        return torch.bmm(left, right)
    parts = []
    for group, (start, end) in enumerate(bounds(sizes or [])):
        if left.dim() == 2 and right.dim() == 3:  # rows split: out[rows] = x[rows] @ w[g]
            parts.append(left[start:end] @ right[group])
        elif left.dim() == 2:  # contraction split: out[g] = a[:, s:e] @ b[s:e]
            parts.append(left[:, start:end] @ right[start:end])
        else:  # columns split: out[:, s:e] = a[g] @ b[:, s:e]
            parts.append(left[group] @ right[:, start:end])
    if left.dim() == 2 and right.dim() == 2:
        return torch.stack(parts)
    return torch.cat(parts, dim=0 if right.dim() == 3 else 1)


@pytest.mark.parametrize(("seed", "rng"), cases("grouped_mm"))
def test_grouped_products_match_per_group_mm(seed: int, rng: random.Random) -> None:
    dtype = rng.choice([torch.float32, torch.bfloat16])
    unit = 4 if dtype == torch.float32 else 8
    groups = rng.randint(1, 4)
    m, k, n = (unit * rng.randint(1, 4) for _ in range(3))
    layout = rng.choice(["2d-3d", "2d-2d", "3d-2d", "3d-3d", "backward"])
    generator = seeded(rng)

    def rand(*shape: int) -> torch.Tensor:
        return torch.rand(shape, generator=generator).to(dtype)

    sizes = group_sizes(rng, groups, {"2d-2d": k, "3d-2d": n}.get(layout, m))
    offs = torch.tensor(sizes).cumsum(0).to(torch.int32)
    operands = {
        "2d-3d": (rand(m, k), rand(groups, k, n)),
        "backward": (rand(m, k), rand(groups, k, n)),
        "2d-2d": (rand(m, k), rand(k, n)),
        "3d-2d": (rand(groups, m, k), rand(k, n)),
        "3d-3d": (rand(groups, m, k), rand(groups, k, n)),
    }[layout]
    grouped_offs = None if layout == "3d-3d" else offs
    if layout != "backward":
        counted = library_count(lambda: torch._grouped_mm(*operands, offs=grouped_offs))
        reference = trivial_count(lambda: reference_products(*operands, sizes))
    else:
        left, right = (operand.requires_grad_() for operand in operands)
        gradient = rand(m, n)
        counted = library_count(lambda: torch._grouped_mm(left, right, offs=offs).backward(gradient))
        reference_left, reference_right = (operand.detach().requires_grad_() for operand in operands)
        reference = trivial_count(
            lambda: reference_products(reference_left, reference_right, sizes).backward(gradient)
        )
    assert counted.status == "complete", counted.diagnostics
    assert counted.operator("aten._grouped_mm") == reference.products


class TinyMoE(nn.Module):
    """Top-k routed experts (two-layer SiLU MLPs), tokens sorted by expert, as MoE layers run them:
    ``grouped=True`` through ``torch._grouped_mm``, ``grouped=False`` as one ``mm`` per expert over
    the same token slices (the dense equivalent)."""

    def __init__(self, width: int = 16, hidden: int = 32, experts: int = 4, top_k: int = 2) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.router = nn.Linear(width, experts, bias=False)
        self.up = nn.Parameter(torch.randn(experts, width, hidden, generator=generator) * 0.1)
        self.down = nn.Parameter(torch.randn(experts, hidden, width, generator=generator) * 0.1)
        self.top_k, self.experts, self.grouped = top_k, experts, True

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        weights, chosen = torch.softmax(self.router(tokens), -1).topk(self.top_k, dim=-1)
        flat = chosen.flatten()
        order = flat.argsort(stable=True)
        rows = order // self.top_k
        sizes = torch.bincount(flat, minlength=self.experts)
        offs = sizes.cumsum(0).to(torch.int32)
        routed = tokens[rows]
        if self.grouped:
            hidden = torch._grouped_mm(routed, self.up, offs=offs)
            out = torch._grouped_mm(nn.functional.silu(hidden), self.down, offs=offs)
        else:
            ends = offs.tolist()
            starts = [0, *ends[:-1]]
            hidden = torch.cat(
                [routed[s:e] @ self.up[g] for g, (s, e) in enumerate(zip(starts, ends, strict=True))]
            )
            active = nn.functional.silu(hidden)
            out = torch.cat(
                [active[s:e] @ self.down[g] for g, (s, e) in enumerate(zip(starts, ends, strict=True))]
            )
        out = out * weights.flatten()[order].unsqueeze(-1)
        return torch.zeros_like(tokens).index_add(0, rows, out)


def test_tiny_moe_training_step_reconciles_with_its_dense_equivalent() -> None:
    tokens = torch.rand(24, 16, generator=torch.Generator().manual_seed(1))
    counts = {}
    for grouped in (True, False):
        model = TinyMoE()
        model.grouped = grouped
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(model: TinyMoE = model, optimizer: torch.optim.Optimizer = optimizer) -> None:
            model(tokens).pow(2).mean().backward()
            optimizer.step()
            optimizer.zero_grad()

        counted = library_count(step)
        assert counted.status == "complete", counted.diagnostics
        assert all(phase["status"] == "complete" for phase in counted.by_phase.values())
        counts[grouped] = counted
    grouped, dense = counts[True], counts[False]
    # The same token -> expert assignments: the grouped products (forward 2, backward 4) equal the
    # dense per-expert mm products; the router's mm is in both.
    expert_products = grouped.operator("aten._grouped_mm")
    assert expert_products > 0
    assert expert_products + grouped.operator("aten.mm") == dense.operator("aten.mm")
    # 48 routed rows (24 tokens, top 2) through 16 -> 32 -> 16: each product 2·48·16·32; forward 2,
    # backward 3 — both weight gradients and the second product's input gradient (the routed tokens
    # need no gradient, so the first product's grad_a never runs)
    assert expert_products == 5 * (2 * 48 * 16 * 32)
    assert grouped.by_phase["backward"]["value"] > grouped.by_phase["forward"]["value"]
