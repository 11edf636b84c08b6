"""A catalogue of bad arguments across the public API (issue #11, item 10).

Every case asserts three things: the exception type (`TypeError` for a wrong type, `ValueError` for
a bad value), that the message names the offending argument, and that no model or workload code ran.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from torch import nn

import torchscan


class _Probe(nn.Module):
    """A model that counts its forward calls: a bad argument must be refused before any of them."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.fc(x)


@dataclass(frozen=True)
class Bad:
    call: Callable[[_Probe, Callable[[], Any]], object]
    error: type[Exception]
    names: str  # a word the message must contain: the argument (or key) at fault


def _crawl(**kwargs: Any) -> Callable[[_Probe, Callable[[], Any]], object]:
    options = {"input_shape": (4,), **kwargs}
    return lambda model, _work: torchscan.crawl_module(model, **options)


def _summary(**kwargs: Any) -> Callable[[_Probe, Callable[[], Any]], object]:
    options = {"input_shape": (4,), **kwargs}
    return lambda model, _work: torchscan.summary(model, **options)


def _flops(**kwargs: Any) -> Callable[[_Probe, Callable[[], Any]], object]:
    return lambda _model, work: torchscan.measure_flops(work, **kwargs)


def _api(name: str, **kwargs: Any) -> Callable[[_Probe, Callable[[], Any]], object]:
    fn = getattr(torchscan, name)
    if name == "measure_peak_rss":
        return lambda _model, _work: fn(kwargs.pop("command", ["true"]), **kwargs)
    options = {"device": "cpu", **kwargs}
    return lambda _model, work: fn(work, **options)


def _latency(**kwargs: Any) -> Callable[[_Probe, Callable[[], Any]], object]:
    return _api("measure_latency", **kwargs)


def _workload(**kwargs: Any) -> Callable[[_Probe, Callable[[], Any]], object]:
    return _api("measure_workload", **kwargs)


def _profile(**kwargs: Any) -> Callable[[_Probe, Callable[[], Any]], object]:
    return _api("profile_workload", **kwargs)


def _memory(**kwargs: Any) -> Callable[[_Probe, Callable[[], Any]], object]:
    return _api("measure_peak_memory", **kwargs)


def _metric(**kwargs: Any) -> Callable[[_Probe, Callable[[], Any]], object]:
    options = {"status": "complete", "value": 1, "unit": "FLOPs", "scope": "model", "method": "m", **kwargs}
    return lambda _model, _work: torchscan.metric_result(**options)


