"""Direct equivalents of PyTorch's native FLOP formulas for the hottest operators (formulas.md B.2).

PyTorch's registered formulas receive shapes through ``shape_wrapper``, whose ``tree_map`` runs on
every call — twice for ``addmm`` and ``baddbmm``, whose formulas call the wrapped ``mm``/``bmm``
formula — and costs far more than the arithmetic. These equivalents read the operand shapes of the
call that already ran (so its shapes are consistent) and return the same count: 2 FLOPs per
multiply-accumulate, fused bias and alpha/beta scaling omitted, any dtype.

They never replace a native formula blindly: the operator observer uses one only while the packet's
registered formula is PyTorch's own, and only after the first call of each overload gave the same
number both ways (``analysis/operator_resolution.py``). Each takes the call's positional arguments
and its output and returns an ``int``; a call whose arguments do not have the expected form raises,
and the observer falls back to PyTorch's formula.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any


def mm(args: Sequence[Any], out: Any) -> int:
    """``mm(a[m,k], b[k,n])``: ``2·m·k·n``."""
    m, k = args[0].shape
    return 2 * m * k * args[1].shape[1]


def addmm(args: Sequence[Any], out: Any) -> int:
    """``addmm(bias, a[m,k], b[k,n])``: the product only, ``2·m·k·n``."""
    m, k = args[1].shape
    return 2 * m * k * args[2].shape[1]


def bmm(args: Sequence[Any], out: Any) -> int:
    """``bmm(a[b,m,k], b[b,k,n])``: ``2·b·m·k·n``."""
    b, m, k = args[0].shape
    return 2 * b * m * k * args[1].shape[2]


def baddbmm(args: Sequence[Any], out: Any) -> int:
    """``baddbmm(bias, a[b,m,k], b[b,k,n])``: the batched product only, ``2·b·m·k·n``."""
    b, m, k = args[1].shape
    return 2 * b * m * k * args[2].shape[2]


def convolution(args: Sequence[Any], out: Any) -> int:
    """``convolution(x, w[c_out, c_in/groups, *kernel], bias, stride, padding, dilation, transposed, ...)``.

    ``2 · batch · prod(spatial) · prod(w.shape)``, where ``spatial`` is the output's spatial shape,
    or the input's for a transposed convolution.
    """
    x_shape, transposed = args[0].shape, args[6]
    if type(transposed) is not bool:
        raise TypeError("convolution's seventh argument is not the transposed flag")
    spatial = (x_shape if transposed else out.shape)[2:]
    return 2 * x_shape[0] * math.prod(spatial) * math.prod(args[1].shape)


# Operator packet name -> equivalent of PyTorch's formula for it.
EQUIVALENTS: dict[str, Callable[[Sequence[Any], Any], int]] = {
    "aten.mm": mm,
    "aten.addmm": addmm,
    "aten.bmm": bmm,
    "aten.baddbmm": baddbmm,
    "aten.convolution": convolution,
    "aten._convolution": convolution,
}
