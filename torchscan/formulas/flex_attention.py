"""FLOPs of ``flex_attention`` counted from its ``BlockMask`` (attention-and-scaling.md 1).

A flex attention kernel visits the (query block, key block) tiles its ``BlockMask`` lists and skips
the others. Every pair of a visited tile is computed — a *full* tile as is, a *partial* tile through
``mask_mod`` and one selection per pair — so the pairs counted here are those of the visited tiles
(clipped to the sequence lengths at the last block), never the pairs the mask keeps inside a tile.
Per computed pair and per batch·query head the costs follow the CPU fused attention formula
(:func:`torchscan.formulas.attention_ops.cpu_sdpa_flops`, formulas.md B.9), with its mask term
applied to the partial tiles only:

* forward: ``2·D`` (score product) ``+ 2·Dv`` (value product) ``+ 1`` (scale) ``+ 5`` (stable
  softmax, ``− 2`` per query row that has a computed pair) ``+ score_mod``; partial tiles add
  ``1 + mask_mod`` per pair;
* backward (the products of PyTorch's ``sdpa_backward_flop_count``): ``2·(3·D + 2·Dv)`` per pair,
  ``6`` element-wise (recomputed ``exp(scale·S − lse)`` and ``dS = P·(dP − Δ)`` with its scale)
  ``+ score_mod + joint`` (the recomputed ``score_mod`` and its gradient graph), partial tiles
  ``1 + mask_mod``, and ``Δ = rowsum(dO∘O)``: ``2·Dv − 1`` per query row.

``score_mod``/``mask_mod``/``joint`` are FLOPs per pair, measured by the caller
(:mod:`torchscan.analysis.dispatch.higher_order`) by running the callable once on one tile's index tensors.
Grouped-query attention (``Hq`` a multiple of ``Hkv``) counts per query head: sharing keys and values
saves reads, not score arithmetic.

These functions read the ``BlockMask``'s block counts and indices — small integer tensors, the only
tensor values any TorchScan formula reads — so a mask on the meta device cannot be counted. What the
numbers do not mean: not the dense work of PyTorch's unfused eager reference implementation (which
computes every pair, then masks), and not a Triton backward kernel's recomputation (it recomputes
scores once per gradient pass); the log-sum-exp output is not counted, as for fused SDPA.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from torchscan.formulas.operator_common import UnsupportedOperatorFormula

__all__ = [
    "BlockWork",
    "FlexShapes",
    "backward_flops",
    "block_work",
    "flex_shapes",
    "forward_flops",
    "mask_tile",
]

SHAPE_REASON = (
    "Flex attention counts require 4-D query, key and value with matching batches, query heads a "
    "multiple of key/value heads, matching query/key widths and key/value lengths."
)
MASK_REASON = (
    "Flex attention counts require a BlockMask whose batch and head sizes are 1 or those of the query "
    "and which covers every query block."
)
VALUES_REASON = (
    "Flex attention counts read the BlockMask's block counts, which are values a meta or fake tensor "
    "does not hold."
)

# ``BlockMask.as_tuple()``: (Q_LEN, KV_LEN, kv_num_blocks, kv_indices, full_kv_num_blocks,
# full_kv_indices, ..., Q_BLOCK_SIZE, KV_BLOCK_SIZE, mask_mod) on torch 2.13-2.15; the middle holds
# the transposed (q_*) tables and, on newer releases, more optional tables, so the block sizes and
# mask_mod are read from the end.
_KV_NUM, _KV_INDICES, _FULL_NUM, _FULL_INDICES = 2, 3, 4, 5


@dataclass(frozen=True, slots=True)
class FlexShapes:
    """The sizes of one flex attention call: query ``(B, Hq, Lq, D)``, key/value ``(B, Hkv, Lkv, ·)``."""

    batch: int
    heads: int  # query heads
    q_len: int
    kv_len: int
    head_dim: int  # D (query and key)
    value_dim: int  # Dv


@dataclass(frozen=True, slots=True)
class BlockWork:
    """What a BlockMask makes a kernel compute, summed over every batch and query head."""

    pairs: int  # (query, key) pairs of the computed (full and partial) tiles
    masked_pairs: int  # pairs of the partial tiles, where mask_mod runs
    rows: int  # query rows with at least one computed pair (the softmax rows)
    all_rows: int  # B·Hq·Lq


def flex_shapes(query: Any, key: Any, value: Any) -> FlexShapes:
    """Validate the operands of a flex attention call and return their sizes."""
    ok = (
        all(isinstance(t, torch.Tensor) for t in (query, key, value))
        and query.dim() == key.dim() == value.dim() == 4
        and query.shape[0] == key.shape[0] == value.shape[0]
        and key.shape[1] == value.shape[1]
        and key.shape[1] > 0
        and query.shape[1] % key.shape[1] == 0
        and query.shape[3] == key.shape[3]
        and key.shape[2] == value.shape[2]
    )
    if not ok:
        raise UnsupportedOperatorFormula(SHAPE_REASON)
    batch, heads, q_len, head_dim = (int(n) for n in query.shape)
    return FlexShapes(batch, heads, q_len, int(key.shape[2]), head_dim, int(value.shape[3]))


def mask_tile(block_mask: tuple[Any, ...]) -> tuple[int, int]:
    """``(Q_BLOCK_SIZE, KV_BLOCK_SIZE)`` of a ``BlockMask.as_tuple()``."""
    q_block, kv_block = block_mask[-3], block_mask[-2]
    if not (isinstance(q_block, int) and isinstance(kv_block, int) and q_block > 0 and kv_block > 0):
        raise UnsupportedOperatorFormula(MASK_REASON)
    return q_block, kv_block


def _columns(num: torch.Tensor, indices: torch.Tensor, kv_len: int, kv_block: int) -> torch.Tensor:
    """Key columns computed per query block: the in-range width of each listed key block, summed.

    ``num[..., i]`` blocks of row ``i`` are listed first in ``indices[..., i, :]``; entries past it
    are padding. A key block's width is ``KV_BLOCK_SIZE``, less at the end of the sequence.
    """
    listed = torch.arange(indices.shape[-1], device=indices.device) < num.unsqueeze(-1).long()
    widths = (kv_len - indices.long() * kv_block).clamp(0, kv_block)
    return (widths * listed).sum(-1)


def block_work(block_mask: tuple[Any, ...], shapes: FlexShapes) -> BlockWork:
    """The pairs and rows a ``BlockMask.as_tuple()`` makes the kernel compute for ``shapes``.

    A mask whose batch or head size is 1 is broadcast over the query's batch or heads; query blocks
    past ``Lq`` and key blocks past ``Lkv`` (a mask made for longer sequences) contribute nothing.
    """
    q_block, kv_block = mask_tile(block_mask)
    num, indices = block_mask[_KV_NUM], block_mask[_KV_INDICES]
    full_num, full_indices = block_mask[_FULL_NUM], block_mask[_FULL_INDICES]
    if not (isinstance(num, torch.Tensor) and isinstance(indices, torch.Tensor) and num.dim() == 3):
        raise UnsupportedOperatorFormula(MASK_REASON)
    mask_batch, mask_heads, q_blocks = (int(n) for n in num.shape)
    if (
        mask_batch not in (1, shapes.batch)
        or mask_heads not in (1, shapes.heads)
        or q_blocks * q_block < shapes.q_len
    ):
        raise UnsupportedOperatorFormula(MASK_REASON)
    if num.device.type == "meta" or type(num) is not torch.Tensor:
        raise UnsupportedOperatorFormula(VALUES_REASON)
    starts = torch.arange(q_blocks, device=num.device) * q_block
    heights = (shapes.q_len - starts).clamp(0, q_block)  # query rows of each query block
    partial = _columns(num, indices, shapes.kv_len, kv_block)
    computed = partial
    if isinstance(full_num, torch.Tensor) and isinstance(full_indices, torch.Tensor):
        computed = partial + _columns(full_num, full_indices, shapes.kv_len, kv_block)
    broadcast = (shapes.batch // mask_batch) * (shapes.heads // mask_heads)
    return BlockWork(
        pairs=int((computed * heights).sum()) * broadcast,
        masked_pairs=int((partial * heights).sum()) * broadcast,
        rows=int(((computed > 0) * heights).sum()) * broadcast,
        all_rows=shapes.batch * shapes.heads * shapes.q_len,
    )


def forward_flops(shapes: FlexShapes, work: BlockWork, *, score_mod: int = 0, mask_mod: int = 0) -> int:
    """Forward FLOPs: ``pairs·(2D + 2Dv + 6 + score_mod) − 2·rows + masked_pairs·(1 + mask_mod)``.

    ``score_mod`` and ``mask_mod`` are FLOPs per pair. 0 when no pair is computed.
    """
    if not work.pairs:
        return 0
    per_pair = 2 * shapes.head_dim + 2 * shapes.value_dim + 1 + 5 + score_mod
    return work.pairs * per_pair - 2 * work.rows + work.masked_pairs * (1 + mask_mod)


def backward_flops(
    shapes: FlexShapes, work: BlockWork, *, score_mod: int = 0, joint: int = 0, mask_mod: int = 0
) -> int:
    """Backward FLOPs: ``pairs·(2·(3D + 2Dv) + 6 + score_mod + joint) + masked_pairs·(1 + mask_mod)
    + all_rows·(2·Dv − 1)``.

    ``score_mod`` (recomputed), ``joint`` (its gradient graph) and ``mask_mod`` are FLOPs per pair;
    the last term is ``Δ = rowsum(dO∘O)``, computed for every query row.
    """
    delta = work.all_rows * (2 * shapes.value_dim - 1) if shapes.value_dim else 0
    if not work.pairs:
        return delta
    products = 2 * (3 * shapes.head_dim + 2 * shapes.value_dim)
    return work.pairs * (products + 6 + score_mod + joint) + work.masked_pairs * (1 + mask_mod) + delta
