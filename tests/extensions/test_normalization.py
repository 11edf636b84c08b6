"""Normalization of callback results into MetricResults and diagnostics (extensions spec §4)."""

from __future__ import annotations

import functools
import math

import pytest
from torch import nn

from torchscan import ModuleCall, ModuleHandler
from torchscan.extensions import callback_identity, run_caller_handler
from torchscan.report.schema import ESTIMATE_FIELDS

CALL = ModuleCall(nn.Identity(), (), {}, None)
ALL = ESTIMATE_FIELDS


def _run(returned, owned=frozenset(), requested=ALL):
    def estimate(call):
        return returned

    return run_caller_handler(ModuleHandler(estimate, owned), CALL, requested, "p")


def _codes(outcome):
    return [(d["code"], d["metric"]) for d in outcome.diagnostics]


def _structured(status, value, known, unit="FLOPs", scope="x", method="mine"):
    return {
        "status": status,
        "value": value,
        "known_value": known,
        "unit": unit,
        "scope": scope,
        "method": method,
    }


def estimate_scale(call):
    return {}


def build():
    return lambda call: {}


class CallableEstimator:
    def __call__(self, call):
        return {}


def test_callback_identity():
    assert callback_identity(estimate_scale) == f"{__name__}.estimate_scale"
    assert callback_identity(build()) == f"{__name__}.build.<locals>.<lambda>"
    assert callback_identity(functools.partial(estimate_scale)) == "functools.partial"
    assert callback_identity(CallableEstimator()) == f"{__name__}.CallableEstimator"


def test_numbers_become_complete_and_keep_int():
    outcome = _run({"module_flops": 0, "macs": 2.0, "dmas": 7})
    flops = outcome.metrics["module_flops"]
    assert flops["status"] == "complete" and flops["value"] == 0 and isinstance(flops["value"], int)
    assert isinstance(outcome.metrics["macs"]["value"], float)
    assert flops["scope"] == "module_call"
    assert flops["method"] == f"custom_module_handler:{__name__}._run.<locals>.estimate"
    assert set(outcome.metrics) == {"module_flops", "macs", "dmas"}  # omitted fields fall back
    assert outcome.diagnostics == []


def test_method_label_and_scope():
    def estimate(call):
        return {"module_flops": 1, "macs": _structured("complete", 3, 3, unit="MACs", method="conv")}

    outcome = run_caller_handler(ModuleHandler(estimate, frozenset({"macs"})), CALL, ALL, "p")
    identity = f"{__name__}.test_method_label_and_scope.<locals>.estimate"
    assert outcome.metrics["module_flops"]["method"] == f"custom_module_handler:{identity}"
    assert outcome.metrics["macs"]["method"] == f"custom_module_handler:{identity}:conv"
    assert outcome.metrics["macs"]["scope"] == "subtree"  # the supplied scope "x" is replaced
    assert outcome.metrics["module_flops"]["scope"] == "module_call"


@pytest.mark.parametrize("value", [-1, True, math.nan, math.inf, "5", [1], {"status": "bogus"}])
def test_invalid_bare_and_structured_values(value):
    outcome = _run({"module_flops": value, "macs": 4})
    assert outcome.metrics["module_flops"]["status"] == "unavailable"
    assert outcome.metrics["macs"]["value"] == 4  # a failure affects only its field
    assert _codes(outcome) == [("custom_metric_invalid", "module_flops")]
    assert "_run.<locals>.estimate" in outcome.diagnostics[0]["message"]  # the callback identity


@pytest.mark.parametrize(
    "value",
    [
        _structured("complete", 2, 1),
        _structured("partial", 2, 2),
        _structured("unavailable", None, 1),
        _structured("bogus", None, None),
        _structured("complete", 2, 2, unit="MACs"),
        _structured("complete", 2, 2, scope=""),
        _structured("complete", 2, 2, method=""),
        {**_structured("complete", 2, 2), "extra": 1},
    ],
)
def test_invalid_structured_results(value):
    outcome = _run({"module_flops": value})
    assert outcome.metrics["module_flops"]["status"] == "unavailable"
    assert _codes(outcome) == [("custom_metric_invalid", "module_flops")]


def test_reading_a_field_that_raises_is_invalid():
    class Exploding(dict):
        def __getitem__(self, key):
            raise RuntimeError("no")

    outcome = _run({"module_flops": Exploding(_structured("complete", 1, 1))})
    assert _codes(outcome) == [("custom_metric_invalid", "module_flops")]


def test_partial_and_unavailable_results():
    outcome = _run({"module_flops": _structured("partial", None, 32), "dmas": None})
    assert outcome.metrics["module_flops"]["status"] == "partial"
    assert outcome.metrics["module_flops"]["known_value"] == 32
    assert outcome.metrics["dmas"]["status"] == "unavailable"
    assert _codes(outcome) == [
        ("custom_metric_partial", "module_flops"),
        ("custom_metric_unavailable", "dmas"),
    ]


@pytest.mark.parametrize("returned", [None, 5, [("macs", 1)], {"flops": 1}, {1: 2}])
def test_invalid_results_make_every_requested_field_unavailable(returned):
    outcome = _run(returned, requested=("module_flops", "macs"))
    assert set(outcome.metrics) == {"module_flops", "macs"}
    assert all(m["status"] == "unavailable" for m in outcome.metrics.values())
    assert _codes(outcome) == [("custom_handler_invalid", "module_flops"), ("custom_handler_invalid", "macs")]


def test_raising_callback_reports_identity_type_and_text():
    def explode(call):
        raise KeyError("boom")

    outcome = run_caller_handler(
        ModuleHandler(explode, frozenset({"macs"})), CALL, ("module_flops", "macs"), "p"
    )
    assert [d["code"] for d in outcome.diagnostics] == ["custom_handler_error"] * 2
    message = outcome.diagnostics[0]["message"]
    assert "explode" in message and "KeyError" in message and "boom" in message
    assert outcome.metrics["macs"]["scope"] == "subtree"
    assert outcome.metrics["module_flops"]["scope"] == "module_call"


def test_enumeration_failure_is_an_error():
    class BadMapping(dict):
        def keys(self):
            raise ValueError("cannot list")

    outcome = _run(BadMapping(), requested=("macs",))
    assert _codes(outcome) == [("custom_handler_error", "macs")]


def test_owned_omitted_field_becomes_unavailable():
    outcome = _run({"macs": 1}, owned=frozenset({"module_flops", "macs"}))
    assert outcome.metrics["module_flops"]["status"] == "unavailable"
    assert outcome.metrics["module_flops"]["scope"] == "subtree"
    assert _codes(outcome) == [("custom_metric_unavailable", "module_flops")]
    assert "dmas" not in outcome.metrics


def test_values_for_covered_fields_are_ignored_without_diagnostic():
    outcome = _run({"module_flops": -1, "macs": 2}, requested=("macs",))
    assert set(outcome.metrics) == {"macs"}
    assert outcome.diagnostics == []


def test_diagnostics_carry_path_and_warning_severity():
    outcome = _run({"dmas": None})
    (entry,) = outcome.diagnostics
    assert entry["path"] == "p" and entry["severity"] == "warning"
