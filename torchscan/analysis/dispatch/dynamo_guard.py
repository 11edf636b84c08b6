"""Dispatching to a mode's own ``__torch_dispatch__`` while ``torch._dynamo`` is not loaded.

PyTorch wraps every ``TorchDispatchMode.__torch_dispatch__`` in ``torch._dynamo.disable`` so that a
compiled region never traces the mode. The wrapper imports ``torch._dynamo`` on the first operator
(about 0.6 s, once per process) and costs about 0.4 µs per operator. While no code of the process has
loaded Dynamo nothing can be compiling, so :func:`unguard` binds the unwrapped method on the mode
instance (an instance attribute is looked up before the class's method). A mode that does so checks
``DYNAMO in MODULES`` at the top of its ``__torch_dispatch__`` and calls :func:`guard` once it is true
(``torch.compile`` called inside the workload): the following operators go through the guard again.
"""

from __future__ import annotations

import sys
from types import MethodType
from typing import Any

MODULES = sys.modules
DYNAMO = "torch._dynamo"


def unguard(mode: Any) -> bool:
    """Bind ``mode``'s unwrapped ``__torch_dispatch__`` on it if Dynamo is absent; whether it was bound."""
    raw = getattr(type(mode).__torch_dispatch__, "__wrapped__", None)
    if raw is None or DYNAMO in MODULES:
        return False
    mode.__dict__["__torch_dispatch__"] = MethodType(raw, mode)
    return True


def guard(mode: Any) -> bool:
    """Let ``mode`` dispatch through the class's guarded method again (drops the bound-method cycle).

    Returns False: the mode's new "unguarded" state.
    """
    mode.__dict__.pop("__torch_dispatch__", None)
    return False
