"""The test-only counting engine of the operator formula tests (formulas.md B.2, B.6–B.9).

Every hand number of ``test_operator_*.py`` is checked by really dispatching the workload through
the small ``TorchDispatchMode`` below, which applies the precedence of torch-versions.md 1
(TorchScan's own formula, else the ignored table, else PyTorch's formula, else "uncounted"). The
engine's own concerns (diagnostics, sparse/nested guard, module attribution) are not modelled here.
Reasons and the closed form shared by several of those files are spelled here once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from torchscan.formulas.operators import IGNORED_OPERATORS, UnsupportedOperatorFormula, supplemental_formula

COMPLEX = "Supplemental FLOP formulas cover real arithmetic only."
INTERPOLATION = "Interpolation FLOPs require floating inputs."

# Fused MultiheadAttention, B = 2, L = 3, E = 4, H = 2 (formulas.md B.9): rows = 12, scores = 36
#   projections 8·2·3·16 = 768, query scale 2·3·4 = 24, products 4·2·9·4 = 288, softmax 5·36 − 24 = 156
MHA_BASE = 768 + 24 + 288 + 156  # 1,236


@dataclass
class Tally:
    """What the test mode observed: counted sums, ignored/uncounted calls, unsupported reasons."""

    by_operator: Counter[str] = field(default_factory=Counter)
    ignored: Counter[str] = field(default_factory=Counter)
    uncounted: Counter[str] = field(default_factory=Counter)
    unsupported: dict[str, set[str]] = field(default_factory=dict)
    calls: list[tuple[str, tuple, dict, object]] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Sum of every counted operator."""
        return sum(self.by_operator.values())

    @property
    def complete(self) -> bool:
        """Nothing went uncounted or unsupported."""
        return not self.uncounted and not self.unsupported


class CountingMode(TorchDispatchMode):
    """TorchScan's formula first (torch-versions.md 1), then the ignored table, then PyTorch's."""

    def __init__(self) -> None:
        super().__init__()
        self.tally = Tally()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        packet, name = func.overloadpacket, str(func.overloadpacket)
        self.tally.calls.append((name, args, kwargs, out))
        if (formula := supplemental_formula(name)) is not None:
            try:
                value = formula(args, kwargs, out)
            except UnsupportedOperatorFormula as exc:
                self.tally.unsupported.setdefault(name, set()).add(str(exc))
                value = 0
            assert type(value) is int, f"{name} returned {type(value).__name__}"
            self.tally.by_operator[name] += value
        elif name in IGNORED_OPERATORS:
            self.tally.ignored[name] += 1
        elif packet in flop_registry:
            self.tally.by_operator[name] += flop_registry[packet](*args, **kwargs, out_val=out)
        else:
            self.tally.uncounted[name] += 1
        return out


def count(workload: Callable[[], object]) -> Tally:
    """Run ``workload`` once under :class:`CountingMode`."""
    mode = CountingMode()
    with mode:
        workload()
    return mode.tally


def module_call(factory: Callable[[], nn.Module], *shape: int, dtype: torch.dtype = torch.float32):
    """Workload calling a fresh evaluation-mode module on ``ones(shape)`` built outside the counter."""
    module, inputs = factory().eval(), torch.ones(*shape, dtype=dtype)
    return lambda: module(inputs)


@dataclass(frozen=True)
class Case:
    """One dispatched workload with its hand-derived expectations."""

    workload: Callable[[], object]
    total: int
    by_operator: dict[str, int] | None = None
    uncounted: tuple[str, ...] = ()
    unsupported: dict[str, str] = field(default_factory=dict)
    ignored: dict[str, int] | None = None


def check(case: Case) -> Tally:
    """Count ``case.workload`` and assert every expectation the case states."""
    tally = count(case.workload)
    assert tally.total == case.total
    if case.by_operator is not None:
        assert dict(tally.by_operator) == case.by_operator
    assert sorted(tally.uncounted) == sorted(case.uncounted)
    assert {op: reasons for op, reasons in tally.unsupported.items()} == {
        op: {reason} for op, reason in case.unsupported.items()
    }
    if case.ignored is not None:
        assert dict(tally.ignored) == case.ignored
    return tally
