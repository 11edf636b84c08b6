"""Reference checks of accumulating ``index_put`` (truth.md 6, real-models.md 2.1).

``index_put(self, indices, values, accumulate=True)`` adds every value into the element it indexes:
one addition per written element. The reference is a closed form (b) whose element count comes from
PyTorch's own indexing, not from a formula: the written elements are exactly those of
``self[indices]`` (a ``None`` entry is the full slice ``:``), so ``self[...].numel()`` is the
expected count. A plain write (``accumulate=False``) moves data and is ignored (complete 0).
Cases cover ``None`` entries anywhere (the backward of ``bias[:, idx]`` in attention-bias tables),
adjacent and separated index tensors, broadcasting index shapes and values, trailing dimensions,
the in-place and unchecked kernels, and the autograd backward of advanced indexing. The other
accumulating writes (``scatter_add``, ``scatter`` with ``reduce``, ``scatter_reduce``, ``index_add``)
are checked beside them against the index and source sizes.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch

from reference.harness import cases, library_count, seeded

aten = torch.ops.aten  # the operator takes None entries, which torch.index_put's binding refuses


def random_indices(rng: random.Random, shape: tuple[int, ...]) -> list[torch.Tensor | None]:
    """An index list of length 1..rank: ``None`` entries and integer tensors of broadcastable shapes
    (at least one tensor)."""
    length = rng.randint(1, len(shape))
    generator = seeded(rng)
    base = tuple(rng.randint(1, 3) for _ in range(rng.randint(1, 2)))
    entries: list[torch.Tensor | None] = []
    for axis in range(length):
        if rng.random() < 0.45:
            entries.append(None)
            continue
        index_shape = tuple(
            1 if rng.random() < 0.3 else size for size in base[rng.randint(0, len(base) - 1) :]
        )
        entries.append(torch.randint(0, shape[axis], index_shape, generator=generator))
    if all(entry is None for entry in entries):
        axis = rng.randrange(length)
        entries[axis] = torch.randint(0, shape[axis], base, generator=generator)
    return entries


def as_key(indices: list[torch.Tensor | None]) -> tuple[Any, ...]:
    """The Python indexing key of an ``index_put`` index list (``None`` is the full slice)."""
    return tuple(slice(None) if entry is None else entry for entry in indices)


@pytest.mark.parametrize(("seed", "rng"), cases("index_put"))
def test_accumulating_index_put_adds_once_per_written_element(seed: int, rng: random.Random) -> None:
    shape = tuple(rng.randint(1, 5) for _ in range(rng.randint(1, 4)))
    target = torch.rand(shape, generator=seeded(rng))
    indices = random_indices(rng, shape)
    written = target[as_key(indices)]  # PyTorch's own advanced indexing decides which elements
    expected = written.numel()
    values_shape = tuple(written.shape)[rng.randint(0, written.dim()) :]  # values broadcast
    values = torch.rand(values_shape, generator=seeded(rng))
    route = rng.choice(["index_put", "index_put_", "unsafe", "autograd", "plain"])
    if route == "index_put":
        counted = library_count(lambda: aten.index_put(target, indices, values, True))
    elif route == "index_put_":
        counted = library_count(lambda: aten.index_put_(target.clone(), indices, values, True))
    elif route == "unsafe":
        counted = library_count(lambda: aten._unsafe_index_put(target, indices, values, True))
    elif route == "autograd":
        # the backward of target[key] accumulates the output gradient into zeros with index_put
        leaf = target.clone().requires_grad_()
        gradient = torch.rand(written.shape, generator=seeded(rng))
        counted = library_count(lambda: leaf[as_key(indices)].backward(gradient))
    else:  # a plain write is indexing: ignored, whatever its indices
        report = library_count(lambda: aten.index_put(target, indices, values))
        assert (report.status, report.total, report.operator("aten.index_put")) == ("complete", 0, 0)
        return
    assert counted.status == "complete", counted.diagnostics
    operator = {"index_put_": "aten.index_put_", "unsafe": "aten._unsafe_index_put"}.get(
        route, "aten.index_put"
    )
    assert counted.operator(operator) == expected
    assert counted.total == expected  # nothing else in these workloads does arithmetic


def test_attention_bias_table_backward() -> None:
    # EfficientFormer/EfficientViT: bias (heads 4, offsets 10) gathered by a (6, 6) index table; the
    # backward scatters the (4, 6, 6) gradient back with index_put([None, idx], accumulate=True):
    # 144 additions. Forward: the gather is indexing, the sum adds 144 − 1 = 143 values.
    bias = torch.rand(4, 10, requires_grad=True)
    table = torch.randint(0, 10, (6, 6), generator=torch.Generator().manual_seed(0))
    counted = library_count(lambda: bias[:, table].sum().backward())
    assert (counted.status, counted.total) == ("complete", 144 + 143)
    assert counted.by_operator == {"aten.index_put": 144, "aten.sum": 143}


def test_boolean_masks_stay_unsupported() -> None:
    target, mask = torch.zeros(4), torch.tensor([True, False, True, True])
    counted = library_count(lambda: torch.index_put(target, [mask], torch.ones(3), accumulate=True))
    assert counted.status == "partial" and counted.total == 0
    assert counted.diagnostics[0]["code"] == "unsupported_operator_formula"


@pytest.mark.parametrize(("seed", "rng"), cases("scatter_accumulate", 100))
def test_accumulating_scatters_combine_once_per_scattered_value(seed: int, rng: random.Random) -> None:
    """``scatter_add``/``scatter(reduce=...)``/``scatter_reduce`` combine one value per ``index`` element
    into ``self`` (``mean`` then divides each output element once); ``index_add`` adds every ``source``
    element (one multiply more each when ``alpha ≠ 1`` scales it). Closed forms (b) over the index and
    source sizes PyTorch is given; the workload runs the real kernel."""
    shape = tuple(rng.randint(1, 5) for _ in range(rng.randint(1, 3)))
    dim = rng.randrange(len(shape))
    generator = seeded(rng)
    target = torch.rand(shape, generator=generator)
    index_shape = tuple(rng.randint(1, size) for size in shape)
    index = torch.randint(0, shape[dim], index_shape, generator=generator)
    source = torch.rand(index_shape, generator=generator)
    kind = rng.choice(["scatter_add", "scatter_reduce", "scatter_reduce_mean", "scatter_value", "index_add"])
    if kind == "scatter_add":
        counted, expected = library_count(lambda: target.scatter_add(dim, index, source)), index.numel()
    elif kind == "scatter_reduce":
        reduce = rng.choice(["sum", "prod", "amax", "amin"])
        include = rng.random() < 0.5
        counted = library_count(
            lambda: target.scatter_reduce(dim, index, source, reduce, include_self=include)
        )
        expected = index.numel()
    elif kind == "scatter_reduce_mean":
        counted = library_count(lambda: target.scatter_reduce(dim, index, source, "mean"))
        expected = index.numel() + target.numel()
    elif kind == "scatter_value":
        reduce = rng.choice(["add", "multiply"])
        counted, expected = (
            library_count(lambda: target.scatter(dim, index, 0.5, reduce=reduce)),
            index.numel(),
        )
    else:
        rows = torch.randint(0, shape[dim], (rng.randint(1, 6),), generator=generator)
        source_shape = list(shape)
        source_shape[dim] = rows.numel()
        added = torch.rand(source_shape, generator=generator)
        alpha = rng.choice([1, 2.0])
        counted = library_count(lambda: target.index_add(dim, rows, added, alpha=alpha))
        expected = added.numel() * (1 if alpha == 1 else 2)
    assert (counted.status, counted.total) == ("complete", expected), kind
