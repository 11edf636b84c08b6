"""Shared machinery of the reference suite (truth.md 1 and 5).

A reference is either

(a) a re-implementation of the operator from matrix products and element-wise operations, run
    forward (and through autograd) under :class:`TrivialCounter`, whose counts are trivial closed
    forms written here from shapes alone — nothing in it reads a TorchScan or FlopCounterMode
    formula; or
(b) a closed form derived in the test itself, with the derivation in a comment.

Cases are randomised with fixed seeds: :func:`cases` yields ``REFERENCE_CASES`` (default 200)
independent ``random.Random`` generators per family, so a failure names its seed and replays alone.
A larger run: ``TORCHSCAN_REFERENCE_CASES=2000 python -m pytest tests/formulas/reference``.
"""

from __future__ import annotations

import math
import os
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torchscan.measure.flops import measure_flops

REFERENCE_CASES = int(os.environ.get("TORCHSCAN_REFERENCE_CASES", "200"))
"""Randomised cases per family: 200 by default (CI), more through the environment variable."""


def cases(family: str, count: int | None = None) -> list[tuple[int, random.Random]]:
    """``count`` (default :data:`REFERENCE_CASES`) ``(seed, rng)`` pairs, fixed per ``family``.

    Use as ``@pytest.mark.parametrize("seed, rng", cases("conv2d"))``; each seed is derived from the
    family name, so adding a family never changes another family's cases.
    """
    base = sum(ord(c) * 131**i for i, c in enumerate(family)) % 1_000_003
    total = REFERENCE_CASES if count is None else count
    return [(base * 10_000 + i, random.Random(base * 10_000 + i)) for i in range(total)]


def seeded(rng: random.Random) -> torch.Generator:
    """A ``torch.Generator`` seeded from ``rng``, for tensors that must not touch the global RNG."""
    return torch.Generator().manual_seed(rng.randrange(2**31))


def _matmul_macs(name: str, args: tuple[Any, ...]) -> int | None:
    """Multiply-accumulates of a matrix product from its operand shapes, or None for other ops."""
    if name in ("aten.mm", "aten.bmm", "aten.matmul", "aten.dot", "aten.mv"):
        a, b = args[0], args[1]
    elif name in ("aten.addmm", "aten.baddbmm", "aten.addbmm"):
        a, b = args[1], args[2]
    else:
        return None
    if name == "aten.dot":
        return a.shape[0]
    if name == "aten.mv":
        return a.shape[0] * a.shape[1]
    if a.dim() == 2 and b.dim() == 2:
        return a.shape[0] * a.shape[1] * b.shape[1]
    if a.dim() == 3 and b.dim() == 3:
        return a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
    raise AssertionError(f"reference counter: unexpected {name} operand ranks {a.dim()}, {b.dim()}")


@dataclass
class TrivialCounter(TorchDispatchMode):
    """Counts what a reference implementation executes, from shapes only.

    * ``products``: ``2 · MACs`` of every matrix product (``mm``, ``bmm``, ``addmm``, ``baddbmm``,
      ``addbmm``, ``dot``, ``mv``; the fused bias of ``addmm``/``baddbmm`` is not included — a
      reference that needs it adds it as a separate element-wise op); complex operands count 4 real
      MACs per complex MAC (``4 · 2 · MACs``).
    * ``elementwise``: output elements of every other operator, by operator packet name, so a test
      applies the documented per-element convention itself (``elementwise["aten.add"]`` etc.).
    * ``calls``: every operator packet name seen, in order.
    """

    products: int = 0
    elementwise: Counter[str] = field(default_factory=Counter)
    calls: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = str(func.overloadpacket)
        self.calls.append(name)
        macs = _matmul_macs(name, args)
        if macs is not None:
            complex_operands = any(isinstance(t, torch.Tensor) and t.is_complex() for t in args)
            self.products += 2 * macs * (4 if complex_operands else 1)
        elif isinstance(out, torch.Tensor):
            self.elementwise[name] += out.numel()
        return out

    def __hash__(self) -> int:  # TorchDispatchMode instances are kept in sets by PyTorch
        return id(self)


def trivial_count(workload: Callable[[], object]) -> TrivialCounter:
    """Run ``workload`` once under a fresh :class:`TrivialCounter` and return it."""
    counter = TrivialCounter()
    with counter:
        workload()
    return counter


@dataclass(frozen=True)
class Library:
    """What TorchScan's ``measure_flops`` reported for one workload (the number under test)."""

    total: int
    status: str
    by_operator: dict[str, int]
    by_phase: dict[str, Any]
    diagnostics: list[dict[str, Any]]

    def operator(self, name: str) -> int:
        """FLOPs of one operator packet (0 when absent)."""
        return self.by_operator.get(name, 0)


def library_count(workload: Callable[[], object]) -> Library:
    """Run ``workload`` once under ``torchscan.measure_flops`` and keep what the tests compare."""
    report = measure_flops(workload)
    total = report["total"]
    value = total["value"] if total["status"] == "complete" else total.get("known_value", 0)
    return Library(
        int(value or 0),
        total["status"],
        dict(report["by_operator"]),
        dict(report["by_phase"]),
        list(report["diagnostics"]),
    )


def prod(values: Any) -> int:
    """``math.prod`` of ints (sizes), as a plain ``int``."""
    return int(math.prod(int(v) for v in values))


def iter_grid(*axes: list[Any]) -> Iterator[tuple[Any, ...]]:
    """Every combination of the given option lists (a small deterministic grid beside random cases)."""
    if not axes:
        yield ()
        return
    for head in axes[0]:
        for rest in iter_grid(*axes[1:]):
            yield (head, *rest)
