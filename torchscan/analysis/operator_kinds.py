"""Resolution kinds of one operator packet, as plain ints shared by every counting module.

``operator_resolution`` assigns them, ``dispatch`` and the DTensor tally of ``distributed`` branch on
them. They live here, below all three, so that ``distributed`` can count a DTensor call at global
shapes without importing ``operator_resolution`` (which imports ``distributed``).
COMMUNICATION: collectives, tallied as bytes by ``distributed`` (distributed.md 3), never FLOP gaps.
HIGHER_ORDER: a higher-order operator (``cond``, ``flex_attention``...), handled by
``analysis/higher_order.py``.
"""

CUSTOM, NATIVE, SUPPLEMENTAL, IGNORED, UNCOUNTED, DECOMPOSED, COMMUNICATION, HIGHER_ORDER = range(8)
