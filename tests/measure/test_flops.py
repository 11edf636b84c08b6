"""measure_flops end to end: formulas.md Part C operator examples (C15–C24) with exact numbers."""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from torchscan import measure_flops

OPERATOR_METHOD = "torchscan_flops_v1"  # truth.md 4: the convention applied, not the dispatch mechanism


def total(report):
    return report["total"]


def codes(report):
    return {d["code"] for d in report["diagnostics"]}


def test_c15_operator_report_with_module_labels():
    left, right = torch.ones(2, 3), torch.ones(3, 4)
    linear = nn.Linear(4, 2)
    report = measure_flops(lambda: linear(left @ right), modules=linear)
    assert report["total"] == {
        "status": "complete",
        "value": 80,
        "known_value": 80,
        "unit": "FLOPs",
        "scope": "workload",
        "method": OPERATOR_METHOD,
    }
    assert report["by_operator"] == {"aten.addmm": 32, "aten.mm": 48}
    assert report["by_module"]["Linear"] == 32
    assert report["diagnostics"] == []
    assert report["context"] == {
        "torch_version": str(torch.__version__),
        "method": OPERATOR_METHOD,
        "counting_convention": "torchscan_flops_v1",
        "attention": "mask-aware",
        "flop_counter_operators": ["aten.addmm", "aten.mm"],  # both have a FlopCounterMode formula too
    }
    assert json.loads(json.dumps(report)) == report


def test_by_module_uses_hierarchy_labels():
    model = nn.Sequential(nn.Linear(3, 3), nn.Sequential(nn.Linear(3, 3)))
    report = measure_flops(lambda: model(torch.ones(1, 3)))
    # 2*1*3*3 = 18 per addmm; the parent includes its children.
    assert report["by_module"] == {
        "Sequential": 36,
        "Sequential.0": 18,
        "Sequential.1": 18,
        "Sequential.1.0": 18,
    }


def test_c16_uncounted_operator():
    # atan (C16's example) is now counted by the pointwise fallback (real-models.md 2.2): logcumsumexp is
    # neither pointwise nor in any table
    x = torch.ones(8)
    report = measure_flops(lambda: torch.logcumsumexp(x, 0))
    assert report["total"] == {
        "status": "partial",
        "value": None,
        "known_value": 0,
        "unit": "FLOPs",
        "scope": "workload",
        "method": OPERATOR_METHOD,
    }
    assert report["by_operator"] == {}
    assert report["diagnostics"] == [
        {
            "code": "uncounted_operator",
            "severity": "warning",
            "metric": "flops",
            "operator": "aten.logcumsumexp",
            "message": "aten.logcumsumexp was observed 1 time(s), but no FLOP formula is registered.",
        }
    ]
    left, right = torch.ones(2, 3), torch.ones(3, 4)
    report = measure_flops(lambda: torch.logcumsumexp(left @ right, 0))
    assert report["total"]["status"] == "partial" and report["total"]["known_value"] == 48
    assert report["by_operator"] == {"aten.mm": 48}
    report = measure_flops(lambda: torch.sin(x))
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 8
    assert report["by_operator"] == {"aten.sin": 8}


def test_c17_caller_formulas():
    inputs = torch.ones(5)
    mapping = {torch.ops.aten.atan: lambda input_shape, *, out_shape: math.prod(out_shape)}
    report = measure_flops(lambda: torch.atan(inputs), custom_mapping=mapping)
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 5
    assert report["by_operator"] == {"aten.atan": 5}
    report = measure_flops(
        lambda: torch.atan(inputs), custom_mapping={torch.ops.aten.atan: lambda *a, **k: 0}
    )
    assert report["total"]["value"] == 0 and report["by_operator"] == {"aten.atan": 0}

    def with_cos(*args, **kwargs):
        torch.cos(torch.ones(3))
        return 1

    report = measure_flops(lambda: torch.atan(inputs), custom_mapping={torch.ops.aten.atan: with_cos})
    assert "aten.cos" not in json.dumps(report)

    inputs2 = torch.ones(2, 3)
    report = measure_flops(lambda: inputs2 + inputs2, custom_mapping={torch.ops.aten.add: lambda *a, **k: 99})
    assert report["total"]["value"] == 99
    assert measure_flops(lambda: inputs2 + inputs2)["total"]["value"] == 6

    calls = []
    with pytest.raises(TypeError, match="operator packets"):
        measure_flops(lambda: calls.append(1), custom_mapping={torch.ops.aten.atan.default: len})
    assert calls == []


@pytest.mark.parametrize(
    "formula",
    [
        lambda *a, **k: -1,
        lambda *a, **k: float("nan"),
        lambda *a, **k: "many",
        lambda *a, **k: 1 / 0,
    ],
)
def test_bad_caller_formula_is_reported_not_zero(formula):
    report = measure_flops(lambda: torch.atan(torch.ones(3)), custom_mapping={torch.ops.aten.atan: formula})
    assert report["total"]["status"] == "partial"
    assert any(d["operator"] == "aten.atan" for d in report["diagnostics"])


