"""What an overload's schema says about it: aliases, metadata-only calls, functional siblings.

:func:`~torchscan.analysis.dispatch.resolution.classify_overload` reads these before any formula:
a view that returns an alias of its input and writes nothing moves no data, an overload without a
tensor operand does no tensor work, an ``out=`` or in-place variant takes its functional sibling's
formula, a unary ``_foreach_`` list op its element op's. Pure functions of PyTorch's schemas; nothing
here holds state.
"""

from __future__ import annotations

from typing import Any

import torch

from torchscan.formulas import operators

_SELECTION_TAGS = (torch.Tag.dynamic_output_shape, torch.Tag.data_dependent_output)


def returns_alias(schema: Any) -> bool:
    """Whether a schema returns an alias of an input and writes nothing (``Tensor(a)``, no ``!``)."""
    if any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
        return False
    returns = schema.returns
    return bool(returns) and all(r.alias_info is not None and not r.alias_info.is_write for r in returns)


def metadata_reason(func: Any) -> str | None:
    """The reason PyTorch's own metadata makes an unlisted overload zero-FLOP, or ``None``.

    families.md 1 steps 2-3, read from the overload alone (no call): ``torch.Tag.inplace_view``,
    an alias-returning schema that writes nothing, or a complex/conjugate view -> metadata only;
    ``torch.Tag.view_copy`` (a view written to a new tensor) -> data movement;
    a ``dynamic_output_shape``/``data_dependent_output`` tag on an overload that is neither pointwise
    nor known arithmetic (``bincount``) -> indexing and selection. Applies only after formulas and
    the name tables: an overload with a formula is never ignored by this rule.
    """
    tags = getattr(func, "tags", ())
    if torch.Tag.inplace_view in tags or str(func.overloadpacket) in operators.COMPLEX_VIEWS:
        return operators.METADATA_REASON
    if torch.Tag.view_copy in tags:  # view_copy, permute_copy, t_copy...: a view materialized
        return operators.MOVE_REASON
    schema = getattr(func, "_schema", None)
    if schema is not None and returns_alias(schema):
        return operators.METADATA_REASON
    if (
        any(tag in tags for tag in _SELECTION_TAGS)
        and torch.Tag.pointwise not in tags
        and str(func.overloadpacket) not in operators.ARITHMETIC_DATA_DEPENDENT
    ):
        return operators.INDEXING_REASON
    return None


def _has_tensor(types: Any) -> bool:
    return any("Tensor" in str(item.type) for item in types)


def tensor_free(schema: Any) -> bool:
    """Whether a schema takes no tensor and returns none: Python-number or symbolic-size arithmetic."""
    return not _has_tensor(schema.arguments) and not _has_tensor(schema.returns)


def _signature(arguments: Any) -> list[tuple[str, str]]:
    return [(a.name, str(a.type)) for a in arguments]


def functional_sibling(func: Any) -> Any | None:
    """The functional overload an ``out=`` (``torch.Tag.out``) or in-place (``torch.Tag.inplace``)
    overload computes into a buffer, or ``None``.

    ``out=``: the overload of the same packet whose schema equals this one without the out arguments
    (``add.out`` -> ``add.Tensor``, ``__lshift__.Scalar_out`` -> ``__lshift__.Scalar``). In-place: the
    overload of the same name in the packet without the trailing underscore (``addmm_.default`` ->
    ``addmm.default``, ``xlogy_.Scalar_Other`` -> ``xlogy.Scalar_Other``) whose arguments match. Both do
    the functional overload's arithmetic on the same operands; only where the result lands differs.
    """
    tags = getattr(func, "tags", ())
    schema = getattr(func, "_schema", None)
    if schema is None:
        return None
    if torch.Tag.out in tags or any(a.is_out for a in schema.arguments):
        packet = func.overloadpacket
        wanted = _signature(a for a in schema.arguments if not a.is_out)
        overload = func._overloadname
        preferred = overload[: -len("_out")] if overload.endswith("_out") else "default"
        names = [preferred] + [name for name in packet.overloads() if name != preferred]
    elif torch.Tag.inplace in tags and func._schema.name.endswith("_"):
        packet = getattr(torch.ops.aten, str(func.overloadpacket).removeprefix("aten.")[:-1], None)
        if not isinstance(packet, torch._ops.OpOverloadPacket) or not str(func.overloadpacket).startswith(
            "aten."
        ):
            return None
        wanted = _signature(schema.arguments)
        names = [func._overloadname]
    else:
        return None
    for name in names:
        candidate = getattr(packet, name, None) if name in packet.overloads() else None
        if candidate is None or candidate is func:
            continue
        arguments = candidate._schema.arguments
        if not any(a.is_out for a in arguments) and _signature(arguments) == wanted:
            return candidate
    return None


def foreach_base(func: Any) -> Any | None:
    """The per-tensor overload a unary ``_foreach_<op>`` list operator applies, or ``None``.

    ``_foreach_sin(tensors)`` (and ``_foreach_sin_``, ``_foreach_sin.out``) is ``sin`` of each tensor:
    an overload of an ``aten._foreach_*`` packet whose only non-out argument is one ``Tensor[]`` (and
    at most a ``memory_format``) is counted as ``aten.<op>.default`` applied to every tensor.
    """
    name = str(func.overloadpacket)
    schema = getattr(func, "_schema", None)
    if not name.startswith("aten._foreach_") or schema is None:
        return None
    inputs = [a for a in schema.arguments if not a.is_out]
    # one Tensor[] and nothing else but keyword-only layout options (_foreach_clone's memory_format)
    if not inputs or str(inputs[0].type) != "List[Tensor]":
        return None
    if any(not (a.kwarg_only and a.name == "memory_format") for a in inputs[1:]):
        return None
    packet = getattr(torch.ops.aten, name.removeprefix("aten._foreach_").removesuffix("_"), None)
    if not isinstance(packet, torch._ops.OpOverloadPacket) or "default" not in packet.overloads():
        return None
    return packet.default
