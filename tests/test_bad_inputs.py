"""A catalogue of bad arguments across the public API (issue #11, item 10).

Every case asserts three things: the exception type (`TypeError` for a wrong type, `ValueError` for
a bad value), that the message names the offending argument, and that no model or workload code ran.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import torchscan
from tests.report.test_merge_reports import benchmark_report, flop_report
from torchscan.cli import main
from torchscan.views.analysis.table import format_table


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


def _ledger(**kwargs: Any) -> Callable[[_Probe, Callable[[], Any]], object]:
    return lambda _model, work: torchscan.measure_memory(work, **kwargs)


def _scaling(**kwargs: Any) -> Callable[[_Probe, Callable[[], Any]], object]:
    options = {"sizes": {"seq": [1, 2]}, **kwargs}
    return lambda _model, work: torchscan.measure_scaling(lambda n: work, **options)


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
        # issue #32: an empty shape is neither "no inputs" nor "one input": refused, naming the argument
        "crawl-shape-empty-list": Bad(
            lambda m, _w: torchscan.crawl_module(m, []), TypeError, "input_shape is an empty list"
        ),
        "crawl-shape-empty-tuple": Bad(_crawl(input_shape=()), TypeError, "input_shape is an empty tuple"),
        "summary-shape-empty": Bad(_summary(input_shape=[]), TypeError, "input_shape"),
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
        "workload-agree-across-ranks-str": Bad(
            _workload(agree_across_ranks="yes"), TypeError, "agree_across_ranks"
        ),
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
        # --- measure_memory (memory.md) -----------------------------------------------------------
        "ledger-workload-not-callable": Bad(
            lambda _m, _w: torchscan.measure_memory(None), TypeError, "workload"
        ),
        "ledger-device-bogus": Bad(_ledger(device="bogus"), ValueError, "device"),
        "ledger-device-int": Bad(_ledger(device=1), TypeError, "device"),
        "ledger-modules-str": Bad(_ledger(modules="fc"), TypeError, "modules"),
        "ledger-modules-empty": Bad(_ledger(modules=()), ValueError, "modules"),
        "ledger-timeline-int": Bad(_ledger(timeline=1), TypeError, "timeline"),
        "ledger-progress-str": Bad(_ledger(progress="yes"), TypeError, "progress"),
        # --- measure_scaling (attention-and-scaling.md 2) -----------------------------------------
        "scaling-sizes-empty": Bad(_scaling(sizes={}), ValueError, "sizes"),
        "scaling-sizes-decreasing": Bad(_scaling(sizes={"seq": [4, 2]}), ValueError, "sizes['seq']"),
        "scaling-sizes-float": Bad(_scaling(sizes={"seq": [1.0, 2]}), TypeError, "sizes['seq'][0]"),
        "scaling-sizes-zero": Bad(_scaling(sizes={"seq": [0, 2]}), ValueError, "sizes['seq'][0]"),
        "scaling-metrics-unknown": Bad(_scaling(metrics=("flops", "watts")), ValueError, "metrics"),
        "scaling-latency-meta": Bad(_scaling(metrics=("latency",), device="meta"), ValueError, "latency"),
        "scaling-build-not-callable": Bad(
            lambda _m, _w: torchscan.measure_scaling(3, {"seq": [1, 2]}), TypeError, "build"
        ),
        "scaling-build-returns-module": Bad(
            lambda m, _w: torchscan.measure_scaling(lambda n: m, {"seq": [1, 2]}), TypeError, "build(seq=1)"
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


GOOD_HARDWARE = {"name": "laptop", "peak_flops_per_second": 1e11}
PEAK = "peak_flops_per_second"
BANDWIDTH = "memory_bandwidth_bytes_per_second"
# training-and-hardware.md 3 / issue 13 "Bad input": each bad hardware= value, the exception and the
# key its message must name. Used for every API that takes hardware= (and, as files, for the CLI).
BAD_HARDWARE: dict[str, tuple[object, type[Exception], str]] = {
    "not-a-mapping": ([("name", "laptop")], TypeError, "hardware must be a mapping"),
    "unknown-key": ({**GOOD_HARDWARE, "tflops": 1}, ValueError, "tflops"),
    "missing-peak": ({"name": "laptop"}, ValueError, PEAK),
    "missing-name": ({PEAK: 1e11}, ValueError, "name"),
    "peak-zero": ({**GOOD_HARDWARE, PEAK: 0}, ValueError, PEAK),
    "peak-negative": ({**GOOD_HARDWARE, PEAK: -1e11}, ValueError, PEAK),
    "peak-nan": ({**GOOD_HARDWARE, PEAK: math.nan}, ValueError, PEAK),
    "peak-inf": ({**GOOD_HARDWARE, PEAK: math.inf}, ValueError, PEAK),
    "peak-huge-int": ({**GOOD_HARDWARE, PEAK: 10**400}, ValueError, PEAK),
    "peak-bool": ({**GOOD_HARDWARE, PEAK: True}, TypeError, PEAK),
    "peak-str": ({**GOOD_HARDWARE, PEAK: "1e11"}, TypeError, PEAK),
    "bandwidth-zero": ({**GOOD_HARDWARE, BANDWIDTH: 0}, ValueError, BANDWIDTH),
    "bandwidth-bool": ({**GOOD_HARDWARE, BANDWIDTH: False}, TypeError, BANDWIDTH),
    "name-int": ({**GOOD_HARDWARE, "name": 1}, TypeError, "name"),
    # the name is copied into reports verbatim: printable, 1 to 100 characters
    "name-empty": ({**GOOD_HARDWARE, "name": ""}, ValueError, "name"),
    "name-control": ({**GOOD_HARDWARE, "name": "gpu\x1b[2J"}, ValueError, "name"),
    "name-long": ({**GOOD_HARDWARE, "name": "x" * 101}, ValueError, "name"),
}


def _format_table(**kwargs: Any) -> Callable[[_Probe, Callable[[], Any]], object]:
    # The options are checked before the report is read, so an empty dict stands in for one.
    return lambda _model, _work: format_table({}, **kwargs)


def _merge(*builders: Callable[[], object]) -> Callable[[_Probe, Callable[[], Any]], object]:
    return lambda _model, _work: torchscan.merge_reports([build() for build in builders])


def _without_distributed() -> object:
    report = flop_report(0)
    del report["context"]["distributed"]
    return report


def _session_cases() -> dict[str, Bad]:
    """Options added after the first catalogue: table views, progress, hardware=, merge_reports."""
    cases = {
        # --- summary / format_table: col_names, fold, max_depth (issue 15) ------------------------
        "summary-col-names-str": Bad(_summary(col_names="params"), TypeError, "col_names"),
        "summary-col-names-unknown": Bad(_summary(col_names=["params", "flops"]), ValueError, "col_names"),
        "summary-col-names-int": Bad(_summary(col_names=["params", 1]), TypeError, "col_names"),
        "summary-col-names-twice": Bad(_summary(col_names=["params", "params"]), ValueError, "col_names"),
        "summary-fold-str": Bad(_summary(fold="no"), TypeError, "fold"),
        "summary-fold-int": Bad(_summary(fold=0), TypeError, "fold"),
        "summary-max-depth-zero": Bad(_summary(max_depth=0), ValueError, "max_depth"),
        "table-col-names-unknown": Bad(_format_table(col_names=["Param #"]), ValueError, "col_names"),
        "table-col-names-bytes": Bad(_format_table(col_names=b"params"), TypeError, "col_names"),
        "table-fold-none": Bad(_format_table(fold=None), TypeError, "fold"),
        "table-max-depth-zero": Bad(_format_table(max_depth=0), ValueError, "max_depth"),
        "table-max-depth-negative": Bad(_format_table(max_depth=-2), ValueError, "max_depth"),
        # --- progress: None, a bool or a callable ---------------------------------------------------
        "latency-progress-int": Bad(_latency(progress=3), TypeError, "progress"),
        "latency-progress-str": Bad(_latency(progress="yes"), TypeError, "progress"),
        "workload-progress-str": Bad(_workload(progress="tqdm"), TypeError, "progress"),
        "profile-progress-float": Bad(_profile(progress=1.5), TypeError, "progress"),
        # --- merge_reports (issue 14) --------------------------------------------------------------
        "merge-reports-non-report": Bad(_merge(lambda: flop_report(0), lambda: 7), ValueError, "reports[1]"),
        "merge-reports-not-a-known-report": Bad(
            _merge(lambda: {"schema_version": 1}), ValueError, "reports[0]"
        ),
        "merge-reports-duplicate-ranks": Bad(
            _merge(lambda: flop_report(0), lambda: flop_report(0)), ValueError, "duplicate ranks"
        ),
        "merge-reports-mixed-world-sizes": Bad(
            _merge(lambda: flop_report(0), lambda: flop_report(1, world_size=4)), ValueError, "world sizes"
        ),
        "merge-reports-mixed-types": Bad(
            _merge(lambda: flop_report(0), lambda: benchmark_report(1, 0.1, 1)),
            ValueError,
            "mix report types",
        ),
        "merge-reports-no-distributed-context": Bad(
            _merge(_without_distributed), ValueError, "context.distributed"
        ),
    }
    # --- hardware= on measure_workload and crawl_module/summary (issue 13) -------------------------
    for name, (value, error, key) in BAD_HARDWARE.items():
        cases[f"workload-hardware-{name}"] = Bad(_workload(hardware=value), error, key)
        cases[f"crawl-hardware-{name}"] = Bad(_crawl(hardware=value), error, key)
        cases[f"summary-hardware-{name}"] = Bad(_summary(hardware=value), error, key)
    return cases


CASES = {**_hardware_free_cases(), **_session_cases()}


def test_catalogue_is_large_enough() -> None:
    assert len(CASES) >= 60
    # Each case once: merging the two groups must not silently replace one case by another.
    assert not _hardware_free_cases().keys() & _session_cases().keys()


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


# --- the command line: bad files are usage errors (status 2, one line) before any model is built ---

# A --hardware file holding each BAD_HARDWARE value, and what the message must name. The CLI's
# strict reader refuses JSON's NaN/Infinity constants as "not valid JSON"; an overflowing literal
# (1e400) still parses, as inf, and is refused by the same check as the API's.
CLI_HARDWARE: dict[str, tuple[str, str]] = {
    "not-json": ("not json", "not valid JSON"),
    "nan-constant": ('{"name": "x", "peak_flops_per_second": NaN}', "not valid JSON"),
    "infinity-constant": ('{"name": "x", "peak_flops_per_second": Infinity}', "not valid JSON"),
    "peak-overflowing-literal": ('{"name": "x", "peak_flops_per_second": 1e400}', PEAK),
    **{
        name: (json.dumps(value), key)
        for name, (value, _error, key) in BAD_HARDWARE.items()
        if not name.endswith(("-nan", "-inf"))
    },
}
REFUSING = "def build():\n    raise RuntimeError('the model must not be built')\n"


def _one_line_usage_error(status: int, err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and lines[0].startswith("torchscan: error: "), err
    return lines[0]


@pytest.mark.parametrize("command", ["scan", "latency"])
@pytest.mark.parametrize(("content", "word"), CLI_HARDWARE.values(), ids=CLI_HARDWARE.keys())
def test_cli_bad_hardware_file_is_refused_before_the_model_is_built(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, content: str, word: str
) -> None:
    (tmp_path / "refusing.py").write_text(
        "def build():\n    raise RuntimeError('the model must not be built')\n"
    )
    hardware = tmp_path / "bad.json"
    hardware.write_text(content)
    argv = [command, f"{tmp_path / 'refusing.py'}:build", "--input-shape", "4", "--hardware", str(hardware)]
    status = main(argv)
    line = _one_line_usage_error(status, capsys.readouterr().err)
    assert "--hardware" in line and word in line
    assert "must not be built" not in line


def _rank_files(*reports: object) -> Callable[[Path], list[str]]:
    def save(folder: Path) -> list[str]:
        paths = []
        for index, report in enumerate(reports):
            path = folder / f"rank{index}.json"
            path.write_text(report if isinstance(report, str) else json.dumps(report))
            paths.append(str(path))
        return paths

    return save


CLI_MERGE: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "not-json": (_rank_files(flop_report(0), "{"), "rank1.json' is not valid JSON"),
    "not-an-object": (_rank_files("[1]"), "rank0.json' is not a JSON object"),
    "not-a-report": (_rank_files({"schema_version": 1}), "reports[0] is not a FlopReport"),
    "duplicate-ranks": (_rank_files(flop_report(0), flop_report(0)), "duplicate ranks [0]"),
    "mixed-world-sizes": (_rank_files(flop_report(0), flop_report(1, world_size=4)), "world sizes"),
    "mixed-types": (_rank_files(flop_report(0), benchmark_report(1, 0.1, 1)), "mix report types"),
    "no-distributed-context": (_rank_files(_without_distributed()), "context.distributed"),
}


@pytest.mark.parametrize(("files", "word"), CLI_MERGE.values(), ids=CLI_MERGE.keys())
def test_cli_merge_of_bad_files_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, files: Callable[[Path], list[str]], word: str
) -> None:
    merged = tmp_path / "merged.json"
    status = main(["merge", *files(tmp_path), "--json", str(merged)])
    assert word in _one_line_usage_error(status, capsys.readouterr().err)
    assert not merged.exists()
