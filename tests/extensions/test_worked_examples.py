"""Worked examples §11.1–§11.4 of the extensions spec, through ``crawl_module``."""

from __future__ import annotations

import json
import math

import pytest
import torch
from torch import nn

from torchscan import IncompleteAnalysisError, ModuleHandler, crawl_module

ALL = frozenset(("module_flops", "macs", "dmas", "receptive_field", "effective_stride", "effective_padding"))


def _layer(report, path, call_index=0):
    return next(l for l in report["layers"] if l["path"] == path and l["call_index"] == call_index)


def _total(report, name):
    result = report["totals"][name]
    return result["status"], result["known_value"]


def _estimates(layer):
    return {
        k: v
        for k, v in layer["metrics"].items()
        if k not in ("calls", "operator_flops", "operator_flops_self")
    }


# --- §11.1 complex scaling ----------------------------------------------------------------------


class ComplexScale(nn.Module):
    def forward(self, signal, *, gain, tag="example"):
        return {"samples": (signal * gain,), "tag": tag}


CALLS: list = []


def estimate_complex_scale(call):
    """6 real FLOPs per complex multiply, no MAC, read + write per element (gain excluded)."""
    CALLS.append(call)
    signal = call.args[0] if call.args else call.kwargs["signal"]
    assert signal.dtype == torch.complex64
    n = call.output["samples"][0].numel()
    return {
        "module_flops": 6 * n,
        "macs": 0,
        "dmas": 2 * n,
        "receptive_field": 1,
        "effective_stride": 1,
        "effective_padding": 0,
    }


def complex_mul_flops(*args, out_shape=None, **kwargs):
    return 6 * math.prod(out_shape)


SIGNAL = torch.ones(2, 4, dtype=torch.complex64)
METHOD = f"custom_module_handler:{__name__}.estimate_complex_scale"


@pytest.fixture(autouse=True)
def _reset_calls():
    CALLS.clear()


def test_11_1_complex_scale():
    report = crawl_module(
        ComplexScale(),
        args=(SIGNAL,),
        kwargs={"gain": 1 + 2j, "tag": "demo"},
        strict=True,
        custom_modules={ComplexScale: ModuleHandler(estimate_complex_scale)},
        custom_mapping={torch.ops.aten.mul: complex_mul_flops},
    )
    (call,) = CALLS
    assert call.kwargs == {"gain": 1 + 2j, "tag": "demo"}
    assert call.output["tag"] == "demo"
    root = _layer(report, "")
    values = {k: (v["status"], v["value"], v["scope"], v["method"]) for k, v in _estimates(root).items()}
    assert values == {
        "module_flops": ("complete", 48, "module_call", METHOD),
        "macs": ("complete", 0, "module_call", METHOD),
        "dmas": ("complete", 16, "module_call", METHOD),
        "receptive_field": ("complete", 1, "module_call", METHOD),
        "effective_stride": ("complete", 1, "module_call", METHOD),
        "effective_padding": ("complete", 0, "module_call", METHOD),
    }
    assert root["metric_ownership"] == dict.fromkeys(ALL_ORDER, "module_call")
    assert "metric_owners" not in root
    assert [_total(report, n) for n in ("module_flops", "macs", "dmas", "operator_flops")] == [
        ("complete", 48),
        ("complete", 0),
        ("complete", 16),
        ("complete", 48),
    ]
    assert report["totals"]["module_flops"]["method"] == f"sum_module_estimates[{METHOD}]"
    assert report["operator_flops"]["by_operator"] == {"aten.mul": 48}
    assert report["diagnostics"] == []
    assert "demo" not in json.dumps(report)


ALL_ORDER = ("module_flops", "macs", "dmas", "receptive_field", "effective_stride", "effective_padding")


