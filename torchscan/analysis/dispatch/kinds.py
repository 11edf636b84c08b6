"""Resolution kinds of one operator packet, as plain ints shared by every counting module.

``operator_resolution`` assigns them, ``dispatch`` and the DTensor tally of ``distributed`` branch on
them. They live here, below all three, so that ``distributed`` can count a DTensor call at global
shapes without importing ``operator_resolution`` (which imports ``distributed``).
SUPPLEMENTAL: one of TorchScan's own ``torchscan_flops_v1`` formulas (the table in
``formulas/operator_registry.py``; the name is historical: they once only supplemented PyTorch's).
INHERITED: a formula from PyTorch's ``FlopCounterMode`` registry, used only for an operator TorchScan
has no formula or classification for (torch-versions.md 1).
COMMUNICATION: collectives, tallied as bytes by ``distributed`` (distributed.md 3), never FLOP gaps.
HIGHER_ORDER: a higher-order operator (``cond``, ``flex_attention``...), handled by
``analysis/dispatch/higher_order.py``.
"""

CUSTOM, INHERITED, SUPPLEMENTAL, IGNORED, UNCOUNTED, DECOMPOSED, COMMUNICATION, HIGHER_ORDER = range(8)
