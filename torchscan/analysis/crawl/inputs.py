"""Generated inputs and value-free metadata (analysis.md 3 and 5.4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from torchscan.analysis.traversal import walk_modules
from torchscan.report.names import report_name
from torchscan.report.schema import ValueMeta

_SCALAR_TYPES = (bool, int, float, complex, str)
_MAX_ELEMENTS = 2**63 - 1  # PyTorch sizes and element counts are int64
_KEY_TYPES = (str, int, bool)


def qualified_name(cls: type) -> str:
    """``module.QualName`` of a class; used instead of ``repr`` so no object state leaks."""
    return report_name(f"{cls.__module__}.{cls.__qualname__}")


_DTYPE_NAMES: dict[torch.dtype, str] = {}
_DEVICE_NAMES: dict[torch.device, str] = {}


def dtype_name(dtype: torch.dtype) -> str:
    """``str(dtype)``, memoised: it runs for every tensor of every call."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype)
    return name


def device_name(device: torch.device) -> str:
    """``str(device)``, memoised."""
    name = _DEVICE_NAMES.get(device)
    if name is None:
        name = _DEVICE_NAMES[device] = str(device)
    return name


def describe(value: Any) -> ValueMeta:
    """Recursive metadata of ``value``: shapes, dtypes and types, never contents or ``repr``."""
    if isinstance(value, torch.Tensor):
        if value.is_nested:
            return {
                "kind": "nested_tensor",
                "dtype": dtype_name(value.dtype),
                "device": device_name(value.device),
                "requires_grad": value.requires_grad,
            }
        return {
            "kind": "tensor",
            "shape": list(value.shape),
            "dtype": dtype_name(value.dtype),
            "device": device_name(value.device),
            "requires_grad": value.requires_grad,
        }
    if value is None:
        return {"kind": "none"}
    if isinstance(value, torch.Size):
        # A size is shape metadata, not data: positional modules are called with one (families.md 3).
        return {"kind": "size", "shape": [int(d) for d in value]}
    if isinstance(value, _SCALAR_TYPES):
        return {"kind": "scalar", "type": report_name(type(value).__name__)}
    if isinstance(value, tuple | list):
        return {
            "kind": "tuple" if isinstance(value, tuple) else "list",
            "items": [describe(v) for v in value],
        }
    if isinstance(value, Mapping):
        items = []
        for key, item in value.items():
            entry: dict[str, Any] = {"key_type": report_name(type(key).__name__)}
            if isinstance(key, str) and not key.isidentifier():
                # A key such as "/private/model.pt" may be a path or a secret: only its length.
                entry = {"key": {"type": "str", "length": len(key)}, **entry}
            elif isinstance(key, _KEY_TYPES):
                entry = {"key": key, **entry}
            entry["value"] = describe(item)
            items.append(entry)
        return {"kind": "mapping", "type": report_name(type(value).__name__), "items": items}
    return {"kind": "object", "type": qualified_name(type(value))}


FAILED: ValueMeta = {"kind": "failed"}

# Tensors described from their metadata alone (a subclass may describe itself differently).
PLAIN_TENSORS = frozenset({torch.Tensor, torch.nn.Parameter})


def capture_meta(value: Any) -> Any:
    """What :func:`describe` needs of ``value``, kept while a forward is observed (issue #36).

    A plain tensor becomes the tuple ``(shape, dtype, device, requires_grad)``, read now and described
    when the report is built (:func:`described`); any other value is described now. Tuples never
    come out of :func:`describe`, so the two cannot be confused.
    """
    if type(value) in PLAIN_TENSORS and not value.is_nested:
        return (value.shape, value.dtype, value.device, value.requires_grad)
    return describe(value)


def described(meta: Any, cache: dict[Any, ValueMeta]) -> ValueMeta:
    """The :func:`describe` result of a :func:`capture_meta`; equal descriptions share ``cache``'s dict.

    ``None`` (a call whose output was never seen) is an empty description.
    """
    if type(meta) is not tuple:
        return {} if meta is None else meta
    known = cache.get(meta)
    if known is None:
        shape, dtype, device, requires_grad = meta
        known = cache[meta] = {
            "kind": "tensor",
            "shape": list(shape),
            "dtype": dtype_name(dtype),
            "device": device_name(device),
            "requires_grad": requires_grad,
        }
    return known