def test_global_registry_and_mapping_are_untouched():
    before = dict(flop_registry)
    mapping = {torch.ops.aten.atan: lambda *a, **k: 1}
    snapshot = dict(mapping)
    measure_flops(lambda: torch.atan(torch.ones(2)), custom_mapping=mapping)
    assert dict(flop_registry) == before
    assert mapping == snapshot
    assert torch.ops.aten.atan not in FlopCounterMode().flop_registry


def test_c18_ignored_empty_single_invocation_and_exceptions():
    inputs = torch.ones(2, 3)
    report = measure_flops(lambda: inputs.view(3, 2))
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 0
    assert report["ignored_operators"] == {"aten.view": {"calls": 1, "reason": "Metadata-only tensor view."}}
    counter = []
    report = measure_flops(lambda: counter.append(1))
    assert counter == [1] and report["total"]["status"] == "complete" and report["total"]["value"] == 0
    error = RuntimeError("workload failed")
    runs = []

    def failing():
        runs.append(1)
        raise error

    with pytest.raises(RuntimeError) as caught:
        measure_flops(failing)
    assert caught.value is error and runs == [1]
    with pytest.raises(TypeError):
        measure_flops(42)  # type: ignore[arg-type]


def test_c19_functional_arithmetic():
    inputs, other = torch.ones(2, 3), torch.ones(3)

    def workload():
        values = F.relu(torch.add(inputs + other, inputs, alpha=2)) * 2
        p = F.softmax(values, dim=-1)
        return p.sum() + p.mean()

    # 6 + 12 + 6 + 6 + 26 + 5 + 6 + 1 = 68
    report = measure_flops(workload)
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 68


INTS = torch.ones(3, dtype=torch.int64)
ONES = torch.ones(2, 3)


@pytest.mark.parametrize(
    ("workload", "status", "known"),
    [
        (lambda: INTS + 1, "complete", 0),
        (lambda: INTS + 0.5, "complete", 3),
        (lambda: INTS / 2, "complete", 3),
        (lambda: torch.exp(INTS), "complete", 3),
        (lambda: torch.sqrt(INTS), "complete", 3),
        (lambda: torch.rsqrt(INTS), "complete", 3),
        (lambda: torch.ones(4).eq(2).all(), "complete", 4),
        (lambda: torch.arange(4).eq(2).all().item(), "complete", 0),
        (lambda: ONES.sum(dim=(0, 1), dtype=torch.float64), "complete", 5),
        (lambda: ONES.mean(dim=(0, 1), dtype=torch.float64), "complete", 6),
        (lambda: ONES.sum(dim=(0, 1), dtype=torch.int64), "complete", 0),
        (lambda: ONES.sum(dim=(0, 1), dtype=torch.complex64), "partial", 0),
        (lambda: ONES.mean(dim=(0, 1), dtype=torch.complex64), "partial", 0),
        # truth.md 3 supersedes C20's rounding example: integer result 0, true division 3 -> complete 3;
        # floating inputs: 6 + 2·6 (divide, round) -> complete 18
        (lambda: (INTS / 2, torch.div(INTS, 2, rounding_mode="floor")), "complete", 3),
        (lambda: (ONES / 2, torch.div(ONES, 2, rounding_mode="floor")), "complete", 18),
    ],
)
def test_c20_integer_and_reduction_dtypes(workload, status, known):
    report = measure_flops(workload)
    assert report["total"]["status"] == status
    assert report["total"]["known_value"] == known


def test_c20_sum_into_out_buffer():
    out = torch.empty((), dtype=torch.float64)
    report = measure_flops(lambda: torch.sum(ONES, dim=(0, 1), out=out))
    assert report["total"] == {**report["total"], "status": "complete", "value": 5}
    int_out = torch.empty((), dtype=torch.int64)
    assert measure_flops(lambda: torch.sum(ONES, dim=(0, 1), out=int_out))["total"]["value"] == 0


def test_c21_complex_values():
    left = torch.ones(1, 2, dtype=torch.complex64)
    right = torch.ones(2, 1, dtype=torch.complex64)
    report = measure_flops(lambda: (left @ right, left + left))
    # truth.md 3: a complex multiply-accumulate is 4 real MACs (mm 4 · 2·1·2·1 = 16) and a complex
    # add 2 real adds per output element (2·2 = 4): complete 20
    assert report["by_operator"] == {"aten.mm": 16, "aten.add": 4}
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 20
    assert report["diagnostics"] == []


