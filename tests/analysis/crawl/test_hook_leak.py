"""Issue #11 (2): analyses leave PyTorch's process-global hook tables exactly as they found them."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.modules import module as module_globals

from torchscan import crawl_module
from torchscan.measure.flops import measure_flops


def _global_hook_tables() -> dict[str, object]:
    """A snapshot of every ``_global_*`` table of ``torch.nn.modules.module`` (dicts copied)."""
    snapshot: dict[str, object] = {}
    for name in dir(module_globals):
        if name.startswith("_global_"):
            value = getattr(module_globals, name)
            snapshot[name] = dict(value) if isinstance(value, dict) else value
    return snapshot


def test_a_thousand_analyses_leave_every_global_hook_table_unchanged():
    # PyTorch's handle of a with_kwargs global forward hook never removed its entry of
    # _global_forward_hooks_with_kwargs: 1,000 analyses used to leave 1,000 stale entries.
    model = nn.Linear(2, 2)
    before = _global_hook_tables()
    assert "_global_forward_hooks_with_kwargs" in before  # the table this test is about exists
    for _ in range(1000):
        crawl_module(model, (2,), mode="structure")
    assert _global_hook_tables() == before


def test_full_mode_and_operator_counting_leave_the_tables_unchanged():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    before = _global_hook_tables()
    for _ in range(20):
        crawl_module(model, (2,))
        measure_flops(lambda: model(torch.ones(1, 2)))
    assert _global_hook_tables() == before


def test_the_tables_are_unchanged_after_a_forward_that_raises():
    class Broken(nn.Module):
        def forward(self, x):
            raise KeyError("boom")

    before = _global_hook_tables()
    for _ in range(5):
        try:
            crawl_module(Broken(), (2,))
        except KeyError:
            pass
        else:  # pragma: no cover - the forward always raises
            raise AssertionError("the forward's KeyError must propagate")
    assert _global_hook_tables() == before
