"""Counting the higher-order operators that have a formula: ``flex_attention`` and its backward.

The formulas themselves are pure functions of shapes and BlockMask data
(:mod:`torchscan.formulas.flex_attention`); this module reads a call's arguments for them and
measures what only running can tell: the FLOPs per (query, key) pair of ``score_mod``, ``mask_mod``
and the backward's ``joint_graph``, each run once on one tile's index tensors under a fresh operator
observer (attention-and-scaling.md 1). The operator observer calls :func:`count` for a HOP that ran
as one call (:mod:`torchscan.analysis.dispatch.higher_order`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from torchscan.formulas import flex_attention as flex
from torchscan.formulas.operator_common import UnsupportedOperatorFormula, arg
from torchscan.report.sanitize import error_text

Counter = Callable[[], Any]
"""Makes a fresh operator observer (``OperatorObserver.counter``) to count a callable on its own."""


def _tile(
    query: torch.Tensor, shapes: flex.FlexShapes, block_mask: tuple[Any, ...]
) -> tuple[torch.Tensor, ...]:
    """``(score, b, h, q_idx, kv_idx)`` of the first tile, one value per (query, key) pair of it.

    Every index is materialised at the tile's shape, as the kernel evaluates ``score_mod`` and
    ``mask_mod`` once per pair: an operation on ``h`` alone costs one FLOP per pair too.
    """
    q_block, kv_block = flex.mask_tile(block_mask)
    rows, cols = min(q_block, shapes.q_len), min(kv_block, shapes.kv_len)
    device = query.device
    index = torch.zeros((rows, cols), dtype=torch.int32, device=device)
    q_idx = torch.arange(rows, dtype=torch.int32, device=device).view(rows, 1).expand(rows, cols)
    kv_idx = torch.arange(cols, dtype=torch.int32, device=device).view(1, cols).expand(rows, cols)
    score = torch.zeros((rows, cols), dtype=torch.float32, device=device)
    return score, index, index, q_idx, kv_idx


def per_pair(
    counter: Counter, fn: Any, inputs: tuple[Any, ...], pairs: int, label: str
) -> tuple[int, str | None]:
    """FLOPs per pair of ``fn(*inputs)`` run once on one tile of ``pairs`` pairs, under a fresh counter.

    Returns ``(flops_per_pair, None)``, or ``(0, reason)`` when the work cannot be counted: the
    callable raised on the tile, ran an operator without a formula, or did not cost a whole number of
    FLOPs per pair. ``fn`` None (no callable) costs 0.
    """
    if fn is None or not pairs:
        return 0, None
    observer = counter()
    try:
        with observer:
            fn(*inputs)
    except Exception as error:  # the callable is the caller's: its failure on a tile is reported
        reason = f"{label} could not run on one block's index tensors ({error_text(error)})"
        return 0, f"{reason}; its work is not counted."
    problems = observer.diagnostics()
    if problems:
        return 0, f"{label} work is not counted: {problems[0]['message']}"
    flops = sum(observer.by_operator.values())
    if flops % pairs:
        return 0, f"{label} work is not a whole number of FLOPs per (query, key) pair; it is not counted."
    return flops // pairs, None


Mod = tuple[str, Any, tuple[Any, ...], bool]
"""``(label, callable, inputs after the indices, is mask_mod)``."""


def _mods(
    counter: Counter,
    query: torch.Tensor,
    shapes: flex.FlexShapes,
    block_mask: tuple[Any, ...],
    work: flex.BlockWork,
    mods: tuple[Mod, ...],
) -> tuple[dict[str, int], list[str]]:
    """Per-pair costs of the ``mods`` on the first tile, and the reasons of those not counted.

    ``mask_mod`` runs on partial tiles only: without one, it is not run.
    """
    costs: dict[str, int] = {}
    gaps: list[str] = []
    if not work.pairs:
        return costs, gaps
    score, b, h, q_idx, kv_idx = _tile(query, shapes, block_mask)
    pairs = int(score.numel())
    for label, fn, extra, is_mask in mods:
        if is_mask and not work.masked_pairs:
            continue
        indices = (b, h, q_idx, kv_idx)
        inputs = (*indices, *extra) if is_mask else (score, *indices, *extra)
        cost, gap = per_pair(counter, fn, inputs, pairs, label)
        costs[label] = cost
        if gap is not None:
            gaps.append(gap)
    return costs, gaps


def _flex_forward(counter: Counter, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, str | None]:
    """``flex_attention(query, key, value, score_mod, block_mask, scale, kernel_options,
    score_mod_other_buffers, mask_mod_other_buffers)``."""
    query, key, value = args[:3]
    shapes = flex.flex_shapes(query, key, value)
    block_mask = arg(args, kwargs, 4, "block_mask")
    work = flex.block_work(block_mask, shapes)
    score_buffers = tuple(arg(args, kwargs, 7, "score_mod_other_buffers", ()) or ())
    mask_buffers = tuple(arg(args, kwargs, 8, "mask_mod_other_buffers", ()) or ())
    mods: tuple[Mod, ...] = (
        ("score_mod", arg(args, kwargs, 3, "score_mod"), score_buffers, False),
        ("mask_mod", block_mask[-1], mask_buffers, True),
    )
    costs, gaps = _mods(counter, query, shapes, block_mask, work, mods)
    flops = flex.forward_flops(
        shapes, work, score_mod=costs.get("score_mod", 0), mask_mod=costs.get("mask_mod", 0)
    )
    return flops, " ".join(gaps) or None


def _flex_backward(counter: Counter, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, str | None]:
    """``flex_attention_backward(query, key, value, out, logsumexp, grad_out, grad_logsumexp, fw_graph,
    joint_graph, block_mask, scale, kernel_options, score_mod_other_buffers, mask_mod_other_buffers)``.

    The joint graph takes ``(score, b, h, q_idx, kv_idx, grad, *score_mod_other_buffers)``.
    """
    query, key, value = args[:3]
    shapes = flex.flex_shapes(query, key, value)
    block_mask = arg(args, kwargs, 9, "block_mask")
    work = flex.block_work(block_mask, shapes)
    score_buffers = tuple(arg(args, kwargs, 12, "score_mod_other_buffers", ()) or ())
    mask_buffers = tuple(arg(args, kwargs, 13, "mask_mod_other_buffers", ()) or ())
    joint = arg(args, kwargs, 8, "joint_graph")
    gaps: list[str] = []
    if joint is None and work.pairs:
        gaps.append(
            "joint_graph was not given (PyTorch derives it inside the call): the score_mod gradient "
            "is not counted."
        )
    grad = _tile(query, shapes, block_mask)[0] if work.pairs else None  # one incoming gradient per pair
    mods: tuple[Mod, ...] = (
        ("score_mod", arg(args, kwargs, 7, "fw_graph"), score_buffers, False),
        ("joint_graph", joint, (grad, *score_buffers), False),
        ("mask_mod", block_mask[-1], mask_buffers, True),
    )
    costs, found = _mods(counter, query, shapes, block_mask, work, mods)
    flops = flex.backward_flops(
        shapes,
        work,
        score_mod=costs.get("score_mod", 0),
        joint=costs.get("joint_graph", 0),
        mask_mod=costs.get("mask_mod", 0),
    )
    return flops, " ".join(gaps + found) or None


FORMULAS: dict[str, Callable[[Counter, tuple[Any, ...], dict[str, Any]], tuple[int, str | None]]] = {
    "higher_order.flex_attention": _flex_forward,
    "higher_order.flex_attention_backward": _flex_backward,
}
"""HOPs TorchScan counts itself (PyTorch's FlopCounterMode formulas for them are never used)."""


def count(
    counter: Counter, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> tuple[int, str | None] | None:
    """Count one call of HOP ``name``: ``None`` when it has no formula (the caller reports it uncounted).

    Otherwise ``(flops, gap)``: ``gap`` names work the count leaves out (a ``score_mod`` that could
    not be counted), making the call a lower bound. Raises :class:`UnsupportedOperatorFormula` when the
    formula cannot describe the call at all.
    """
    formula = FORMULAS.get(name)
    if formula is None:
        return None
    try:
        return formula(counter, args, dict(kwargs))
    except UnsupportedOperatorFormula:
        raise
    except (IndexError, TypeError, ValueError, RuntimeError) as error:  # an argument layout we do not know
        raise UnsupportedOperatorFormula(
            f"{name} was called with arguments its formula does not recognise ({error_text(error)})."
        ) from error
