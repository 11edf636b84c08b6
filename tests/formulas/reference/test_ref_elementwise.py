"""Reference checks of the element-wise formulas (truth.md 1, 3, 5): arithmetic, unary math,
comparisons, reductions, complex arithmetic and rounded division, with broadcasting and dtypes.

Each case runs one randomised workload through ``measure_flops`` (real dispatch) and compares it to a
reference computed without the library:

* complex arithmetic is re-implemented on the real and imaginary parts (real tensors) and run under
  the harness's :class:`TrivialCounter`; every real add, subtract, multiply, divide, negation or square
  root it executes costs one FLOP per output element, so the counter's element totals are the
  expected count (reference (a));
* rounded division of floating values is re-implemented as a true division followed by ``floor`` or
  ``trunc`` under the same counter (a);
* every other operator is a closed form (b): the documented per-element cost (:data:`UNARY`,
  :data:`BINARY`, B.8) times the element count, where broadcast output shapes come from
  :func:`broadcast` below (right-aligned, size-1 axes stretched) and the integer/boolean exclusion
  from the result dtype PyTorch produces (``torch.result_type`` or the operator's own output dtype).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import pytest
import torch

from reference.harness import cases, library_count, prod, seeded, trivial_count

Workload = Callable[[], object]
Built = tuple[Workload, int]

FLOATING = (torch.float32, torch.float64, torch.bfloat16)
INTEGER = (torch.int64, torch.int32, torch.int16)
COMPLEX = (torch.complex64, torch.complex128)

# Documented costs per output element (formulas.md B.8, real-models.md 2.2).
BINARY = {"add": 1, "sub": 1, "mul": 1, "div": 1, "maximum": 1, "minimum": 1, "pow": 1, "rsub": 1}
UNARY = {
    "exp": 1, "sqrt": 1, "rsqrt": 1, "sin": 1, "cos": 1, "log": 1, "reciprocal": 1, "relu": 1,
    "neg": 1, "abs": 1, "floor": 1, "ceil": 1, "round": 1, "trunc": 1, "frac": 1, "sign": 1,
    "sigmoid": 4, "tanh": 6, "silu": 5, "atan": 1, "erf": 1,
}  # fmt: skip
# Operators that produce floating values from integers (the rest keep the input dtype).
PROMOTING = {"exp", "sqrt", "rsqrt", "sin", "cos", "log", "reciprocal", "sigmoid", "tanh", "atan", "erf"}
# Unary operators PyTorch refuses on integers or on booleans.
FLOAT_ONLY = {"silu", "frac", "round"}
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
# Real arithmetic a re-implementation runs: one FLOP per output element each; views are free.
REAL_OPS = {
    "aten.add",
    "aten.sub",
    "aten.mul",
    "aten.div",
    "aten.neg",
    "aten.sqrt",
    "aten.floor",
    "aten.trunc",
}
FREE_OPS = {"aten.select", "aten.view_as_real", "aten.real", "aten.imag", "aten.alias", "aten.expand"}


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """Broadcast shape: right-aligned, each axis the non-1 size (sizes agree or are 1 by construction)."""
    rank = max(len(shape) for shape in shapes)
    padded = [(1,) * (rank - len(shape)) + tuple(shape) for shape in shapes]
    return tuple(max(sizes) if min(sizes) != 0 else 0 for sizes in zip(*padded, strict=True))


def random_shape(rng: random.Random, rank: int | None = None) -> tuple[int, ...]:
    """A small shape of rank 0–4 (sizes 1–5)."""
    rank = rng.randint(0, 4) if rank is None else rank
    return tuple(rng.randint(1, 5) for _ in range(rank))


def broadcastable(rng: random.Random, shape: tuple[int, ...], grow: bool = True) -> tuple[int, ...]:
    """A shape that broadcasts with ``shape``: a suffix of it with some axes set to 1, and (when
    ``grow``) sometimes a leading axis more, so the output outgrows ``shape``."""
    suffix = list(shape[rng.randint(0, len(shape)) :])
    suffix = [1 if rng.random() < 0.3 else size for size in suffix]
    whole = len(suffix) == len(shape)  # only a full-rank operand can add a leading axis
    prefix = [rng.randint(1, 3) for _ in range(rng.randint(0, 1))] if grow and whole else []
    return tuple(prefix + suffix)


def tensor(rng: random.Random, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """Random values of ``dtype`` (positive, away from zero, so divisions and logs are defined)."""
    generator = seeded(rng)
    if dtype.is_complex:
        return torch.complex(
            torch.rand(shape, generator=generator) + 0.5, torch.rand(shape, generator=generator) + 0.5
        ).to(dtype)
    if dtype == torch.bool:
        return torch.rand(shape, generator=generator) > 0.5
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=generator) + 0.5).to(dtype)
    return torch.randint(1, 9, shape, generator=generator, dtype=dtype)


def operand(rng: random.Random, shape: tuple[int, ...], dtype: torch.dtype) -> Any:
    """A tensor of ``dtype``, or (one time in five) a Python scalar of the matching kind."""
    if rng.random() < 0.2:
        if dtype.is_complex:
            return complex(rng.uniform(0.5, 2), rng.uniform(0.5, 2))
        if dtype.is_floating_point:
            return rng.choice([0.5, 2.0, 3.25])
        return rng.choice([2, 3]) if dtype != torch.bool else True
    return tensor(rng, shape, dtype)


def shape_of(value: Any) -> tuple[int, ...]:
    return tuple(value.shape) if isinstance(value, torch.Tensor) else ()


def floating(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


# --- real arithmetic and comparisons (closed forms) -------------------------------------------------


def binary_real(rng: random.Random) -> Built:
    """``add``/``sub``/``rsub``/``mul``/``div``/``maximum``/``minimum``/``pow`` of real operands.

    Expected: ``cost · out`` (``cost`` from :data:`BINARY`, plus one multiply when ``alpha ≠ 1`` scales
    an operand), 0 when the result is integer or boolean — except true division, whose result is
    always floating.
    """
    name = rng.choice(sorted(BINARY))
    dtype = rng.choice(FLOATING + INTEGER + (torch.bool,) * (name == "mul"))
    shape = random_shape(rng)
    left = tensor(rng, shape, dtype)
    right = operand(rng, broadcastable(rng, shape), rng.choice((dtype, rng.choice(FLOATING + INTEGER))))
    kwargs: dict[str, Any] = {}
    if name in ("add", "sub", "rsub") and dtype != torch.bool and rng.random() < 0.4:
        kwargs["alpha"] = rng.choice([2, 1]) if not floating(torch.result_type(left, right)) else 0.5
    if name in ("maximum", "minimum") and not isinstance(right, torch.Tensor):
        right = tensor(rng, broadcastable(rng, shape), dtype)
    out_shape = broadcast(shape, shape_of(right))
    result = torch.result_type(left, right) if name != "div" else torch.get_default_dtype()
    cost = BINARY[name] + (kwargs.get("alpha", 1) != 1)
    expected = cost * prod(out_shape) if floating(result) else 0
    func = getattr(torch, name)
    return (lambda: func(left, right, **kwargs)), expected


def comparison(rng: random.Random) -> Built:
    """``eq``/``ne``/``lt``/``le``/``gt``/``ge``: one comparison per output element when an operand is
    floating (the input rule: the boolean result does not make floating comparisons free), else 0."""
    name = rng.choice(COMPARISONS)
    dtype = rng.choice(FLOATING + INTEGER + (torch.bool,))
    shape = random_shape(rng)
    left = tensor(rng, shape, dtype)
    right = operand(rng, broadcastable(rng, shape), rng.choice((dtype, *FLOATING, *INTEGER)))
    involves_float = (
        dtype.is_floating_point
        or isinstance(right, float)
        or (isinstance(right, torch.Tensor) and right.dtype.is_floating_point)
    )
    expected = prod(broadcast(shape, shape_of(right))) if involves_float else 0
    func = getattr(torch, name)
    return (lambda: func(left, right)), expected


def unary_real(rng: random.Random) -> Built:
    """Unary math: ``UNARY[name] · out`` on a floating result; integer-preserving operators of
    integer tensors count 0, promoting ones (``exp``, ``sigmoid``, …) count."""
    name = rng.choice(sorted(UNARY))
    dtypes = FLOATING + (() if name in FLOAT_ONLY else INTEGER)
    dtype = rng.choice(dtypes)
    x = tensor(rng, random_shape(rng), dtype)
    result_floating = dtype.is_floating_point or name in PROMOTING
    expected = UNARY[name] * x.numel() if result_floating else 0
    func = getattr(torch, name) if hasattr(torch, name) else getattr(torch.nn.functional, name)
    if rng.random() < 0.3 and dtype.is_floating_point and hasattr(torch.Tensor, f"{name}_"):  # in place
        inplace = getattr(torch.Tensor, f"{name}_")
        return (lambda: inplace(x.clone())), expected
    return (lambda: func(x)), expected


def selection(rng: random.Random) -> Built:
    """``where`` and ``masked_fill`` (one selection per output element), ``clamp`` (one comparison per
    given bound per output element) on floating values; integer results count 0."""
    dtype = rng.choice(FLOATING + INTEGER)
    shape = random_shape(rng, rng.randint(1, 4))
    x = tensor(rng, shape, dtype)
    mask = tensor(rng, broadcastable(rng, shape, grow=False), torch.bool)
    counted = dtype.is_floating_point
    kind = rng.choice(["where", "masked_fill", "clamp"])
    if kind == "where":
        other = tensor(rng, broadcastable(rng, shape), dtype)
        out = prod(broadcast(shape, tuple(mask.shape), tuple(other.shape)))
        return (lambda: torch.where(mask, x, other)), out * counted
    if kind == "masked_fill":
        fill = 1 if not counted else 0.5
        return (lambda: x.masked_fill(mask, fill)), x.numel() * counted
    low, high = rng.choice([(1, None), (None, 3), (1, 3)])
    bounds = (low is not None) + (high is not None)
    return (lambda: torch.clamp(x, low, high)), bounds * x.numel() * counted


# --- rounded division (truth.md 3) ----------------------------------------------------------------


def rounded_division(rng: random.Random) -> Built:
    """``div(rounding_mode="floor"|"trunc")``, ``floor_divide``, ``//`` and ``div_``: on a floating
    result the re-implementation ``floor(a / b)`` (or ``trunc``) under the trivial counter, 2 per output
    element (divide, round); an integer result counts 0."""
    dtype = rng.choice(FLOATING + INTEGER)
    shape = random_shape(rng)
    left = tensor(rng, shape, dtype)
    right = operand(rng, broadcastable(rng, shape), rng.choice((dtype, *FLOATING, *INTEGER)))
    mode = rng.choice(["floor", "trunc", "floor_divide", "//", "inplace"])
    result = torch.result_type(left, right)
    if mode == "inplace" and result != left.dtype:
        mode = "floor"
    rounding = "trunc" if mode == "trunc" else "floor"
    rounding_op = getattr(torch, rounding)

    def reference() -> object:
        true_left = left if left.dtype.is_floating_point else left.to(result)
        return rounding_op(torch.div(true_left, right))

    if floating(result):
        counter = trivial_count(reference)
        assert set(counter.elementwise) <= {"aten.div", f"aten.{rounding}", "aten._to_copy"}
        expected = counter.elementwise["aten.div"] + counter.elementwise[f"aten.{rounding}"]
    else:
        expected = 0
    workloads: dict[str, Workload] = {
        "floor": lambda: torch.div(left, right, rounding_mode="floor"),
        "trunc": lambda: torch.div(left, right, rounding_mode="trunc"),
        "floor_divide": lambda: torch.floor_divide(left, right),
        "//": lambda: left // right,
        "inplace": lambda: left.clone().div_(right, rounding_mode="floor"),
    }
    return workloads[mode], expected


# --- complex arithmetic (truth.md 3): re-implementations on real parts -----------------------------


def parts(value: Any) -> tuple[Any, Any]:
    """(real, imaginary) of an operand as real tensors or Python floats; imaginary ``None`` when real."""
    if isinstance(value, torch.Tensor):
        return (value.real, value.imag) if value.is_complex() else (value, None)
    if isinstance(value, complex):
        return value.real, value.imag
    return value, None


def complex_product(left: Any, right: Any) -> tuple[Any, Any]:
    """``(a + bi)(c + di) = (ac − bd) + (ad + bc)i``; a real factor scales each part."""
    a, b = parts(left)
    c, d = parts(right)
    if b is None:
        return a * c, a * d
    if d is None:
        return a * c, b * c
    return a * c - b * d, a * d + b * c


def complex_quotient(left: Any, right: Any) -> tuple[Any, Any]:
    """Complex ÷ complex: numerator ``z·w̄`` (6), denominator ``c² + d²`` (3), two divisions (2) = 11;
    complex ÷ real: each part divided (2)."""
    a, b = parts(left)
    c, d = parts(right)
    if d is None:
        return a / c, b / c
    denominator = c * c + d * d
    return (a * c + b * d) / denominator, (b * c - a * d) / denominator


def complex_abs(value: torch.Tensor) -> Any:
    """``√(a² + b²)``: 2 multiplies, 1 add, 1 square root = 4."""
    a, b = parts(value)
    return torch.sqrt(a * a + b * b)


def widen(value: Any, shape: tuple[int, ...]) -> torch.Tensor:
    """``value`` (a tensor or a Python scalar) as a tensor view expanded to ``shape``."""
    return (value if isinstance(value, torch.Tensor) else torch.tensor(value)).expand(shape)


def counted_real_ops(workload: Workload) -> int:
    """FLOPs of a re-implementation: one per output element of each real arithmetic operator."""
    counter = trivial_count(workload)
    unknown = set(counter.elementwise) - REAL_OPS - FREE_OPS
    assert not unknown, f"reference ran operators without a stated cost: {unknown}"
    assert counter.products == 0
    return sum(counter.elementwise[name] for name in REAL_OPS)


def complex_binary(rng: random.Random) -> Built:
    """Complex ``mul``, ``add``/``sub`` (with ``alpha``), ``div`` with complex, real and scalar operands,
    broadcast; the reference re-implements each on the real parts (a). A complex ``add``/``sub`` with a
    real operand is priced 2 per output element by the spec's table (every complex addition alike),
    which a re-implementation adding only the real parts would not show: that case is the closed form
    ``2 · out`` (b)."""
    name = rng.choice(["mul", "add", "sub", "div"])
    shape = random_shape(rng)
    kinds = rng.choice([("c", "c"), ("c", "r"), ("r", "c")])
    complex_dtype, real_dtype = rng.choice(COMPLEX), rng.choice((torch.float32, torch.float64))

    def make(kind: str, operand_shape: tuple[int, ...], scalar_ok: bool) -> Any:
        dtype = complex_dtype if kind == "c" else real_dtype
        return operand(rng, operand_shape, dtype) if scalar_ok else tensor(rng, operand_shape, dtype)

    left = make(kinds[0], shape, False)
    right = make(kinds[1], broadcastable(rng, shape), True)
    out_shape = broadcast(shape, shape_of(right))
    out = prod(out_shape)
    # B.8 counts element-wise work per output element: the re-implementation runs on operands
    # broadcast to the output shape first (expanding is a free view; a Python scalar becomes a
    # 0-d tensor expanded), so a broadcast divisor's denominator is computed per output element
    wide_left, wide_right = (widen(value, out_shape) for value in (left, right))
    alpha = rng.choice([1, 1, 2.0]) if name in ("add", "sub") else 1
    kwargs = {"alpha": alpha} if alpha != 1 else {}
    func = getattr(torch, name)
    if name == "mul":
        expected = counted_real_ops(lambda: complex_product(wide_left, wide_right))
    elif name == "div":
        if parts(right)[1] is not None and parts(left)[1] is None:
            # real ÷ complex (b): a·w̄ = a·c − (a·d)i, 2 multiplies; denominator c² + d², 3; two
            # divisions, 2: 7 per output element
            expected = 7 * out
        else:
            expected = counted_real_ops(lambda: complex_quotient(wide_left, wide_right))
    else:
        scaled = 0
        if alpha != 1:  # the scaled operand alpha·other: a real scalar times a complex or real tensor
            product = (lambda: complex_product(alpha, wide_right)) if parts(right)[1] is not None else None
            scaled = counted_real_ops(product) if product is not None else out
        if parts(left)[1] is not None and parts(right)[1] is not None:
            a, b = parts(wide_left)
            c, d = parts(wide_right)
            expected = counted_real_ops(lambda: (a + c, b + d)) + scaled
        else:
            expected = 2 * out + scaled  # (b): the spec prices every complex addition at 2
    if (
        rng.random() < 0.25
        and isinstance(left, torch.Tensor)
        and left.is_complex()
        and out_shape == tuple(left.shape)
    ):
        inplace = getattr(torch.Tensor, f"{name}_")
        return (lambda: inplace(left.clone(), right, **kwargs)), expected
    return (lambda: func(left, right, **kwargs)), expected


def complex_unary(rng: random.Random) -> Built:
    """Complex ``abs`` (4), ``neg`` (2) and ``sgn`` (``z/|z|``: 6), re-implemented on the parts (a)."""
    z = tensor(rng, random_shape(rng), rng.choice(COMPLEX))
    name = rng.choice(["abs", "neg", "sgn"])
    a, b = parts(z)
    references: dict[str, Workload] = {
        "abs": lambda: complex_abs(z),
        "neg": lambda: (-a, -b),
        "sgn": lambda: (lambda m: (a / m, b / m))(complex_abs(z)),
    }
    return (lambda: getattr(torch, name)(z)), counted_real_ops(references[name])


# --- reductions (closed forms) ----------------------------------------------------------------------


def reduction(rng: random.Random) -> Built:
    """``sum``/``mean`` (``k`` values into one: ``k − 1`` adds; ``mean`` one divide per output),
    ``max``/``min`` (``k − 1`` comparisons), ``all``/``any`` (floating input: ``k − 1``), ``argmax``,
    ``cumsum`` (``width − 1`` adds per scanned row), vector norms (order 2: ``2·in``; 1 and ∞:
    ``2·in − out``). Integer results count 0; ``sum(dtype=float64)`` of integers counts."""
    shape = random_shape(rng, rng.randint(1, 4))
    size = prod(shape)
    name = rng.choice(["sum", "mean", "max", "min", "all", "any", "argmax", "cumsum", "norm"])
    dtype = rng.choice(FLOATING + INTEGER if name in ("sum", "max", "min", "argmax", "cumsum") else FLOATING)
    x = tensor(rng, shape, dtype)
    dims = sorted(rng.sample(range(len(shape)), rng.randint(1, len(shape))))
    keep = rng.random() < 0.5
    kept = prod(size_ for axis, size_ in enumerate(shape) if axis not in dims)
    counted = dtype.is_floating_point
    if name == "sum":
        to_float = not counted and rng.random() < 0.5
        kwargs = {"dtype": torch.float64} if to_float else {}
        return (lambda: x.sum(dims, keepdim=keep, **kwargs)), (size - kept) * (counted or to_float)
    if name == "mean":
        return (lambda: x.mean(dims, keepdim=keep)), size - kept + kept
    if name in ("max", "min", "argmax"):
        if rng.random() < 0.5:
            return (lambda: getattr(x, name)()), (size - 1) * counted
        axis = rng.choice(dims)
        outputs = size // shape[axis]
        return (lambda: getattr(x, name)(axis, keepdim=keep)), (size - outputs) * counted
    if name in ("all", "any"):
        floats = rng.random() < 0.7
        y = x if floats else x > 1
        return (lambda: getattr(y, name)()), (size - 1) * floats
    if name == "cumsum":
        axis = rng.choice(dims)
        return (lambda: x.cumsum(axis)), (size - size // shape[axis]) * counted
    order = rng.choice([2, 1, math.inf])
    per_input = 2 * size if order == 2 else 2 * size - kept
    return (lambda: torch.linalg.vector_norm(x, order, dims, keepdim=keep)), per_input


FAMILIES: dict[str, Callable[[random.Random], Built]] = {
    "binary_real": binary_real,
    "comparison": comparison,
    "unary_real": unary_real,
    "selection": selection,
    "rounded_division": rounded_division,
    "complex_binary": complex_binary,
    "complex_unary": complex_unary,
    "reduction": reduction,
}


@pytest.mark.parametrize(("seed", "rng"), cases("elementwise"))
def test_elementwise_formulas_match_the_reference(seed: int, rng: random.Random) -> None:
    family = rng.choice(sorted(FAMILIES))
    workload, expected = FAMILIES[family](rng)
    counted = library_count(workload)
    assert counted.status == "complete", (family, counted.diagnostics)
    assert counted.total == expected, (family, counted.by_operator, expected)


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        # truth.md 3's table on 2×3 complex64 operands (6 output elements)
        (lambda: Z * Z, 6 * 6),
        (lambda: Z * R, 2 * 6),
        (lambda: R * Z, 2 * 6),
        (lambda: Z + Z, 2 * 6),
        (lambda: Z - R, 2 * 6),
        (lambda: Z / Z, 11 * 6),
        (lambda: Z.abs(), 4 * 6),
        # C20 as amended by truth.md 3: the int64 rounded division counts 0, the true division 3
        (lambda: (INTS / 2, torch.div(INTS, 2, rounding_mode="floor")), 3),
        (lambda: torch.div(R, 2, rounding_mode="floor"), 2 * 6),
        (lambda: torch.div(R, 2, rounding_mode="trunc"), 2 * 6),
    ],
)
def test_truth_table_examples(workload: Workload, expected: int) -> None:
    counted = library_count(workload)
    assert (counted.status, counted.total) == ("complete", expected)


Z = torch.ones(2, 3, dtype=torch.complex64)
R = torch.ones(2, 3)
INTS = torch.ones(3, dtype=torch.int64)


def test_a_caller_formula_still_overrides_a_native_complex_count() -> None:
    from torchscan import measure_flops

    report = measure_flops(lambda: Z * Z, custom_mapping={torch.ops.aten.mul: lambda *args, **kwargs: 1})
    assert report["by_operator"] == {"aten.mul": 1} and report["total"]["status"] == "complete"


def test_complex_work_inside_a_module_is_estimated_and_a_handler_still_overrides_it() -> None:
    from torch import nn

    from torchscan import ModuleHandler, crawl_module

    class SpectralGate(nn.Module):
        """rfft, a complex gate (complex × complex multiply), irfft: no module formula of its own."""

        def __init__(self) -> None:
            super().__init__()
            self.gate = nn.Parameter(torch.ones(4, 5, dtype=torch.complex64))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.fft.irfft(torch.fft.rfft(x) * self.gate, n=x.shape[-1])

    signal = torch.rand(2, 4, 8)
    report = crawl_module(SpectralGate(), args=(signal,))
    # the complex multiply of (2, 4, 5) values: 6 per element = 240, counted in both FLOP views
    assert report["operator_flops"]["by_operator"]["aten.mul"] == 6 * 40
    assert report["totals"]["module_flops"]["status"] == "complete"
    assert report["totals"]["operator_flops"]["status"] == "complete"
    handled = crawl_module(
        SpectralGate(),
        args=(signal,),
        custom_modules={SpectralGate: ModuleHandler(lambda call: {"module_flops": 7})},
    )
    assert handled["totals"]["module_flops"]["value"] == 7