def _hardware_free_cases() -> dict[str, Bad]:
    return {
        # --- crawl_module -------------------------------------------------------------------------
        "crawl-module-not-a-module": Bad(
            lambda _m, _w: torchscan.crawl_module("model", (4,)), TypeError, "module"
        ),
        "crawl-no-input": Bad(lambda m, _w: torchscan.crawl_module(m), ValueError, "input_shape"),
        "crawl-shape-and-args": Bad(_crawl(args=(torch.ones(1, 4),)), ValueError, "input_shape"),
        "crawl-shape-str": Bad(_crawl(input_shape="4"), TypeError, "input_shape"),
        "crawl-shape-negative": Bad(_crawl(input_shape=(-4,)), ValueError, "input_shape"),
        "crawl-shape-float": Bad(_crawl(input_shape=(4.0,)), TypeError, "input_shape"),
        "crawl-shape-bool": Bad(_crawl(input_shape=(True,)), TypeError, "input_shape"),
        "crawl-shape-overflow": Bad(_crawl(input_shape=(2**40, 2**40)), ValueError, "input_shape"),
        "crawl-shape-tensor": Bad(_crawl(input_shape=torch.ones(4)), TypeError, "input_shape"),
        "crawl-dtype-str": Bad(_crawl(dtype="float32"), TypeError, "dtype"),
        "crawl-dtype-count": Bad(_crawl(dtype=[torch.float32, torch.float32]), ValueError, "dtype"),
        "crawl-args-not-tuple": Bad(
            lambda m, _w: torchscan.crawl_module(m, args=torch.ones(1, 4)), TypeError, "args"
        ),
        "crawl-kwargs-not-mapping": Bad(
            lambda m, _w: torchscan.crawl_module(m, args=(), kwargs=[1]), TypeError, "kwargs"
        ),
        "crawl-kwargs-int-key": Bad(
            lambda m, _w: torchscan.crawl_module(m, args=(), kwargs={1: 2}), TypeError, "kwargs"
        ),
        "crawl-device-with-args": Bad(
            lambda m, _w: torchscan.crawl_module(m, args=(torch.ones(1, 4),), device="cpu"),
            ValueError,
            "device",
        ),
        "crawl-device-int": Bad(_crawl(device=3), TypeError, "device"),
        "crawl-device-bogus": Bad(_crawl(device="bogus"), ValueError, "device"),
        "crawl-device-unavailable": Bad(_crawl(device="cuda:0"), ValueError, "device")
        if not torch.cuda.is_available()
        else Bad(_crawl(device="cuda:999"), ValueError, "device"),
        "crawl-strict-str": Bad(_crawl(strict="yes"), TypeError, "strict"),
        "crawl-strict-int": Bad(_crawl(strict=1), TypeError, "strict"),
        "crawl-mode-unknown": Bad(_crawl(mode="fast"), ValueError, "mode"),
        "crawl-mode-int": Bad(_crawl(mode=1), ValueError, "mode"),
        "crawl-custom-modules-list": Bad(_crawl(custom_modules=[nn.Linear]), TypeError, "custom_modules"),
        "crawl-custom-modules-key": Bad(
            _crawl(custom_modules={"Linear": torchscan.ModuleHandler(lambda call: {})}),
            TypeError,
            "custom_modules",
        ),
        "crawl-custom-modules-value": Bad(
            _crawl(custom_modules={nn.Linear: lambda call: {}}), TypeError, "custom_modules"
        ),
        "crawl-custom-mapping-list": Bad(
            _crawl(custom_mapping=[torch.ops.aten.mm]), TypeError, "custom_mapping"
        ),
        "crawl-custom-mapping-overload": Bad(
            _crawl(custom_mapping={torch.ops.aten.mm.default: lambda *a, **k: 0}), TypeError, "custom_mapping"
        ),
        "crawl-custom-mapping-str": Bad(
            _crawl(custom_mapping={"aten.mm": lambda *a, **k: 0}), TypeError, "custom_mapping"
        ),
        "crawl-custom-mapping-not-callable": Bad(
            _crawl(custom_mapping={torch.ops.aten.mm: 3}), TypeError, "custom_mapping"
        ),
        # --- summary ------------------------------------------------------------------------------
        "summary-wrap-mode": Bad(_summary(wrap_mode="sideways"), ValueError, "wrap_mode"),
        "summary-max-depth-negative": Bad(_summary(max_depth=-1), ValueError, "max_depth"),
        "summary-max-depth-str": Bad(_summary(max_depth="2"), TypeError, "max_depth"),
        "summary-max-depth-bool": Bad(_summary(max_depth=True), TypeError, "max_depth"),
        "summary-receptive-field-str": Bad(_summary(receptive_field="no"), TypeError, "receptive_field"),
        "summary-effective-rf-int": Bad(_summary(effective_rf_stats=1), TypeError, "effective_rf_stats"),
        "summary-operator-flops-str": Bad(_summary(operator_flops="yes"), TypeError, "operator_flops"),
        "summary-strict-str": Bad(_summary(strict="no"), TypeError, "strict"),
        # --- measure_flops ------------------------------------------------------------------------
        "flops-workload-not-callable": Bad(lambda _m, _w: torchscan.measure_flops(3), TypeError, "workload"),
        "flops-modules-not-module": Bad(_flops(modules="model"), TypeError, "modules"),
        "flops-modules-list-item": Bad(_flops(modules=[nn.Linear(1, 1), 3]), TypeError, "modules"),
        "flops-custom-mapping-overload": Bad(
            _flops(custom_mapping={torch.ops.aten.mm.default: lambda *a, **k: 0}), TypeError, "custom_mapping"
        ),
        # --- measure_latency ----------------------------------------------------------------------
        "latency-workload-not-callable": Bad(
            lambda _m, _w: torchscan.measure_latency(3, device="cpu"), TypeError, "workload"
        ),
        "latency-device-int": Bad(_latency(device=0), TypeError, "device"),
        "latency-device-bogus": Bad(_latency(device="bogus"), ValueError, "device"),
        "latency-warmup-negative": Bad(_latency(warmup=-1), ValueError, "warmup"),
        "latency-warmup-float": Bad(_latency(warmup=1.5), TypeError, "warmup"),
        "latency-warmup-bool": Bad(_latency(warmup=True), TypeError, "warmup"),
        "latency-min-run-time-zero": Bad(_latency(min_run_time=0), ValueError, "min_run_time"),
        "latency-min-run-time-nan": Bad(_latency(min_run_time=math.nan), ValueError, "min_run_time"),
        "latency-min-run-time-inf": Bad(_latency(min_run_time=math.inf), ValueError, "min_run_time"),
        "latency-min-run-time-str": Bad(_latency(min_run_time="1"), TypeError, "min_run_time"),
        "latency-min-repeats-zero": Bad(_latency(min_repeats=0), ValueError, "min_repeats"),
        "latency-min-repeats-bool": Bad(_latency(min_repeats=True), TypeError, "min_repeats"),
        "latency-work-units-zero": Bad(_latency(work_units=0), ValueError, "work_units"),
        "latency-work-units-nan": Bad(_latency(work_units=math.nan), ValueError, "work_units"),
        "latency-work-units-bool": Bad(_latency(work_units=True), TypeError, "work_units"),
        "latency-work-unit-empty": Bad(_latency(work_unit=""), ValueError, "work_unit"),
        "latency-work-unit-int": Bad(_latency(work_unit=3), TypeError, "work_unit"),
        # --- measure_workload ---------------------------------------------------------------------
        "workload-metrics-unknown": Bad(_workload(metrics=("flops", "speed")), ValueError, "metrics"),
        "workload-metrics-str": Bad(_workload(metrics="flops"), TypeError, "metrics"),
        "workload-profile-str": Bad(_workload(profile="yes"), TypeError, "profile"),
        "workload-print-summary-int": Bad(_workload(print_summary=1), TypeError, "print_summary"),
        "workload-rss-command-str": Bad(_workload(rss_command="ls"), TypeError, "rss_command"),
        # --- profile_workload ---------------------------------------------------------------------
        "profile-limit-zero": Bad(_profile(limit=0), ValueError, "limit"),
        "profile-limit-bool": Bad(_profile(limit=True), TypeError, "limit"),
        "profile-limit-float": Bad(_profile(limit=2.0), TypeError, "limit"),
        "profile-trace-path-int": Bad(_profile(trace_path=3), TypeError, "trace_path"),
        "profile-trace-path-missing-folder": Bad(
            _profile(trace_path="/nonexistent-torchscan-folder/trace.json"), ValueError, "trace_path"
        ),
        "profile-device-bogus": Bad(_profile(device="bogus"), ValueError, "device"),
        # --- measure_peak_memory ------------------------------------------------------------------
        "memory-device-bogus": Bad(_memory(device="bogus"), ValueError, "device"),
        "memory-device-int": Bad(_memory(device=1), TypeError, "device"),
        "memory-workload-not-callable": Bad(
            lambda _m, _w: torchscan.measure_peak_memory(None, device="cpu"), TypeError, "workload"
        ),
        # --- measure_peak_rss ---------------------------------------------------------------------
        "rss-command-str": Bad(lambda _m, _w: torchscan.measure_peak_rss("true"), TypeError, "command"),
        "rss-command-empty": Bad(lambda _m, _w: torchscan.measure_peak_rss([]), ValueError, "command"),
        "rss-command-item": Bad(lambda _m, _w: torchscan.measure_peak_rss(["true", 3]), TypeError, "command"),
        "rss-cwd-int": Bad(lambda _m, _w: torchscan.measure_peak_rss(["true"], cwd=3), TypeError, "cwd"),
        # --- compare / render ---------------------------------------------------------------------
        # Reports are data documents checked by the validators: a malformed one, of any type, is a
        # ValueError naming where it is wrong (the CLI passes parsed JSON straight through).
        "compare-reports-not-dict": Bad(
            lambda _m, _w: torchscan.compare_reports([], {}), ValueError, "before"
        ),
        "compare-reports-bad-version": Bad(
            lambda _m, _w: torchscan.compare_reports({"schema_version": 99}, {}), ValueError, "schema_version"
        ),
        "merge-reports-empty": Bad(lambda _m, _w: torchscan.merge_reports([]), ValueError, "reports"),
        "merge-reports-not-list": Bad(lambda _m, _w: torchscan.merge_reports({}), TypeError, "reports"),
        "compare-benchmarks-check": Bad(
            lambda _m, _w: torchscan.compare_benchmarks({}, {}, check=3), TypeError, "check"
        ),
        "render-format": Bad(lambda _m, _w: torchscan.render_report({}, format="pdf"), ValueError, "format"),
        # render.md: every render_report failure is a ValueError naming the location, never a TypeError.
        "render-title-int": Bad(lambda _m, _w: torchscan.render_report({}, title=3), ValueError, "title"),
        # --- metric_result ------------------------------------------------------------------------
        "metric-status": Bad(_metric(status="done"), ValueError, "status"),
        "metric-value-negative": Bad(_metric(value=-1), ValueError, "value"),
        "metric-value-nan": Bad(_metric(value=math.nan), ValueError, "value"),
        "metric-value-bool": Bad(_metric(value=True), TypeError, "value"),
        "metric-value-huge": Bad(_metric(value=10**400), ValueError, "value"),
    }


CASES = _hardware_free_cases()


def test_catalogue_is_large_enough() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_bad_input_is_refused_before_any_model_code(case: Bad) -> None:
    model = _Probe()
    ran: list[int] = []

    def work() -> object:
        ran.append(1)
        return model(torch.ones(1, 4))

    with pytest.raises(case.error) as raised:
        case.call(model, work)
    assert case.names in str(raised.value), str(raised.value)
    assert model.calls == 0 and not ran, "model code ran before the argument was refused"
