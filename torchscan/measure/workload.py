"""``measure_workload`` (preview extension): one report, several separate passes (workloads.md 7).

Timing, operator FLOPs, PyTorch peak memory, an optional operator profile and an optional child-process
RSS are collected in that order, each in its own pass on the same callable. The passes are never
combined: each total keeps its own unit, scope and method.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import torch

from torchscan.analysis.crawl.inputs import describe
from torchscan.measure import latency as timing
from torchscan.measure.hardware import achieved_flops_per_second, model_flops, utilization, validate_hardware
from torchscan.measure.profile import profile_workload
from torchscan.measure.progress import ProgressCallback, check_progress, one_pass, start_progress
from torchscan.process.memory import NoMemoryEventsError, measure_peak_memory
from torchscan.process.rss import measure_peak_rss, validate_command
from torchscan.report.diagnostics import diagnostic, error_text
from torchscan.report.schema import (
    NOT_REQUESTED,
    SCHEMA_VERSION,
    Diagnostic,
    HardwareFacts,
    MetricResult,
    metric_result,
)
from torchscan.report.workload_schema import BenchmarkReport, ProfileStatus
from torchscan.runtime.arguments import check_bool, check_names
from torchscan.runtime.device import Device, resolve_device
from torchscan.runtime.torch_versions import untested_torch_diagnostics
from torchscan.views.common.text import human

METRICS = ("flops", "latency", "throughput", "memory", "memory_ledger")
UNAVAILABLE = "unavailable"
# Collector limitations recorded as unavailable; anything else a collector raises propagates.
LIMITATIONS = (NotImplementedError, ImportError, NoMemoryEventsError)
MEMORY_LABELS = {  # device type -> (scope, method) of peak_memory, complete or not
    "cpu": ("pytorch_tensor_bytes", "torch.profiler.memory_timeline"),
    "cuda": ("pytorch_reserved_bytes", "torch.cuda.max_memory_reserved"),
    "mps": ("pytorch_reserved_bytes", "torch.accelerator.memory.max_memory_reserved"),
}
RSS_LABELS = ("bytes", "child_process_lifetime")

T = TypeVar("T")


class _TrackedWorkload:
    """Calls the caller's workload and remembers the exception that escaped it.

    A collector limitation (say ``NotImplementedError``) is told apart from the very same exception
    type raised by the workload itself by identity: the workload's own exceptions always propagate.
    """

    def __init__(self, workload: Callable[[], Any]) -> None:
        self.workload = workload
        self.error: BaseException | None = None

    def __call__(self) -> Any:
        try:
            return self.workload()
        except BaseException as error:
            self.error = error
            raise


def measure_workload(
    workload: Callable[[], Any],
    *,
    device: str | torch.device,
    inputs: object = None,
    metrics: Sequence[str] = ("flops", "latency", "throughput", "memory"),
    work_units: int | float = 1,
    work_unit: str = "samples",
    warmup: int = 5,
    min_run_time: float = 0.2,
    min_repeats: int = 5,
    profile: bool = False,
    rss_command: Sequence[str] | None = None,
    print_summary: bool = False,
    hardware: object = None,
    progress: bool | ProgressCallback | None = None,
    agree_across_ranks: bool = True,
) -> BenchmarkReport:
    """Measure one workload in separate passes and return a ``BenchmarkReport`` with seven totals.

    Passes, in order: timing (``measure_latency``, when ``latency`` or ``throughput`` is selected),
    operator FLOPs (``measure_flops``), PyTorch peak memory (``measure_peak_memory``), the storage
    ledger (``measure_memory``, only when ``"memory_ledger"`` is listed in ``metrics``: its
    MemoryReport goes under ``memory_ledger``, it adds no total), the operator
    profile (``profile=True``) and the peak RSS of ``rss_command`` run as a fresh child process. A
    metric not selected is ``unavailable`` with method ``not_requested``; a collector that cannot run
    here (``NotImplementedError``, ``ImportError``, no CPU memory events) leaves its metric
    ``unavailable`` and adds a ``measurement_unavailable`` diagnostic. The workload's own exceptions
    propagate unchanged. ``print_summary=True`` prints a terminal summary; the report is the data.
    ``agree_across_ranks`` is passed to ``measure_latency`` (under ``torch.distributed``, every rank
    runs the same number of timed calls; ``False`` when only some ranks time).
    ``hardware`` (the caller's stated peak, training-and-hardware.md 3) is copied into
    ``context.hardware`` and adds ``achieved_flops_per_second``, ``model_flops_utilization`` and
    ``hardware_flops_utilization`` to ``totals``.
    ``progress`` reports each pass (the timing phases of ``measure_latency``, then ``operator_flops``,
    ``peak_memory``, ``memory_ledger``, ``profile``, ``process_peak_rss``; see
    :mod:`torchscan.measure.progress`).

    What these numbers do NOT mean: each total only means what its collector means (block-average
    latency is not a request percentile; operator FLOPs are not FLOP/s; ``peak_memory`` is one call's
    PyTorch-tracked or allocator bytes, not RSS; ``process_peak_rss`` is the lifetime peak of a
    separate process that runs ``rss_command``, including interpreter start and imports, not of this
    callable). They are never added or combined, and no state is reset between passes.
    """
    if not callable(workload):
        raise TypeError("workload must be callable")
    settings = timing.validate_timing_settings(work_units, work_unit, warmup, min_run_time, min_repeats)
    selected = _validate_metrics(metrics)
    check_bool("profile", profile)
    check_bool("print_summary", print_summary)
    check_bool("agree_across_ranks", agree_across_ranks)
    check_progress(progress)
    command = None if rss_command is None else validate_command(rss_command, name="rss_command")
    stated = validate_hardware(hardware)
    resolved = resolve_device(device)
    tracked = _TrackedWorkload(workload)
    diagnostics: list[Diagnostic] = []

    reporter = start_progress(progress)

    def collect(metric: str, call: Callable[[], T]) -> T | None:
        try:
            with one_pass(reporter, None if metric == "latency" else metric):
                return call()
        except LIMITATIONS as error:
            if error is tracked.error:
                raise
            # A collector's own message can quote the caller's environment (an ImportError names
            # the file it failed in): error_text sanitizes it like every caller-borne text.
            diagnostics.append(diagnostic("measurement_unavailable", error_text(error), metric=metric))
            return None

    timed = None
    # The timer gets the bare callable so no wrapper frame is timed; the timing collector's only
    # limitation (broken torch.utils.benchmark) is probed first, so any NotImplementedError or
    # ImportError escaping measure_latency afterwards came from the workload and propagates.
    if selected & {"latency", "throughput"} and collect("latency", timing.load_timer) is not None:
        with one_pass(reporter, None):
            timed = timing.measure_latency(
                workload,
                device=resolved.name,
                inputs=inputs,
                work_units=settings.work_units,
                work_unit=settings.work_unit,
                warmup=settings.warmup,
                min_run_time=settings.min_run_time,
                min_repeats=settings.min_repeats,
                progress=False if reporter is None else reporter.callback,
                agree_across_ranks=agree_across_ranks,
            )
    flops = collect("operator_flops", lambda: _measure_flops(tracked)) if "flops" in selected else None
    if flops is not None:
        diagnostics.extend(copy.deepcopy(flops["diagnostics"]))
    memory = None
    if "memory" in selected:
        memory = collect("peak_memory", lambda: measure_peak_memory(tracked, device=resolved.name))
    ledger = None
    if "memory_ledger" in selected:  # opt-in extension: a MemoryReport beside the totals (memory.md)
        ledger = collect("memory_ledger", lambda: _measure_memory(tracked, resolved.name))
    profiled = (
        collect("profile", lambda: profile_workload(tracked, device=resolved.name, progress=False))
        if profile
        else None
    )
    if profiled is not None:
        diagnostics.extend(copy.deepcopy(profiled["diagnostics"]))
    rss = collect("process_peak_rss", lambda: measure_peak_rss(command)) if command is not None else None
    if reporter is not None:
        reporter.close()

    if timed is not None:
        context = timed["context"]
    else:
        context = timing.benchmark_context(resolved, settings, torch.get_num_threads(), inputs)
    context["profile_status"] = _profile_status(profile, profiled)
    totals = _timing_totals(selected, timed, settings.work_unit)
    totals["operator_flops"] = _flops_total("flops" in selected, flops)
    totals["peak_memory"] = _memory_total("memory" in selected, memory, resolved)
    totals["process_peak_rss"] = _rss_total(command is not None, rss)
    if stated is not None:
        context["hardware"] = stated
        diagnostics.extend(_hardware_totals(totals, flops, stated))
    report: BenchmarkReport = {
        "schema_version": SCHEMA_VERSION,
        "context": context,
        "inputs": timed["inputs"] if timed is not None else describe(inputs),
        "totals": totals,
        "measurement": timed["measurement"] if timed is not None else {},
    }
    if flops is not None:
        report["operator_flops"] = flops
    if memory is not None:
        report["memory"] = memory
    if ledger is not None:
        report["memory_ledger"] = ledger
    if profiled is not None:
        report["profile"] = profiled
    # the untested-torch note comes once, however many parts carried it; a report of no part still has it
    diagnostics = [entry for entry in diagnostics if entry["code"] != "untested_torch_version"]
    report["diagnostics"] = diagnostics + untested_torch_diagnostics()
    if print_summary:
        print(format_summary(report))
    return report


def _hardware_totals(totals: dict[str, MetricResult], flops: Any, stated: HardwareFacts) -> list[Diagnostic]:
    """Add the three hardware-relative totals; return their diagnostics (training-and-hardware.md 3)."""
    operator, latency, peak = totals["operator_flops"], totals["latency"], stated["peak_flops_per_second"]
    totals["achieved_flops_per_second"] = achieved_flops_per_second(operator, latency)
    notes: list[Diagnostic] = []
    # Without a FlopReport the operator total is unavailable and so is every ratio built on it.
    model = model_flops(operator, flops) if flops is not None else operator
    if model is None:  # a FlopReport without by_phase: recompute unknown, so MFU cannot be told from HFU
        model = metric_result("unavailable", unit="FLOPs", scope="workload", method=UNAVAILABLE)
        notes.append(
            diagnostic(
                "measurement_unavailable",
                "the FlopReport has no by_phase, so recompute FLOPs are unknown",
                metric="model_flops_utilization",
            )
        )
    for name, counted in (("model_flops_utilization", model), ("hardware_flops_utilization", operator)):
        totals[name], extra = utilization(counted, latency, peak, name)
        notes.extend(extra)
    return notes


def _measure_memory(workload: Callable[[], Any], device: str) -> Any:
    from torchscan.measure.memory import measure_memory  # lazy: the ledger imports dispatch machinery

    return measure_memory(workload, device=device, progress=False)


def _measure_flops(workload: Callable[[], Any]) -> Any:
    from torchscan.measure.flops import measure_flops  # lazy: operator counting is heavy to import

    return measure_flops(workload)


def _validate_metrics(metrics: object) -> set[str]:
    return set(check_names("metrics", metrics, METRICS))


def _profile_status(requested: bool, profiled: Any) -> ProfileStatus:
    if not requested:
        return "not_requested"
    if profiled is None:
        return "unavailable"
    gaps = [entry for entry in profiled["diagnostics"] if entry["severity"] != "info"]
    return "partial" if gaps else "complete"


def _timing_totals(selected: set[str], timed: Any, work_unit: str) -> dict[str, MetricResult]:
    totals: dict[str, MetricResult] = {}
    for name in timing.TIMING_NAMES:
        wanted = "throughput" if name == "throughput" else "latency"
        if wanted in selected and timed is not None:
            totals[name] = dict(timed["totals"][name])  # type: ignore[assignment]
            continue
        unit, scope, _ = timing.timing_labels(name, work_unit)
        method = UNAVAILABLE if wanted in selected else NOT_REQUESTED
        totals[name] = metric_result("unavailable", unit=unit, scope=scope, method=method)
    return totals


def _flops_total(requested: bool, flops: Any) -> MetricResult:
    if flops is not None:
        return dict(flops["total"])  # type: ignore[return-value]
    method = UNAVAILABLE if requested else NOT_REQUESTED
    return metric_result("unavailable", unit="FLOPs", scope="workload", method=method)


def _memory_total(requested: bool, memory: Any, device: Device) -> MetricResult:
    if not requested:
        return metric_result("unavailable", unit="bytes", scope="workload", method=NOT_REQUESTED)
    scope, method = MEMORY_LABELS[device.type]
    if memory is None:  # keeps the backend labels so complete and unavailable runs stay comparable
        return metric_result("unavailable", unit="bytes", scope=scope, method=method)
    return metric_result("complete", memory["peak_bytes"], unit="bytes", scope=scope, method=method)


def _rss_total(requested: bool, rss: MetricResult | None) -> MetricResult:
    if rss is not None:
        return rss
    unit, scope = RSS_LABELS
    return metric_result(
        "unavailable", unit=unit, scope=scope, method=UNAVAILABLE if requested else NOT_REQUESTED
    )


# --- terminal summary (a view of the report; nothing may parse it) -------------------------------

_SUMMARY_LABELS = {
    "first_call_latency": "first call latency",
    "latency": "latency (block median)",
    "latency_iqr": "latency IQR",
    "throughput": "throughput",
    "operator_flops": "operator FLOPs",
    "peak_memory": "PyTorch peak memory",
    "process_peak_rss": "process peak RSS",
    "achieved_flops_per_second": "achieved FLOP/s",
    "model_flops_utilization": "MFU (stated peak)",
    "hardware_flops_utilization": "HFU (stated peak)",
}
_SCOPE_NOTES = {
    "pytorch_tensor_bytes": "scope: tracked CPU tensors of one call (not RSS)",
    "pytorch_reserved_bytes": "scope: device caching allocator, process-wide (not total device memory)",
    "child_process_lifetime": "scope: fresh child process, whole lifetime (not this callable)",
}


def format_summary(report: BenchmarkReport) -> str:
    """The terminal summary of a ``measure_workload`` report (workloads.md 7.6)."""
    context = report["context"]
    lines = [f"TorchScan workload measurement: device {context['device']}, {context['num_threads']} threads"]
    for name, label in _SUMMARY_LABELS.items():
        if name not in report["totals"]:  # the hardware figures exist only with hardware=
            continue
        result = report["totals"][name]
        lines.append(f"  {label:<24} {_format_value(result)}")
        if result["status"] != "unavailable" and result["scope"] in _SCOPE_NOTES:
            lines.append(f"  {'':<24} {_SCOPE_NOTES[result['scope']]}")
    if "hardware" in context:
        lines.append(f"  {'':<24} utilization divides by the caller's stated peak, not a measured one")
    lines.append(
        f"  {'operator profile':<24} {context.get('profile_status', 'not_requested')} "
        "(separate instrumented pass; not timing)"
    )
    diagnostics = report.get("diagnostics", [])
    lines.append(f"  diagnostics: {len(diagnostics)}")
    lines.extend(f"    {entry['metric']}: {entry['message']}" for entry in diagnostics)
    return "\n".join(lines)


def _format_value(result: MetricResult) -> str:
    if result["status"] == "unavailable":
        reason = "not requested" if result["method"] == NOT_REQUESTED else "see diagnostics"
        return f"unavailable ({reason})"
    number = result["value"] if result["status"] == "complete" else result["known_value"]
    assert number is not None
    unit = result["unit"]
    if unit == "bytes":
        text = f"{number / 2**20:.2f} MiB ({number:,} bytes)"
    else:  # ms/µs, %, GFLOP/s, separators: never e-notation (issue 23 item 5)
        text = human(number, unit)
    return text if result["status"] == "complete" else f"known ≥ {text} (partial: lower bound)"
