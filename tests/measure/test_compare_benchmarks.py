"""compare_benchmarks (workloads.md 8.5)."""

from __future__ import annotations

import copy
import json
import math
import sys

import pytest
import torch

from torchscan.measure.compare import compare_benchmarks
from torchscan.measure.latency import measure_latency

TIMING = {"first_call_latency", "latency", "latency_iqr", "throughput"}


@pytest.fixture(scope="module")
def base():
    x = torch.ones(8)
    return measure_latency(lambda: x + 1, device="cpu", inputs=x, min_run_time=0.001, min_repeats=2)


def _set(report, name, value):
    report["totals"][name]["value"] = value
    report["totals"][name]["known_value"] = value


def _pair(base, before_latency, after_latency, after_iqr=0.25):
    before, after = copy.deepcopy(base), copy.deepcopy(base)
    _set(before, "latency", before_latency)
    _set(before, "latency_iqr", 0.25)
    _set(after, "latency", after_latency)
    _set(after, "latency_iqr", after_iqr)
    return before, after


@pytest.mark.parametrize(
    ("after_latency", "after_iqr", "label"),
    [
        (0.125, 0.25, "faster"),
        (0.75, 0.25, "within_variability"),
        (1.0, 0.25, "slower"),
        (0.5, 0, "within_variability"),
    ],
)
def test_latency_labels(base, after_latency, after_iqr, label) -> None:
    before, after = _pair(base, 0.5, after_latency, after_iqr)
    result = compare_benchmarks(before, after, check=lambda: None)
    assert result["latency_change"] == label
    assert result["totals"]["latency"]["delta"] == after_latency - 0.5


@pytest.mark.parametrize("check", [lambda: None, lambda: True])
def test_passing_check(base, check) -> None:
    before, after = _pair(base, 0.5, 0.125)
    kept_before, kept_after = copy.deepcopy(before), copy.deepcopy(after)
    result = compare_benchmarks(before, after, check=check)
    assert list(result) == [
        "schema_version",
        "report_type",
        "before",
        "after",
        "totals",
        "output_check",
        "latency_change",
        "context_changes",
    ]
    assert result["schema_version"] == 1
    assert result["report_type"] == "benchmark_comparison"
    assert result["output_check"] == "passed"
    assert set(result["totals"]) == TIMING
    for name, entry in result["totals"].items():
        assert entry["status"] == "complete"
        assert entry["delta"] == after["totals"][name]["value"] - before["totals"][name]["value"]
    assert result["before"] == kept_before and result["after"] == kept_after
    assert result["context_changes"] == {}
    result["before"]["context"]["device"] = "changed"
    result["totals"]["latency"]["before"]["value"] = -1
    assert before == kept_before and after == kept_after
    assert json.loads(json.dumps(result, allow_nan=False)) == result


def _assertion_failure() -> None:
    raise AssertionError("outputs differ")


@pytest.mark.parametrize("check", [lambda: False, _assertion_failure])
def test_failing_check_withholds_every_delta(base, check) -> None:
    before, after = _pair(base, 0.5, 0.125)
    result = compare_benchmarks(before, after, check=check)
    assert result["output_check"] == "failed"
    for name, entry in result["totals"].items():
        assert entry["status"] == "unavailable" and entry["delta"] is None
        assert entry["before"] == before["totals"][name] and entry["after"] == after["totals"][name]
    assert result["latency_change"] == "unavailable"


def test_check_errors_and_bad_results(base) -> None:
    before, after = _pair(base, 0.5, 0.125)

    def key_error() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        compare_benchmarks(before, after, check=key_error)
    for outcome in ("yes", 1, 0):
        with pytest.raises(ValueError, match="check must return"):
            compare_benchmarks(before, after, check=lambda outcome=outcome: outcome)
    with pytest.raises(TypeError, match="check must be callable"):
        compare_benchmarks(before, after, check=None)  # type: ignore[arg-type]
    called: list[int] = []
    broken = copy.deepcopy(after)
    broken["schema_version"] = 2
    with pytest.raises(ValueError):
        compare_benchmarks(before, broken, check=lambda: called.append(1))
    assert called == []


