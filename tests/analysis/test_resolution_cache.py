"""Per-overload decisions are remembered across analyses only while the registries stay the same."""

from __future__ import annotations

import torch

from torchscan.analysis import operator_resolution as resolution
from torchscan.analysis.operator_kinds import CUSTOM, NATIVE, SUPPLEMENTAL

SIN = torch.ops.aten.sin.default


def _five(*args: object, **kwargs: object) -> int:
    return 5


def test_a_formula_registered_later_is_used() -> None:
    registry = dict(resolution.native_registry())
    registry.pop(torch.ops.aten.sin, None)
    assert resolution.resolve(SIN, {}, registry).kind == SUPPLEMENTAL
    assert resolution.resolve(SIN, {}, registry).kind == SUPPLEMENTAL  # remembered
    registry[torch.ops.aten.sin] = _five
    entry = resolution.resolve(SIN, {}, registry)
    assert entry.kind == NATIVE
    assert entry.formula is not None and entry.formula(torch.ones(2), out_val=torch.ones(2)) == 5


def test_caller_mapping_is_never_remembered() -> None:
    registry = resolution.native_registry()
    custom = {torch.ops.aten.sin: resolution.wrap_caller_formula(_five)}
    assert resolution.resolve(SIN, custom, registry).kind == CUSTOM
    assert resolution.resolve(SIN, {}, registry).kind != CUSTOM


def test_each_resolution_is_a_fresh_entry() -> None:
    registry = resolution.native_registry()
    first = resolution.resolve(torch.ops.aten.mm.default, {}, registry)
    first.checked = True
    second = resolution.resolve(torch.ops.aten.mm.default, {}, registry)
    assert second is not first and second.checked is False  # the equivalence check is per analysis
