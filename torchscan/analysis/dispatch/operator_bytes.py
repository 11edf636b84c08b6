"""Operator bytes and attention KV bytes of one operator call (generation.md 1).

``operator_bytes`` is operand traffic at the operator boundary: for one call, the bytes of every
tensor operand it reads plus every tensor output it writes, each sized as ``numel × element_size``
of the view the operator receives or returns (not of the underlying storage). Operators that only
describe or allocate memory (views, metadata queries, allocation: families.md 1 "metadata") move
no bytes. Everything else counts, including operators ignored for FLOPs (copies, indexing) and
uncounted ones. It is not DRAM traffic: caches, fusion and kernels that read an operand twice are
invisible at this boundary.

``attention_kv_bytes`` is the bytes of the key and value operands of the fused attention kernels
(:data:`ATTENTION_KERNELS`): with a standard KV cache, the cache a decode step reads.

A tensor whose elements cannot be sized from its view (sparse, nested, or a tensor subclass with
its own ``__torch_dispatch__``, whose logical dtype need not be its stored one) is left out and
makes the result partial; the caller names it in a diagnostic. Only the observer that counts
bytes calls into this module, so the FLOP-only path pays nothing for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from torchscan.analysis.dispatch.kinds import IGNORED
from torchscan.analysis.dispatch.overload_schema import returns_alias
from torchscan.analysis.dispatch.resolution import Entry
from torchscan.formulas import operators
from torchscan.formulas.tensors import SEQUENCES as _SEQUENCES

ZERO_BYTE_REASONS = frozenset({operators.VIEW_REASON, operators.METADATA_REASON, operators.ALLOCATE_REASON})
"""Ignored reasons whose operators move no element: views, metadata queries, allocation."""

ATTENTION_KERNELS = frozenset(
    f"aten.{name}"
    for name in (
        "scaled_dot_product_attention",  # only when seen undecomposed (custom formula, nested input)
        "_scaled_dot_product_flash_attention_for_cpu",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_fused_attention_overrideable",
        "_flash_attention_forward",
        "_efficient_attention_forward",
    )
) | {"higher_order.flex_attention"}  # a BlockMask tile skipped is still a key read here: a bound
"""Fused attention kernels whose ``key`` and ``value`` (arguments 1 and 2) are the KV bytes read."""

MATRIX_PRODUCTS = frozenset(
    f"aten.{name}" for name in ("mm", "bmm", "baddbmm", "addbmm", "addmm", "matmul", "einsum", "_grouped_mm")
)
"""Products through which attention can run unfused (eager ``matmul``/``einsum`` attention), beside a
softmax (:data:`SOFTMAX_KERNELS`). Work that ran neither a fused attention kernel nor one of these
is glue (sampling and stopping checks between decode steps): its KV bytes are a complete 0. Work
with products but no softmax ran no attention: ``not_applicable`` (truth.md 4), never
``attention_not_fused``."""

SOFTMAX_KERNELS = frozenset(
    f"aten.{name}" for name in ("_softmax", "softmax", "_safe_softmax", "_masked_softmax", "special_softmax")
)
"""The normalisation of attention scores. Unfused (eager) attention runs a matrix product, a softmax
and another product; work that ran products but no softmax (a plain MLP, a recurrent or state-space
scan such as Mamba's or RWKV's) read no attention keys and values: its KV bytes are not applicable."""

UNSIZED_REASON = (
    "A sparse, nested or subclass tensor operand cannot be sized from its view; its bytes are not counted."
)

_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_STRIDED = torch.strided
_PLAIN_DISPATCH = torch.Tensor.__torch_dispatch__


@dataclass(slots=True, frozen=True)
class ByteRule:
    """How the calls of one overload are sized, decided once per overload."""

    zero: bool  # moves no element (view, metadata, allocation)
    out_names: tuple[str, ...]  # ``out=`` arguments: written (sized as outputs), never read
    attention: bool  # a fused attention kernel: its key and value are KV bytes
    product: bool  # a matrix product: unfused attention may have run through it
    softmax: bool  # a softmax: with products, unfused attention may have run


def byte_rule(func: Any, entry: Entry) -> ByteRule:
    """The :class:`ByteRule` of one overload, from its FLOP resolution and its schema."""
    schema = getattr(func, "_schema", None)
    zero = entry.kind == IGNORED and (
        entry.reason in ZERO_BYTE_REASONS or (schema is not None and returns_alias(schema))
    )
    out_names = tuple(a.name for a in schema.arguments if a.is_out) if schema is not None else ()
    name = entry.name
    return ByteRule(
        zero, out_names, name in ATTENTION_KERNELS, name in MATRIX_PRODUCTS, name in SOFTMAX_KERNELS
    )


def tensor_bytes(tensor: torch.Tensor) -> int:
    """``numel × element_size`` of one dense view, or -1 when its elements cannot be sized."""
    cls = type(tensor)
    if cls is not _Tensor and cls is not _Parameter and cls.__torch_dispatch__ is not _PLAIN_DISPATCH:
        return -1  # a wrapper subclass: its dtype and shape need not describe what it stores
    if tensor.layout is not _STRIDED or tensor.is_nested:
        return -1
    try:
        return int(tensor.numel()) * tensor.element_size()
    except (RuntimeError, TypeError, ValueError):  # an unbacked symbolic size
        return -1


def _add_values(values: Any, total: list[int]) -> None:
    """Add the bytes of every tensor in ``values`` (and in its tensor lists) to ``[bytes, unsized]``."""
    for value in values:
        if isinstance(value, _Tensor):
            size = tensor_bytes(value)
            if size < 0:
                total[1] = 1
            else:
                total[0] += size
        elif isinstance(value, _SEQUENCES) and value and type(value[0]) is not int:
            _add_values(value, total)


def operand_bytes(
    args: tuple[Any, ...], kwargs: Any, out: Any, out_names: tuple[str, ...]
) -> tuple[int, bool]:
    """``(bytes, sized)`` of one call: operands read plus outputs written.

    ``sized`` is False when some tensor could not be sized (the bytes are then a lower bound). An
    ``out=`` argument is the output itself: it is counted once, as written. An in-place operator's
    destination is counted as read and as written (the kernel's contract, not its cache behaviour).
    """
    total = [0, 0]
    _add_values(args, total)
    if kwargs:
        if out_names:
            _add_values((v for k, v in kwargs.items() if k not in out_names), total)
        else:
            _add_values(kwargs.values(), total)
    if isinstance(out, _Tensor):
        size = tensor_bytes(out)
        if size < 0:
            total[1] = 1
        else:
            total[0] += size
    elif isinstance(out, _SEQUENCES):
        _add_values(out, total)
    return total[0], not total[1]


def kv_bytes(args: tuple[Any, ...], kwargs: Any) -> tuple[int, bool]:
    """``(bytes, sized)`` of the key and value operands of one fused attention call."""
    key = args[1] if len(args) > 1 else (kwargs or {}).get("key")
    value = args[2] if len(args) > 2 else (kwargs or {}).get("value")
    total = [0, 0]
    _add_values((key, value), total)
    return total[0], not total[1]


def input_tokens(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The size of the last dimension of the first integer tensor among ``args`` then ``kwargs``.

    Only the call's own arguments are looked at (not tensors nested in containers); a 0-dimensional
    integer tensor has no last dimension and is skipped. ``None`` when there is no such tensor.
    """
    for value in (*args, *kwargs.values()):
        if not isinstance(value, _Tensor) or value.dim() == 0:
            continue
        dtype = value.dtype
        if dtype.is_floating_point or dtype.is_complex or dtype is torch.bool:
            continue
        try:
            return int(value.shape[-1])
        except (RuntimeError, TypeError, ValueError):  # an unbacked symbolic size
            return None
    return None