def test_allowed_context_changes(base) -> None:
    before, after = _pair(base, 0.5, 0.5)
    after["context"]["warmup"] = 9
    after["context"]["num_threads"] += 1
    result = compare_benchmarks(before, after, check=lambda: None)
    threads = before["context"]["num_threads"]
    assert result["context_changes"] == {
        "num_threads": {"before": threads, "after": threads + 1},
        "warmup": {"before": 5, "after": 9},
    }
    assert list(result["context_changes"]) == ["num_threads", "warmup"]


def test_incompatible_reports(base) -> None:
    before, after = _pair(base, 0.5, 0.5)
    changed = copy.deepcopy(after)
    changed["context"]["device_name"] = "another CPU"
    with pytest.raises(ValueError, match="device_name"):
        compare_benchmarks(before, changed, check=lambda: None)
    missing = copy.deepcopy(after)
    del missing["context"]["cuda_version"]
    with pytest.raises(ValueError, match="cuda_version"):
        compare_benchmarks(before, missing, check=lambda: None)
    no_inputs = copy.deepcopy(after)
    no_inputs["inputs"] = {"kind": "none"}
    with pytest.raises(ValueError, match="input metadata"):
        compare_benchmarks(before, no_inputs, check=lambda: None)
    plain = measure_latency(lambda: None, device="cpu", min_run_time=0.001, min_repeats=2)
    with pytest.raises(ValueError, match="caller-supplied"):
        compare_benchmarks(plain, copy.deepcopy(plain), check=lambda: None)


def _mutations():
    def version_two(r):
        r["schema_version"] = 2

    def version_true(r):
        r["schema_version"] = True

    def no_iqr(r):
        del r["totals"]["latency_iqr"]

    def per_minute(r):
        r["totals"]["throughput"]["unit"] = "calls/min"

    def zero_latency(r):
        _set(r, "latency", 0)

    def nan_somewhere(r):
        r["measurement"]["raw_times_seconds"][0] = math.nan

    return [version_two, version_true, no_iqr, per_minute, zero_latency, nan_somewhere]


@pytest.mark.parametrize("mutate", _mutations())
def test_invalid_reports(base, mutate) -> None:
    before, after = _pair(base, 0.5, 0.5)
    mutate(after)
    with pytest.raises(ValueError):
        compare_benchmarks(before, after, check=lambda: None)


def test_list_and_zero_iqr(base) -> None:
    before, after = _pair(base, 0.5, 0.5)
    with pytest.raises(ValueError):
        compare_benchmarks([before], after, check=lambda: None)
    _set(after, "latency_iqr", 0)
    assert compare_benchmarks(before, after, check=lambda: None)["output_check"] == "passed"


def test_partial_latency(base) -> None:
    before, after = _pair(base, 0.5, 0.5)
    after["totals"]["latency"]["status"] = "partial"
    after["totals"]["latency"]["value"] = None
    result = compare_benchmarks(before, after, check=lambda: None)
    assert result["totals"]["latency"]["status"] == "partial"
    assert result["totals"]["latency"]["delta"] is None
    assert result["latency_change"] == "unavailable"


def test_different_methods(base) -> None:
    before, after = _pair(base, 0.5, 0.125)
    after["totals"]["latency"]["method"] = "manual"
    result = compare_benchmarks(before, after, check=lambda: None)
    entry = result["totals"]["latency"]
    assert (entry["status"], entry["delta"]) == ("unavailable", None)
    assert result["latency_change"] == "unavailable"


def test_extra_metric_on_one_side(base) -> None:
    before, after = _pair(base, 0.5, 0.5)
    if sys.platform in ("linux", "darwin"):
        from torchscan.process import measure_peak_rss

        rss = measure_peak_rss([sys.executable, "-c", "pass"])
    else:  # the comparison rule does not depend on where the figure came from
        rss = {"status": "complete", "value": 1, "known_value": 1, "unit": "bytes"}
        rss |= {"scope": "child_process_lifetime", "method": "os.wait4.ru_maxrss"}
    after["totals"]["process_peak_rss"] = rss
    result = compare_benchmarks(before, after, check=lambda: None)
    entry = result["totals"]["process_peak_rss"]
    assert entry["before"] is None and entry["after"] == rss
    assert (entry["status"], entry["delta"]) == ("unavailable", None)
