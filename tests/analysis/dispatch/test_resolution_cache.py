"""Per-overload decisions are remembered across analyses only while the registries stay the same."""

from __future__ import annotations

import torch

from torchscan.analysis.dispatch import resolution
from torchscan.analysis.dispatch.kinds import CUSTOM, INHERITED, SUPPLEMENTAL, UNCOUNTED

SIN = torch.ops.aten.sin.default
# an operator TorchScan never classified (no formula, no table, no tag): uncounted on every tested torch
UNCLASSIFIED = torch.ops.aten.linalg_householder_product.default


def _five(*args: object, **kwargs: object) -> int:
    return 5


def test_a_formula_registered_later_is_used_only_where_torchscan_has_none() -> None:
    registry = dict(resolution.native_registry())
    registry.pop(torch.ops.aten.linalg_householder_product, None)
    assert resolution.resolve(UNCLASSIFIED, {}, registry).kind == UNCOUNTED
    assert resolution.resolve(UNCLASSIFIED, {}, registry).kind == UNCOUNTED  # remembered
    registry[torch.ops.aten.linalg_householder_product] = _five
    entry = resolution.resolve(UNCLASSIFIED, {}, registry)
    assert entry.kind == INHERITED and entry.verified is False  # not PyTorch's, never checked
    assert entry.formula is not None and entry.formula(torch.ones(2), out_val=torch.ones(2)) == 5
    # torch-versions.md 1: a formula registered for an operator TorchScan counts never replaces its own
    registry[torch.ops.aten.sin] = _five
    assert resolution.resolve(SIN, {}, registry).kind == SUPPLEMENTAL


def test_caller_mapping_is_never_remembered() -> None:
    registry = resolution.native_registry()
    custom = {torch.ops.aten.sin: resolution.wrap_caller_formula(_five)}
    assert resolution.resolve(SIN, custom, registry).kind == CUSTOM
    assert resolution.resolve(SIN, {}, registry).kind != CUSTOM


def test_each_resolution_is_a_fresh_entry() -> None:
    registry = resolution.native_registry()
    first = resolution.resolve(torch.ops.aten.mm.default, {}, registry)
    first.bytes_rule = object()
    second = resolution.resolve(torch.ops.aten.mm.default, {}, registry)
    assert second is not first and second.bytes_rule is None  # per-analysis state is never shared
