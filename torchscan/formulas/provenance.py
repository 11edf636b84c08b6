"""Where each operator formula's trust comes from, and the formulas found wrong (truth.md 1).

A formula is trusted because the reference suite (``tests/formulas/reference/``) checked it, never
because a peer uses it. This table records, per operator packet name, why TorchScan's formula differs
from the one it replaced — an inherited ``FlopCounterMode`` formula it overrides, or an earlier
TorchScan formula found wrong — with the upstream issue where one exists. The operator coverage table
(``benchmarks/operator_coverage.py`` -> docs/operator-coverage.md) prints it. Plain data: nothing here
imports torch or runs a formula.
"""

from __future__ import annotations

CORRECTIONS: dict[str, str] = {}
"""Operator packet name (``"aten.convolution_backward"``) -> one or two sentences: what the replaced
formula counted, what the reference showed, what TorchScan counts now (and the upstream issue)."""
