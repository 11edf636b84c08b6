"""The observer's one-pass counts (issue #36) agree with its general path, call by call.

The general path (layout check, dtype rule, formula, each its own walk) is the reference: an observer
whose inline paths are turned off counts every call through it. Any workload must give the same
report both ways, and a fast counter either gives the guarded formula's own number or declines.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchscan.analysis.dispatch.fast_counts import fast_counter
from torchscan.analysis.dispatch.observer import OperatorObserver
from torchscan.formulas import operators

DTYPES = [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32, torch.bool, torch.complex64]

# Binary and unary calls whose overloads have fast counters (element-wise rules, products, pooling
# and convolutions), and some that decline (comparisons, reductions) to exercise the mix.
OPERATIONS: list[tuple[str, Callable[[torch.Tensor, torch.Tensor], Any]]] = [
    ("add", torch.add),
    ("add_alpha", lambda a, b: torch.add(a, b, alpha=2)),
    ("sub", torch.sub),
    ("mul", torch.mul),
    ("mul_scalar", lambda a, b: a * 2.5),
    ("div", torch.div),
    ("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor")),
    ("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    ("relu", lambda a, b: torch.relu(a)),
    ("sigmoid", lambda a, b: torch.sigmoid(a)),
    ("abs", lambda a, b: torch.abs(a)),
    ("neg", lambda a, b: torch.neg(a)),
    ("hardswish", lambda a, b: F.hardswish(a)),
    ("gelu", lambda a, b: F.gelu(a)),
    ("clamp", lambda a, b: torch.clamp(a, min=0)),
    ("maximum", torch.maximum),
    ("where", lambda a, b: torch.where(a > 0, a, b)),
    ("mm", lambda a, b: a.reshape(4, 3) @ b.reshape(3, 4)),
    ("linear", lambda a, b: F.linear(a.reshape(4, 3), b.reshape(4, 3), a[0, :4])),
    ("bmm", lambda a, b: torch.bmm(a.reshape(2, 2, 3), b.reshape(2, 3, 2))),
    ("conv", lambda a, b: F.conv2d(a.reshape(1, 1, 3, 4), b.reshape(1, 1, 3, 4)[..., :2, :2], padding=1)),
    ("avg_pool", lambda a, b: F.avg_pool2d(a.reshape(1, 1, 3, 4), 2)),
    ("sum", lambda a, b: a.sum()),
    ("eq", torch.eq),
    ("cat", lambda a, b: torch.cat([a, b])),
    ("in_place_add", lambda a, b: a.clone().add_(b)),
    ("softmax", lambda a, b: torch.softmax(a, dim=-1)),
    # results of several tensors: the output, saved statistics or indices
    ("batch_norm", lambda a, b: F.batch_norm(a.reshape(1, 3, 4), None, None, training=True)),
    ("layer_norm", lambda a, b: F.layer_norm(a, (4,))),
    ("max_pool_indices", lambda a, b: F.max_pool2d(a.reshape(1, 1, 3, 4), 2, return_indices=True)),
    # reductions: the requested dtype, else the out buffer's, else the input's decides
    ("mean_dim", lambda a, b: a.mean(dim=1)),
    ("sum_dtype", lambda a, b: a.sum(dim=0, dtype=torch.float64)),
    ("sum_int_dtype", lambda a, b: a.sum(dtype=torch.int64)),
    ("sum_out", lambda a, b: torch.sum(a, dim=1, out=torch.empty(3, dtype=b.dtype))),
    ("var_mean", lambda a, b: torch.var_mean(a, dim=1)),
]


def _operand(dtype: torch.dtype, layout: str) -> torch.Tensor:
    value = torch.arange(12, dtype=torch.float64).reshape(3, 4).sub(5).to(dtype)
    if layout == "sparse":
        return value.to_sparse()
    return value


def _report(program: list[tuple[int, int, int, str]], inline: bool) -> str:
    observer = OperatorObserver()
    observer._inline = inline  # off: every call goes through _count, the general path
    with warnings.catch_warnings(), observer:
        warnings.simplefilter("ignore")
        for op, left, right, layout in program:
            try:
                OPERATIONS[op][1](_operand(DTYPES[left], layout), _operand(DTYPES[right], "strided"))
            except (RuntimeError, TypeError, NotImplementedError):
                pass  # a combination PyTorch refuses: refused alike under both observers
    return json.dumps(observer.report())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(OPERATIONS) - 1),
            st.integers(0, len(DTYPES) - 1),
            st.integers(0, len(DTYPES) - 1),
            st.sampled_from(["strided", "strided", "strided", "sparse"]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_inline_counts_give_the_general_path_report(program: list[tuple[int, int, int, str]]) -> None:
    assert _report(program, inline=True) == _report(program, inline=False)


def test_every_listed_operation_runs_once_on_the_fast_path() -> None:
    # guards the property test above: it would pass vacuously if no call ever took the fast path
    ran = [name for name, _ in OPERATIONS]
    report = json.loads(_report([(i, 0, 0, "strided") for i in range(len(OPERATIONS))], inline=True))
    assert report["total"]["status"] == "complete", ran
    assert {
        "aten.add",
        "aten.mul",
        "aten.addmm",
        "aten.convolution",
        "aten.relu",
        "aten.native_batch_norm",
        "aten.native_layer_norm",
        "aten.max_pool2d_with_indices",
        "aten.mean",
        "aten.sum",
        "aten.var_mean",
    } <= set(report["by_operator"])


@pytest.mark.parametrize(
    ("packet", "args", "kwargs", "expected"),
    [
        # relu of a 2 x 3 float tensor: one FLOP per output element = 6
        ("aten.relu", (torch.ones(2, 3),), {}, 6),
        # an integer result counts 0 (real-models.md 2.2)
        ("aten.relu", (torch.ones(2, 3, dtype=torch.int64),), {}, 0),
        # addmm(bias, a[2,3], b[3,4]): 2 * 2 * 3 * 4 = 48
        ("aten.addmm", (torch.ones(4), torch.ones(2, 3), torch.ones(3, 4)), {}, 48),
        # rounded division of integers: an integer result counts 0 (B.7.1)
        (
            "aten.div",
            (torch.ones(3, dtype=torch.int64), torch.ones(3, dtype=torch.int64)),
            {"rounding_mode": "floor"},
            0,
        ),
        # rounded division of floats: divide and round, 2 per element = 6
        ("aten.div", (torch.ones(3), torch.ones(3)), {"rounding_mode": "floor"}, 6),
        # mean of 2 x 3 over dim 1: 2 * (3 - 1) adds + 2 divides = 6
        ("aten.mean", (torch.ones(2, 3), [1]), {}, 6),
        # an integer sum counts 0; the same sum asked for in float64: 6 - 1 = 5 adds
        ("aten.sum", (torch.ones(2, 3, dtype=torch.int64),), {}, 0),
        ("aten.sum", (torch.ones(2, 3, dtype=torch.int64),), {"dtype": torch.float64}, 5),
    ],
)
def test_fast_counter_gives_the_guarded_formula_count(
    packet: str, args: tuple[Any, ...], kwargs: dict[str, Any], expected: int
) -> None:
    formula = operators.supplemental_formula(packet)
    counter = fast_counter(formula)
    assert counter is not None
    out = args[1] if packet == "aten.addmm" else args[0]
    if packet == "aten.addmm":
        out = torch.ones(2, 4)
    if packet in ("aten.mean", "aten.sum"):
        out = getattr(torch, packet.removeprefix("aten."))(*args, **kwargs)
    assert counter(args, kwargs, out) == expected == formula(args, kwargs, out)


@pytest.mark.parametrize(
    "args",
    [
        (torch.ones(2, 3).to_sparse(),),  # a sparse layout: the general path names it
        (torch.ones(2, dtype=torch.complex64),),  # complex values: the general path names it
        ([torch.ones(2), torch.ones(2, dtype=torch.complex64)],),  # complex inside a list
        (torch.ones(2), 1j),  # a complex Python scalar
        (torch.ones(2), torch.complex64),  # a complex dtype argument
        (torch.ones(2), object()),  # an operand the pass does not know
    ],
)
def test_fast_counter_declines_what_the_general_path_must_judge(args: tuple[Any, ...]) -> None:
    counter = fast_counter(operators.supplemental_formula("aten.add"))
    assert counter is not None
    assert counter(args, {}, torch.ones(2)) is None


def test_fast_counter_reads_the_first_tensor_of_a_tuple_result() -> None:
    # native_layer_norm of a 2 x 4 float tensor returns (output, mean, rstd); its formula reads the
    # output (the first tensor), as the general path's first_tensor does; an integer first result
    # counts 0 under the result rule, and a tuple holding a non-tensor goes to the general path
    formula = operators.supplemental_formula("aten.native_layer_norm")
    counter = fast_counter(formula)
    assert counter is not None
    args = (torch.ones(2, 4), [4], None, None, 1e-5)
    out = torch.ops.aten.native_layer_norm.default(*args)
    assert type(out) is tuple and len(out) == 3
    assert counter(args, {}, out) == formula(args, {}, out) > 0
    relu = fast_counter(operators.supplemental_formula("aten.relu"))
    assert relu is not None
    assert relu((torch.ones(2),), {}, (torch.ones(2, dtype=torch.int64), torch.ones(2))) == 0
    assert relu((torch.ones(2),), {}, (torch.ones(2), 3)) is None
    assert relu((torch.ones(2),), {}, (torch.ones(2), torch.ones(2, dtype=torch.complex64))) is None


def test_tuple_results_are_counted_without_the_general_path() -> None:
    # issue #36: batch and layer norms ran through the general path because their results are tuples
    observer = OperatorObserver()
    general: list[str] = []
    counted = observer._count

    def recording(entry: Any, *rest: Any) -> Any:
        general.append(entry.name)
        return counted(entry, *rest)

    observer._count = recording  # type: ignore[method-assign]
    x = torch.ones(1, 3, 4, 4)
    with observer:
        F.batch_norm(x, None, None, training=True)
        F.layer_norm(x, (4,))
        F.max_pool2d(x, 2, return_indices=True)
    assert general == []
    assert {"aten.native_batch_norm", "aten.native_layer_norm", "aten.max_pool2d_with_indices"} <= set(
        observer.report()["by_operator"]
    )


def test_rules_that_read_operand_kinds_have_no_fast_counter() -> None:
    # comparisons count when any operand is floating: the one pass does not read operand kinds, so
    # they always take the general path
    assert fast_counter(operators.supplemental_formula("aten.eq")) is None
    assert fast_counter(None) is None