def test_c22_sparse_and_nested_layouts():
    sparse = torch.sparse_coo_tensor([[0, 1], [1, 2]], [1.0, 2.0], (3, 3))
    dense = torch.ones(3, 3)
    report = measure_flops(lambda: (sparse + sparse, dense + dense))
    assert report["total"]["status"] == "partial" and report["total"]["known_value"] == 9
    report = measure_flops(lambda: (sparse.sum(), dense.sum()))
    assert report["total"]["known_value"] == 8
    report = measure_flops(lambda: (sparse @ torch.ones(3, 2), dense @ torch.ones(3, 2)))
    assert report["total"]["status"] == "partial" and report["total"]["known_value"] == 36
    assert report["by_operator"] == {"aten.mm": 36}
    report = measure_flops(lambda: sparse + sparse, custom_mapping={torch.ops.aten.add: lambda *a, **k: 2})
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 2


def test_c23_cpu_fused_sdpa():
    q = torch.ones(2, 2, 3, 2)
    for length, expected in ((3, 480), (5, 816)):
        k = v = torch.ones(2, 2, length, 2)
        report = measure_flops(lambda k=k, v=v: F.scaled_dot_product_attention(q, k, v))
        assert report["total"]["known_value"] == expected


def test_c24_training_work():
    left = torch.ones(2, 3, requires_grad=True)
    right = torch.ones(3, 4, requires_grad=True)
    assert measure_flops(lambda: left @ right)["total"]["value"] == 48
    report = measure_flops(lambda: (left @ right).sum().backward())
    # three mm of 48 + a sum of 8 values (7) = 151
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 151
    x = torch.ones(2, 3, requires_grad=True)
    report = measure_flops(lambda: F.layer_norm(x, (3,)).sum().backward())
    # training-and-hardware.md 2 counts native_layer_norm_backward. N = 6, R = 2, no affine:
    # forward 6N + 2R = 40 and the sum 5; backward (input gradient only, output_mask [1, 0, 0]):
    # x̂ 2N = 12 + dx 7N = 42 -> 54; the sum's gradient is an expand (a view). 40 + 5 + 54 = 99.
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 99
    assert report["by_operator"]["aten.native_layer_norm_backward"] == 54
    assert report["by_phase"]["backward"]["value"] == 54 and report["by_phase"]["forward"]["value"] == 45
    assert report["diagnostics"] == []


def test_c11_training_dropout():
    x = torch.ones(2, 3)
    dropout = nn.Dropout(0.5).train()
    report = measure_flops(lambda: dropout(x))
    # real-models.md 2.1: the random draw is ignored, the mul and div_ applying it count (6 + 6)
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 12
    assert report["ignored_operators"]["aten.bernoulli_"] == {
        "calls": 1,
        "reason": "Random-number generation is excluded from FLOPs.",
    }
    assert "aten.empty_like" in report["ignored_operators"]
    report = measure_flops(lambda: nn.Dropout(1.0).train()(x))
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 6


def test_native_formula_failure_is_reported_not_raised(monkeypatch):
    """An inherited formula (an operator TorchScan never classified) that raises is reported."""
    from torch.utils import flop_counter

    def broken(*args, **kwargs):
        raise RuntimeError("formula bug")

    monkeypatch.setitem(flop_counter.flop_registry, torch.ops.aten.linalg_householder_product, broken)
    a, tau = torch.randn(4, 3), torch.randn(3)
    report = measure_flops(lambda: torch.linalg.householder_product(a, tau))
    assert report["total"]["status"] == "partial"
    (entry,) = [d for d in report["diagnostics"] if d["operator"] == "aten.linalg_householder_product"]
    assert entry["code"] == "unsupported_operator_formula"
    assert "formula bug" in entry["message"]
    # a formula registered for an operator TorchScan counts is never called (torch-versions.md 1)
    monkeypatch.setitem(flop_counter.flop_registry, torch.ops.aten.mm, broken)
    assert measure_flops(lambda: torch.ones(2, 3) @ torch.ones(3, 4))["total"]["value"] == 48


def test_input_gradients_under_autograd_grad_are_counted() -> None:
    """``torch.autograd.grad`` with respect to a leaf input (gradient penalties, saliency maps).

    PyTorch's ModuleTracker raises there ("A leaf node was passed to _will_engine_execute_node");
    the counter's tracker must not. Forward: addmm 2·8·4·4 = 256 and the sum 8·4 − 1 = 31; backward:
    only the input gradient mm 2·8·4·4 = 256 (no weight gradient is requested).
    """
    torch.manual_seed(0)
    x = torch.randn(8, 4, requires_grad=True)
    linear = nn.Linear(4, 4)
    report = measure_flops(lambda: torch.autograd.grad(linear(x).sum(), x))
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 543
    assert report["by_phase"]["forward"]["value"] == 287
    assert report["by_phase"]["backward"]["value"] == 256
    assert report["by_module"] == {"Linear": 512}

    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))

    def gradient_penalty() -> None:
        out = net(x)
        (grad,) = torch.autograd.grad(out.sum(), x, create_graph=True)
        (grad.pow(2).sum() + out.sum()).backward()

    penalty = measure_flops(gradient_penalty)
    assert penalty["total"]["status"] == "complete"
    phases = penalty["by_phase"]
    assert sum(phases[name]["value"] for name in phases) == penalty["total"]["value"]
