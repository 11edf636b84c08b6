"""Module-formula families (formulas.md Part A); importing this package fills the registries.

Each family module registers its formulas on import; keep this a plain list of imports.
"""

# ruff: noqa: F401
from torchscan.formulas import activation, conv, dropout, layout, linear, norm, pooling, recurrent, softmax