def tensors_in(value: Any) -> list[torch.Tensor]:
    """Every tensor inside ``value`` (tuples, lists and mapping values), depth first."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for item in value for t in tensors_in(item)]
    if isinstance(value, Mapping):
        return [t for item in value.values() for t in tensors_in(item)]
    return []


class ShapeTypeError(TypeError, ValueError):
    """An ``input_shape`` of the wrong type: a ``TypeError`` and, as analysis.md 2 states, a ``ValueError``.

    Wrong types are ``TypeError`` throughout the API; the spec's table makes every bad shape a
    ``ValueError``. Both ``except`` clauses catch this one.
    """


def validate_shape(shape: object) -> tuple[int, ...]:
    """Return ``shape`` as a tuple of non-negative ints, or raise ``ValueError`` naming it.

    A wrong type (not a tuple/list, a float or bool dimension) raises :class:`ShapeTypeError`, which
    is both a ``TypeError`` and a ``ValueError``.

    The message shows a sequence of plain numbers as written and anything else by its type only,
    so a tensor passed by mistake never has its values printed.
    """
    if not isinstance(shape, tuple | list):
        hint = "; pass tensors with args=(...)" if isinstance(shape, torch.Tensor) else ""
        raise ShapeTypeError(
            f"input_shape must be a tuple/list of non-negative ints, got {type(shape).__name__}{hint}"
        )
    if any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in shape):
        shown = repr(shape) if all(type(d) in (int, float, bool) for d in shape) else type(shape).__name__
        message = f"input_shape must be a tuple/list of non-negative ints, got {shown}"
        if any(isinstance(d, bool) or not isinstance(d, int) for d in shape):
            raise ShapeTypeError(message)
        raise ValueError(message)
    # The generated tensor has a leading batch of 1; PyTorch sizes are int64, so a product beyond it
    # would only fail inside torch with an unrelated message.
    elements = 1
    for size in shape:
        elements *= size
    if elements > _MAX_ELEMENTS:
        raise ValueError(
            f"input_shape {tuple(shape)!r} has {elements} elements, more than a tensor can hold "
            f"({_MAX_ELEMENTS})"
        )
    return tuple(shape)


def normalize_shapes(input_shape: object) -> list[tuple[int, ...]]:
    """A single shape means one input; a list/tuple of shapes means several, in order.

    An empty ``input_shape`` (``[]`` or ``()``) is refused with :class:`ShapeTypeError`: it could mean
    "no inputs" or "one input without dimensions", so it names neither. ``[()]`` (one shape, empty)
    is one input of shape ``(1,)`` (the batch dimension alone); a call without inputs is ``args=()``.
    """
    if isinstance(input_shape, tuple | list) and not input_shape:
        raise ShapeTypeError(
            f"input_shape is an empty {type(input_shape).__name__}: give the shape of one sample, e.g. "
            "(3, 224, 224) (the batch dimension of 1 is added); [()] for one input with no dimension "
            "besides the batch; args=() for a call without inputs"
        )
    if (
        isinstance(input_shape, tuple | list)
        and input_shape
        and all(isinstance(s, tuple | list) for s in input_shape)
    ):
        return [validate_shape(s) for s in input_shape]
    return [validate_shape(input_shape)]


def normalize_dtypes(dtype: object, count: int) -> list[torch.dtype] | None:
    """One dtype for every input, or one per shape; ``None`` means "infer from the model"."""
    if dtype is None:
        return None
    if isinstance(dtype, torch.dtype):
        return [dtype] * count
    if isinstance(dtype, str | bytes) or not hasattr(dtype, "__iter__"):
        raise TypeError(f"dtype must be a torch.dtype or an iterable of them, got {type(dtype).__name__}")
    dtypes = list(dtype)
    if not all(isinstance(d, torch.dtype) for d in dtypes):
        raise TypeError("dtype must be a torch.dtype or an iterable of torch.dtype")
    if len(dtypes) != count:
        raise ValueError(f"got {len(dtypes)} dtypes for {count} input shapes")
    return dtypes


def default_placement(module: torch.nn.Module) -> tuple[torch.dtype, torch.device]:
    """The first parameter's dtype/device, else the first buffer's, else float32 on CPU.

    "First" in ``module.parameters()`` order, walked without recursion (very deep models).
    """
    modules = [m for _, m in walk_modules(module)]
    for submodule in modules:
        for parameter in submodule._parameters.values():
            if parameter is not None:
                return parameter.dtype, parameter.device
    for submodule in modules:
        for buffer in submodule._buffers.values():
            if buffer is not None:
                return buffer.dtype, buffer.device
    return torch.float32, torch.device("cpu")


def generate_inputs(
    shapes: list[tuple[int, ...]],
    dtypes: list[torch.dtype],
    device: torch.device,
) -> tuple[torch.Tensor, ...]:
    """Deterministic inputs with a batch dimension of 1, drawn from a private seeded generator.

    The caller's global RNG state is never consumed: uniform [0, 1) floats (and complex parts) come
    from a ``torch.Generator`` seeded with 0; integers are zeros and booleans are ``True``.
    """
    generator = torch.Generator(device="cpu")
    generator.manual_seed(0)
    tensors = []
    for shape, dtype in zip(shapes, dtypes, strict=True):
        full = (1, *shape)
        if device.type == "meta":
            tensors.append(torch.empty(full, dtype=dtype, device=device))
        elif dtype.is_complex:
            real_dtype = torch.empty((), dtype=dtype).real.dtype
            real = torch.rand(full, generator=generator, dtype=real_dtype)
            imag = torch.rand(full, generator=generator, dtype=real_dtype)
            tensors.append(torch.complex(real, imag).to(device))
        elif dtype.is_floating_point:
            tensors.append(
                torch.rand(full, generator=generator, dtype=torch.float32).to(dtype=dtype, device=device)
            )
        elif dtype == torch.bool:
            tensors.append(torch.ones(full, dtype=dtype, device=device))
        else:
            tensors.append(torch.zeros(full, dtype=dtype, device=device))
    return tuple(tensors)
