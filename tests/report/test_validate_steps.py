"""Validation of a FlopReport's operator bytes and steps (generation.md 1): sums, key sets, statuses."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from torch import nn

from torchscan import measure_flops
from torchscan.report.validate.operators import validate_flop_report


@pytest.fixture(scope="module")
def stepped():
    model = nn.Linear(4, 3)
    x, one = torch.ones(2, 4), torch.ones(1, 4)

    def workload():
        model(x)
        (model(one) * 2).sum()

    return measure_flops(workload, modules=model, by_step=True, bytes=True)


def broken(report, change):
    copied = copy.deepcopy(report)
    change(copied)
    return copied


def test_a_measured_report_is_valid(stepped):
    validate_flop_report(json.loads(json.dumps(stepped)))
    assert len(stepped["by_step"]) == 2 and stepped["outside_steps"]["flops"]["value"] > 0
    assert [step["attention_kv_bytes"]["method"] for step in stepped["by_step"]] == ["not_applicable"] * 2


def _bump(report, key):
    report["by_step"][0][key]["value"] += 1
    report["by_step"][0][key]["known_value"] += 1


CASES = [
    (lambda r: _bump(r, "flops"), "flops of steps and outside_steps must sum exactly"),
    (lambda r: _bump(r, "operator_bytes"), "operator_bytes of steps and outside_steps must sum exactly"),
    (lambda r: r["by_step"][1].update(index=0), r"by_step\[1\]\.index: must be the integer 1"),
    (lambda r: r["by_step"][0].update(extra=1), "exactly the keys"),
    (lambda r: r["by_step"][0].pop("input_tokens"), "exactly the keys"),
    (lambda r: r["by_step"][0].update(input_tokens=-1), "input_tokens"),
    (lambda r: r.pop("outside_steps"), "outside_steps: is required"),
    (lambda r: r.pop("operator_bytes"), "operator_bytes: is required|needs operator_bytes"),
    (lambda r: r["outside_steps"].pop("attention_kv_bytes"), "exactly the keys"),
    (lambda r: r["by_step"][0]["flops"].update(scope="workload"), "scope step"),
    (lambda r: r["outside_steps"]["operator_bytes"].update(method="x"), "method torchscan_operator_bytes"),
    (lambda r: r["by_step"][0]["attention_kv_bytes"].update(unit="FLOPs"), "unit bytes"),
    # A Linear has no attention: its steps' KV bytes are not_applicable, with their reason (truth.md 4).
    (
        lambda r: r.update(diagnostics=[]),
        "not_applicable attention_kv_bytes needs attention_kv_not_applicable",
    ),
    (
        lambda r: r["by_step"][0]["attention_kv_bytes"].update(method="torchscan_attention_kv_bytes"),
        "attention_not_fused",
    ),
    (
        lambda r: r["by_step"][0]["attention_kv_bytes"].update(status="complete", value=0, known_value=0),
        "a not_applicable result must be unavailable",
    ),
    (lambda r: r.update(by_operator_bytes={"aten.addmm": 1}), "sum exactly to operator_bytes"),
    (lambda r: r.update(by_operator_bytes=dict(reversed(r["by_operator_bytes"].items()))), "sorted"),
    (lambda r: r["by_operator_bytes"].update({"aten.mm": -1}), "nonnegative integer"),
    (lambda r: r["operator_bytes"].update(scope="step"), "scope workload"),
    (lambda r: r.update(by_step={}), "by_step must be a list"),
]


@pytest.mark.parametrize(("change", "message"), CASES)
def test_broken_step_reports_are_refused(stepped, change, message):
    with pytest.raises(ValueError, match=message):
        validate_flop_report(broken(stepped, change))


def test_statuses_must_agree_with_the_total(stepped):
    def partial_step(report):
        step = report["by_step"][0]["flops"]
        step.update(status="partial", value=None)

    with pytest.raises(ValueError, match="all complete exactly when the total is"):
        validate_flop_report(broken(stepped, partial_step))

    def partial_total(report):
        report["total"].update(status="partial", value=None)
        report["by_phase"]["forward"].update(status="partial", value=None)

    with pytest.raises(ValueError, match="all complete exactly when the total is"):
        validate_flop_report(broken(stepped, partial_total))


def test_bytes_only_report_is_valid_without_steps():
    report = measure_flops(lambda: torch.ones(3) * 2, bytes=True)
    validate_flop_report(report)
    # ones writes 12 bytes; mul reads those 12 and writes 12
    assert report["operator_bytes"]["value"] == 3 * 4 * 3
    assert report["by_operator_bytes"] == {"aten.mul": 24, "aten.ones": 12}