def test_11_1_without_operator_override_the_native_complex_count_agrees():
    # extensions-and-transformers.md 11.1 said strict analysis fails without the operator override;
    # truth.md 3 (a later chapter) counts a complex × complex multiply as 6 real FLOPs per output
    # element, so the native count is the override's own 6 · 8 = 48 and strict analysis passes.
    report = crawl_module(
        ComplexScale(),
        args=(SIGNAL,),
        kwargs={"gain": 1 + 2j},
        strict=True,
        custom_modules={ComplexScale: ModuleHandler(estimate_complex_scale)},
    )
    assert _total(report, "module_flops") == ("complete", 48)
    assert _total(report, "operator_flops") == ("complete", 48)
    assert report["operator_flops"]["by_operator"] == {"aten.mul": 48}


# --- §11.2 inclusive parent with delegated fields -------------------------------------------------


class ComplexPair(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = ComplexScale()
        self.second = ComplexScale()

    def forward(self, signal):
        signal = self.first(signal, gain=1 + 2j)["samples"][0]
        return self.second(signal, gain=2 + 3j)["samples"][0]


PAIR_CALLS: list = []


def estimate_pair(call):
    PAIR_CALLS.append(call)
    n = call.output.numel()
    return {"module_flops": 12 * n, "dmas": 4 * n}


def test_11_2_inclusive_parent():
    PAIR_CALLS.clear()
    handlers = {
        ComplexScale: ModuleHandler(estimate_complex_scale),
        ComplexPair: ModuleHandler(estimate_pair, frozenset({"module_flops", "dmas"})),
    }
    report = crawl_module(
        ComplexPair(),
        args=(SIGNAL,),
        custom_modules=handlers,
        custom_mapping={torch.ops.aten.mul: complex_mul_flops},
        strict=True,
    )
    assert len(PAIR_CALLS) == 1 and len(CALLS) == 2
    root = _layer(report, "")
    assert {k: (v["value"], v["scope"]) for k, v in _estimates(root).items()} == {
        "module_flops": (96, "subtree"),
        "dmas": (32, "subtree"),
    }
    assert root["metric_ownership"] == {"module_flops": "subtree", "dmas": "subtree"}
    assert "metric_owners" not in root
    for path in ("first", "second"):
        child = _layer(report, path)
        assert {k: (v["value"], v["scope"]) for k, v in _estimates(child).items()} == {
            "macs": (0, "module_call"),
            "receptive_field": (1, "module_call"),
            "effective_stride": (1, "module_call"),
            "effective_padding": (0, "module_call"),
        }
        assert child["metric_ownership"] == {
            "macs": "module_call",
            "receptive_field": "module_call",
            "effective_stride": "module_call",
            "effective_padding": "module_call",
        }
        owner = {"path": "", "call_index": 0}
        assert child["metric_owners"] == {"module_flops": owner, "dmas": owner}
    assert [_total(report, n) for n in ("module_flops", "macs", "dmas", "operator_flops")] == [
        ("complete", 96),
        ("complete", 0),
        ("complete", 32),
        ("complete", 96),
    ]


# --- §11.3 lower bound ------------------------------------------------------------------------


def lower_bound_scale(call):
    n = call.output["samples"][0].numel()
    partial = {
        "status": "partial",
        "value": None,
        "known_value": 4 * n,
        "unit": "FLOPs",
        "scope": "module_call",
        "method": "complex_real_multiplies_only",
    }
    return {"module_flops": partial, "macs": 0, "dmas": None}


def test_11_3_lower_bound():
    kwargs = {"args": (SIGNAL,), "kwargs": {"gain": 1 + 2j}}
    handlers = {ComplexScale: ModuleHandler(lower_bound_scale)}
    report = crawl_module(ComplexScale(), **kwargs, custom_modules=handlers)
    metrics = _layer(report, "")["metrics"]
    identity = f"custom_module_handler:{__name__}.lower_bound_scale"
    assert metrics["module_flops"]["status"] == "partial"
    assert metrics["module_flops"]["known_value"] == 32
    assert metrics["module_flops"]["method"] == f"{identity}:complex_real_multiplies_only"
    assert (metrics["macs"]["status"], metrics["macs"]["value"]) == ("complete", 0)
    assert (metrics["dmas"]["status"], metrics["dmas"]["method"]) == ("unavailable", identity)
    codes = {(d["code"], d["metric"]) for d in report["diagnostics"]}
    assert {("custom_metric_partial", "module_flops"), ("custom_metric_unavailable", "dmas")} <= codes
    # Omitted spatial fields fall back to the leaf formulas of an unknown type: diagnosed, incomplete.
    assert ("unsupported_module_metric", "receptive_field") in codes
    assert metrics["receptive_field"]["status"] == "unavailable"
    assert _total(report, "module_flops") == ("partial", 32)
    with pytest.raises(IncompleteAnalysisError):
        crawl_module(ComplexScale(), **kwargs, custom_modules=handlers, strict=True)


# --- §11.4 ownership cases ------------------------------------------------------------------------


class LinearPair(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(2, 2)
        self.second = nn.Linear(2, 2)

    def forward(self, x):
        return self.second(self.first(x))


class ChildModule(nn.Module):
    def __init__(self, child):
        super().__init__()
        self.child = child

    def forward(self, x):
        return self.child(x)


X = torch.ones(1, 2)


def _fixed(**values):
    def estimate(call):
        return dict(values)

    return estimate


def _counting(counter, **values):
    def estimate(call):
        counter.append(call)
        return dict(values)

    return estimate


def test_11_4_module_call_value_adds_to_children():
    plain = crawl_module(LinearPair(), args=(X,))
    report = crawl_module(
        LinearPair(), args=(X,), custom_modules={LinearPair: ModuleHandler(_fixed(module_flops=3))}
    )
    assert _total(report, "module_flops") == ("complete", 19)  # 8 + 8 + 3
    assert report["totals"]["macs"] == plain["totals"]["macs"]
    assert report["totals"]["dmas"] == plain["totals"]["dmas"]
    root = _layer(report, "")
    assert list(_estimates(root)) == ["module_flops"]
    assert root["metrics"]["module_flops"]["scope"] == "module_call"
    assert report["totals"]["module_flops"]["method"].startswith(
        "sum_module_estimates[custom_module_handler:"
    )
    assert "torchscan_module_formula" in report["totals"]["module_flops"]["method"]


def test_11_4_owned_field_suppresses_children():
    handler = ModuleHandler(_fixed(module_flops=100), frozenset({"module_flops"}))
    report = crawl_module(LinearPair(), args=(X,), custom_modules={LinearPair: handler})
    assert [l["path"] for l in report["layers"]] == ["", "first", "second"]
    assert _total(report, "module_flops") == ("complete", 100)
    assert _total(report, "macs") == ("complete", 8)
    for path in ("first", "second"):
        child = _layer(report, path)
        assert "module_flops" not in child["metrics"]
        assert child["metric_owners"]["module_flops"] == {"path": "", "call_index": 0}
        assert child["metrics"]["macs"]["status"] == "complete"


def test_11_4_owner_of_all_fields_skips_child_callbacks():
    linear_calls: list = []
    handlers = {
        LinearPair: ModuleHandler(_fixed(module_flops=100, macs=50, dmas=75), ALL),
        nn.Linear: ModuleHandler(_counting(linear_calls, module_flops=1)),
    }
    report = crawl_module(LinearPair(), args=(X,), custom_modules=handlers)
    assert linear_calls == []
    for path in ("first", "second"):
        assert set(_estimates(_layer(report, path))) == set()
    assert [_total(report, n) for n in ("module_flops", "macs", "dmas")] == [
        ("complete", 100),
        ("complete", 50),
        ("complete", 75),
    ]
    assert report["totals"]["parameters"]["value"] == 12


def _raises(call):
    raise RuntimeError("owner failed")


@pytest.mark.parametrize(
    "estimate",
    [_fixed(module_flops=None), _fixed(module_flops=-1), _fixed(macs=1), _raises],
    ids=["none", "negative", "omitted", "raising"],
)
def test_11_4_failed_owner_never_falls_back(estimate):
    handler = ModuleHandler(estimate, frozenset({"module_flops"}))
    report = crawl_module(LinearPair(), args=(X,), custom_modules={LinearPair: handler})
    assert report["totals"]["module_flops"]["status"] == "unavailable"
    for path in ("first", "second"):
        assert "module_flops" not in _layer(report, path)["metrics"]
    assert any(d["path"] == "" and d["metric"] == "module_flops" for d in report["diagnostics"])


def test_11_4_partial_owner():
    partial = {
        "status": "partial",
        "value": None,
        "known_value": 7,
        "unit": "FLOPs",
        "scope": "module_call",
        "method": "bound",
    }
    handler = ModuleHandler(_fixed(module_flops=partial), frozenset({"module_flops"}))
    report = crawl_module(LinearPair(), args=(X,), custom_modules={LinearPair: handler})
    assert _total(report, "module_flops") == ("partial", 7)


def test_11_4_shared_child_covered_only_inside_owner():
    shared = nn.Linear(2, 2)
    model = nn.Sequential(ChildModule(shared), shared)
    linear_calls: list = []
    handlers = {
        ChildModule: ModuleHandler(_fixed(module_flops=100, macs=50, dmas=75), ALL),
        nn.Linear: ModuleHandler(_counting(linear_calls, module_flops=8, macs=4, dmas=10)),
    }
    report = crawl_module(model, args=(X,), custom_modules=handlers)
    assert len(linear_calls) == 1
    assert _total(report, "module_flops") == ("complete", 108)
    assert _total(report, "macs") == ("complete", 54)
    assert report["totals"]["parameters"]["value"] == 6
    inner = _layer(report, "0.child", 0)
    assert inner["metric_owners"]["module_flops"] == {"path": "0", "call_index": 0}
    outer = _layer(report, "0.child", 1)
    assert outer["metrics"]["module_flops"]["value"] == 8
    assert "metric_owners" not in outer


def test_11_4_repeated_owner_covers_its_own_descendants():
    pair = LinearPair()
    calls: list = []
    handler = ModuleHandler(_counting(calls, module_flops=20, macs=10, dmas=30), ALL)
    report = crawl_module(nn.Sequential(pair, pair), args=(X,), custom_modules={LinearPair: handler})
    assert len(calls) == 2
    assert _total(report, "module_flops") == ("complete", 40)
    for index in (0, 1):
        for path in ("0.first", "0.second"):
            owner = _layer(report, path, index)["metric_owners"]["module_flops"]
            assert owner == {"path": "0", "call_index": index}


def test_11_4_outermost_owner_wins_per_field():
    handlers = {
        ChildModule: ModuleHandler(_fixed(module_flops=100), frozenset({"module_flops"})),
        LinearPair: ModuleHandler(_fixed(module_flops=999, macs=50), frozenset({"module_flops", "macs"})),
    }
    report = crawl_module(ChildModule(LinearPair()), args=(X,), custom_modules=handlers)
    assert _total(report, "module_flops") == ("complete", 100)
    assert _total(report, "macs") == ("complete", 50)
    for path in ("child.first", "child.second"):
        owners = _layer(report, path)["metric_owners"]
        assert owners["module_flops"] == {"path": "", "call_index": 0}
        assert owners["macs"] == {"path": "child", "call_index": 0}
    inner = _layer(report, "child")
    assert "module_flops" not in inner["metrics"]
    assert inner["metric_owners"] == {"module_flops": {"path": "", "call_index": 0}}


def test_11_4_base_class_registration_overrides_builtin_formula():
    handler = ModuleHandler(_fixed(module_flops=7, macs=3, dmas=5))
    report = crawl_module(nn.Linear(2, 2), args=(X,), custom_modules={nn.Module: handler})
    assert _total(report, "module_flops") == ("complete", 7)
    assert _total(report, "macs") == ("complete", 3)
    assert _total(report, "operator_flops") == ("complete", 8)


def test_recursive_owner_runs_once():
    class Recursive(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x, depth=2):
            x = self.lin(x)
            return self(x, depth - 1) if depth else x

    calls: list = []
    report = crawl_module(
        Recursive(),
        args=(X,),
        custom_modules={Recursive: ModuleHandler(_counting(calls, module_flops=1, macs=1, dmas=1), ALL)},
    )
    assert len(calls) == 1
    assert _total(report, "module_flops") == ("complete", 1)
    assert _layer(report, "", 1)["metric_owners"]["macs"] == {"path": "", "call_index": 0}


def test_structure_mode_runs_no_callback():
    calls: list = []
    report = crawl_module(
        LinearPair(),
        args=(X,),
        mode="structure",
        custom_modules={LinearPair: ModuleHandler(_counting(calls, module_flops=1), ALL)},
    )
    assert calls == []
    assert report["totals"]["module_flops"]["method"] == "not_requested"
    assert all(set(l["metrics"]) == {"calls"} for l in report["layers"])
    assert all("metric_ownership" not in l and "metric_owners" not in l for l in report["layers"])
    assert report["diagnostics"] == []


def test_handler_covers_functional_work_in_its_frame():
    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            return self.lin(x) + x

    # Without a handler the functional formulas estimate the add (real-models.md 1): 8 + 2 FLOPs.
    plain = crawl_module(Residual(), args=(X,))
    assert _total(plain, "module_flops") == ("complete", 10)
    # The handler estimates the residual add (2 FLOPs, 0 MACs, 6 DMAs) for the call's own frame.
    handler = ModuleHandler(_fixed(module_flops=2, macs=0, dmas=6))
    report = crawl_module(Residual(), args=(X,), custom_modules={Residual: handler}, strict=True)
    assert _total(report, "module_flops") == ("complete", 10)
    # Supplying only module_flops: the handler's value is kept (custom handlers take precedence) and
    # the functional formulas estimate the frame's MACs and DMAs (the add: 0 MACs, 2 + 2 + 2 DMAs).
    report = crawl_module(
        Residual(), args=(X,), custom_modules={Residual: ModuleHandler(_fixed(module_flops=7))}
    )
    root = _layer(report, "")
    assert root["metrics"]["module_flops"]["value"] == 7
    assert [root["metrics"][n]["value"] for n in ("macs", "dmas")] == [0, 6]
    assert not [d for d in report["diagnostics"] if d["code"] == "unestimated_functional_work"]


def test_failed_child_forward_inside_owner():
    class Flaky(nn.Module):
        def forward(self, x):
            raise ValueError("flaky")

    class Catching(nn.Module):
        def __init__(self):
            super().__init__()
            self.flaky = Flaky()
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            try:
                self.flaky(x)
            except ValueError:
                pass
            return self.lin(x)

    calls: list = []
    handlers = {Flaky: ModuleHandler(_counting(calls, module_flops=1), frozenset({"module_flops"}))}
    report = crawl_module(Catching(), args=(X,), custom_modules=handlers)
    assert calls == []
    flaky = _layer(report, "flaky")
    assert flaky["output"] == {"kind": "failed"}
    assert flaky["metrics"]["module_flops"]["method"] == "forward_failed"
    assert flaky["metrics"]["module_flops"]["scope"] == "subtree"
    assert flaky["metrics"]["macs"]["scope"] == "module_call"
    assert ("module_forward_error", "calls") in {(d["code"], d["metric"]) for d in report["diagnostics"]}
    assert _total(report, "module_flops") == ("partial", 8)  # known = the successful Linear
    assert "metric_owners" not in _layer(report, "lin")  # the ownership stack was unwound
