"""validate_generation_report (generation.md 2) on hand-written reports: exact locations of problems."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.report.generation_reports import generation_report
from torchscan.report.validate import load_report, report_kind, validate_report
from torchscan.report.validate.generation import validate_generation_report


def test_the_hand_written_report_and_its_arithmetic():
    report = generation_report()
    assert [s["context_tokens"] for s in report["steps"]] == [4, 5, 6]  # running sum of input tokens
    assert [s["phase"] for s in report["steps"]] == ["prefill", "decode", "decode"]
    assert report["prefill"]["flops"]["value"] == 1000
    assert report["decode"]["flops"]["value"] == 230 and report["decode"]["steps"] == 2
    assert report["decode_per_token"]["flops"]["value"] == 115  # (110 + 120) / 2
    assert report["decode_per_token"]["attention_kv_bytes"]["value"] == 352  # (320 + 384) / 2
    # two points fit exactly: slope (120 - 110) / (6 - 5) = 10, intercept 110 - 10 x 5 = 60
    assert report["decode_fit"]["flops"] == {"intercept": 60.0, "slope": 10.0, "max_residual": 0.0}
    assert report["decode_fit"]["attention_kv_bytes"] == {
        "intercept": 0.0,
        "slope": 64.0,
        "max_residual": 0.0,
    }
    # step 1: 110 FLOPs / 500 bytes = 0.22 FLOPs/byte; max(110 / 1e12, 500 / 1e11) = 5e-09 s: memory
    step = report["steps"][1]
    assert step["arithmetic_intensity"]["value"] == 110 / 500
    assert step["roofline_seconds"]["value"] == 500 / 1e11
    assert step["bound"] == "memory"
    # prefill: 1000 / 800 = 1.25 FLOPs/byte, below the ridge of 10: memory-bound too
    assert report["steps"][0]["bound"] == "memory"


def test_valid_report_loads_as_generation():
    report = generation_report()
    assert report_kind(report) == "generation"
    assert validate_report(report) == "generation"
    assert load_report(json.dumps(report))["report_type"] == "generation"
    validate_generation_report(generation_report(hardware=False))


def _set(report: dict[str, Any], path: list[Any], value: Any) -> None:
    target = report
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value


@pytest.mark.parametrize(
    ("path", "value", "location"),
    [
        (["schema_version"], 2, "schema_version"),
        (["steps", 1, "phase"], "prefill", "steps[1].phase"),
        (["steps", 2, "index"], 1, "steps[2].index"),
        (["steps", 0, "context_tokens"], -1, "steps[0].context_tokens"),
        (["steps", 1, "flops", "unit"], "MACs", "steps[1].flops.unit"),
        (["steps", 1, "flops", "scope"], "workload", "steps[1].flops.scope"),
        (["steps", 1, "bound"], "latency", "steps[1].bound"),
        (["steps", 1, "roofline_seconds", "method"], "guess", "steps[1].roofline_seconds.method"),
        (["decode", "steps"], 3, "decode.steps"),
        (["decode_fit", "flops", "slope"], "10", "decode_fit.flops.slope"),
        (["decode_fit", "flops", "max_residual"], -1.0, "decode_fit.flops.max_residual"),
        (["decode_fit", "attention_kv_bytes"], KeyError, "decode_fit.attention_kv_bytes"),
        (["context", "use_cache"], "yes", "context.use_cache"),
        (["context", "cache_class"], KeyError, "context.cache_class"),
        (["context", "hardware", "peak_flops_per_second"], 0, "context.hardware"),
        (["outside_steps", "flops", "value"], 11, "outside_steps.flops"),
        (["operator_flops", "by_phase"], KeyError, "operator_flops.by_phase"),
        (["diagnostics"], {}, "diagnostics"),
    ],
)
def test_problems_are_named_by_location(path, value, location):
    report = generation_report()
    _set(report, path, value)
    if path == ["outside_steps", "flops", "value"]:
        report["outside_steps"]["flops"]["known_value"] = 11  # consistent result, wrong sum
    with pytest.raises(ValueError, match=r"^" + location.replace("[", r"\[").replace("]", r"\]")):
        validate_report(report)


def test_hardware_figures_need_stated_facts():
    report = generation_report()
    del report["context"]["hardware"]
    with pytest.raises(ValueError, match=r"steps\[0\].arithmetic_intensity: a hardware figure needs"):
        validate_report(report)


def test_timing_is_checked():
    report = generation_report()
    seconds = {
        "status": "complete",
        "value": 0.5,
        "known_value": 0.5,
        "unit": "seconds",
        "scope": "first_token",
        "method": "synchronized_perf_counter",
    }
    report["timing"] = {
        "time_to_first_token": seconds,
        "decode_step_mean": {**seconds, "scope": "decode_step_mean"},
        "decode_step_iqr": {**seconds, "scope": "decode_step"},
        "decode_step_seconds": [0.5, 0.5],
    }
    validate_report(report)
    report["timing"]["decode_step_seconds"][1] = -1
    with pytest.raises(ValueError, match=r"timing.decode_step_seconds\[1\]"):
        validate_report(report)
    report["timing"]["decode_step_seconds"][1] = 0.25
    with pytest.raises(ValueError, match=r"timing\.decode_step_mean\.value: must be the mean"):
        validate_report(report)
    report["timing"]["decode_step_seconds"][1] = 0.5
    report["timing"]["decode_step_mean"]["unit"] = "ms"
    with pytest.raises(ValueError, match=r"timing\.decode_step_mean\.unit"):
        validate_report(report)


def test_not_a_json_tree_and_not_an_object():
    with pytest.raises(ValueError, match="must be an object"):
        validate_generation_report([])
    report = generation_report()
    report["context"]["model_type"] = float("nan")
    with pytest.raises(ValueError, match=r"context\.model_type"):
        validate_report(report)


def test_stated_hardware_needs_every_figure_on_every_step():
    report = generation_report()
    del report["steps"][2]["roofline_seconds"]
    with pytest.raises(ValueError, match=r"steps\[2\]\.roofline_seconds: is missing"):
        validate_report(report)
