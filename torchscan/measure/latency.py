"""``measure_latency``: warmed block-average latency and throughput of a workload (workloads.md 5)."""

from __future__ import annotations

import math
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from torchscan._version import __version__
from torchscan.analysis.crawl.inputs import describe
from torchscan.analysis.dispatch.distributed import process_group_context
from torchscan.analysis.lock import ANALYSIS_LOCK
from torchscan.measure.progress import Progress, ProgressCallback, check_progress, start_progress
from torchscan.measure.rank_agreement import Agreement, agreed_autorange, rank_agreement
from torchscan.measure.stats import block_statistics
from torchscan.report.names import has_control
from torchscan.report.schema import SCHEMA_VERSION, MetricResult, metric_result
from torchscan.report.workload_schema import BenchmarkContext, BenchmarkMeasurement, BenchmarkReport
from torchscan.runtime.arguments import ArgumentTypeError, check_bool, check_count
from torchscan.runtime.device import Device, device_name, processor_name, resolve_device, synchronizer
from torchscan.runtime.locks import TIMING_LOCK
from torchscan.runtime.quiet import quiet_cuda_home_warning
from torchscan.runtime.torch_versions import untested_torch_diagnostics

TIMER_METHOD = "torch.utils.benchmark.Timer"
FIRST_CALL_METHOD = "synchronized_perf_counter"
TIMING_NAMES = ("first_call_latency", "latency", "latency_iqr", "throughput")


@dataclass(frozen=True)
class TimingSettings:
    """Validated timing arguments, recorded as given in the report context."""

    work_units: int | float
    work_unit: str
    warmup: int
    min_run_time: int | float
    min_repeats: int


def _positive_finite(name: str, value: object) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentTypeError(f"{name} must be a finite int or float > 0, got {type(value).__name__}")
    try:
        as_float = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be finite; {name}={value} is too large for a float") from None
    if not math.isfinite(as_float) or as_float <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


def validate_timing_settings(
    work_units: object, work_unit: object, warmup: object, min_run_time: object, min_repeats: object
) -> TimingSettings:
    """Check the timing arguments in the order of workloads.md 5.1; the error names the parameter.

    A wrong type (``True``, ``"1"``, ``1.5`` for a count) is an :class:`ArgumentTypeError`, which is
    both the ``TypeError`` of issue #11 and the ``ValueError`` of the chapter; a bad value is a
    ``ValueError``.
    """
    units = _positive_finite("work_units", work_units)
    run_time = _positive_finite("min_run_time", min_run_time)
    warmup_count = check_count("warmup", warmup, 0)
    repeats = check_count("min_repeats", min_repeats, 2)
    if not isinstance(work_unit, str):
        raise ArgumentTypeError(f"work_unit must be a str, got {type(work_unit).__name__}")
    if not work_unit.strip():
        raise ValueError(f"work_unit must be a non-blank string, got {work_unit!r}")
    if has_control(work_unit):  # refused before any timing: it would be printed and rendered raw
        raise ValueError(f"work_unit must not contain control characters, got {work_unit!r}")
    return TimingSettings(units, work_unit, warmup_count, run_time, repeats)


def load_timer() -> Any:
    """Import ``torch.utils.benchmark.Timer`` lazily (the seam tests replace to feed synthetic blocks)."""
    try:
        with quiet_cuda_home_warning():  # its cpp_extension import warns on a CUDA build without a GPU
            from torch.utils.benchmark import Measurement, Timer  # noqa: F401  (both must import)
    except ImportError as error:
        raise ImportError(
            "TorchScan could not import PyTorch's benchmark utilities (torch.utils.benchmark). Install the "
            "dependencies PyTorch needs or upgrade PyTorch; PyTorch 2.1 needs setuptools<70 and numpy<2."
        ) from error
    return Timer


def timing_labels(name: str, work_unit: str) -> tuple[str, str, str]:
    """``(unit, scope, method)`` of one of the four timing totals (workloads.md 5.4)."""
    if name == "first_call_latency":
        return "seconds", "first_call", FIRST_CALL_METHOD
    if name in ("latency", "latency_iqr"):
        return "seconds", "warmed_block_average", TIMER_METHOD
    if name == "throughput":
        return f"{work_unit}/s", "warmed_blocks", TIMER_METHOD
    raise KeyError(name)


def timing_result(name: str, value: float, work_unit: str) -> MetricResult:
    """A complete timing total with its exact labels."""
    unit, scope, method = timing_labels(name, work_unit)
    return metric_result("complete", value, unit=unit, scope=scope, method=method)


def benchmark_context(
    device: Device, settings: TimingSettings, threads: int, inputs: object
) -> BenchmarkContext:
    """The 17-key context of a benchmark report; ``threads`` is the count read before timing."""
    processor = processor_name()
    context: BenchmarkContext = {
        "torchscan_version": __version__,
        "torch_version": str(torch.__version__),
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": processor,
        "device": device.name,
        "device_name": device_name(device, processor),
        "num_threads": threads,
        "num_interop_threads": torch.get_num_interop_threads(),
        "cuda_version": torch.version.cuda,
        "inputs_source": "not_provided" if inputs is None else "caller_supplied",
        "work_units": settings.work_units,
        "work_unit": settings.work_unit,
        "warmup": settings.warmup,
        "min_run_time": settings.min_run_time,
        "min_repeats": settings.min_repeats,
    }
    group = process_group_context(None)  # distributed.md 4: which rank of which job was timed
    if group is not None:
        context["distributed"] = group
    return context


def measure_latency(
    workload: Callable[[], Any],
    *,
    device: str | torch.device,
    inputs: object = None,
    work_units: int | float = 1,
    work_unit: str = "calls",
    warmup: int = 5,
    min_run_time: float = 0.2,
    min_repeats: int = 5,
    progress: bool | ProgressCallback | None = None,
    agree_across_ranks: bool = True,
) -> BenchmarkReport:
    """Time ``workload`` on ``device``: one synchronised first call, ``warmup`` calls, then timed blocks.

    ``latency`` is the median per-call average over blocks of ``number_per_run`` calls and
    ``latency_iqr`` the spread of those averages; ``throughput`` is ``work_units`` per second of the
    measured calls. Every block boundary synchronises the device. ``inputs`` is only described in the
    report (shapes and dtypes, never values) and is never passed to the workload. The raw block
    durations are kept under ``measurement``. ``progress`` (see :mod:`torchscan.measure.progress`):
    ``None`` shows a self-updating stderr line when stderr is a terminal, ``False`` nothing, a
    callable gets ``(phase, done, total_estimate)`` for ``first_call``, ``warmup`` and ``timing``
    (seconds of the ``min_run_time`` budget); updates never run inside a timed block.

    Under ``torch.distributed`` (initialized, world size > 1) every rank must call this with the same
    arguments: the calls per block and the number of blocks are agreed across ranks on the default
    group (``all_reduce`` with ``MAX`` between blocks, never inside one), so every rank runs the same
    number of workload calls and a workload that runs collectives cannot deadlock;
    ``measurement.agreed_across_ranks`` then records the world size. ``agree_across_ranks=False``
    times each rank on its own clock (for a call made on some ranks only, e.g. ``if rank == 0``);
    its workload must then run no collective.

    What these numbers do NOT mean: block averages say nothing about single requests (no
    p50/p95/p99); first-call time covers one synchronised call, not Python start-up or model loading,
    and subtracting latency from it does not isolate a start-up cost; throughput is this process
    running calls back to back, not a serving system or another machine; timing says nothing about
    FLOPs, memory or output quality. Other PyTorch work running concurrently in this process disturbs
    the figures.

    Raises ``TypeError``/``ValueError`` for bad arguments, ``RuntimeError``/``NotImplementedError``
    for the device and ``ImportError`` when ``torch.utils.benchmark`` is broken, all before the first
    call; ``RuntimeError`` for non-positive durations or throughput. Workload exceptions propagate
    unchanged.
    """
    if not callable(workload):
        raise TypeError("workload must be callable")
    settings = validate_timing_settings(work_units, work_unit, warmup, min_run_time, min_repeats)
    check_progress(progress)
    check_bool("agree_across_ranks", agree_across_ranks)
    resolved = resolve_device(device)
    timer_class = load_timer()
    metadata = describe(inputs)
    agreement = rank_agreement(agree_across_ranks)
    reporter = start_progress(progress)
    try:
        first_call, number_per_run, blocks, threads = _run_timed(
            workload, resolved, settings, timer_class, reporter, agreement
        )
    finally:
        if reporter is not None:
            reporter.close()

    if not all(math.isfinite(t) and t > 0 for t in (first_call, *blocks)):
        raise RuntimeError(
            f"Timing produced non-positive or non-finite durations (first call {first_call!r}, blocks "
            f"{blocks!r}); the clock may be too coarse or patched."
        )
    stats = block_statistics(blocks, number_per_run, settings.work_units)
    if not (math.isfinite(stats.throughput) and stats.throughput > 0):
        raise RuntimeError(
            f"Throughput is not a finite positive number ({stats.throughput!r}); check work_units "
            f"({settings.work_units!r})."
        )
    unit = settings.work_unit
    measurement: BenchmarkMeasurement = {
        "number_per_run": number_per_run,
        "raw_times_seconds": blocks,
        "measured_calls": stats.measured_calls,
    }
    if agreement is not None:
        measurement["agreed_across_ranks"] = agreement.world_size
    report: BenchmarkReport = {
        "schema_version": SCHEMA_VERSION,
        "context": benchmark_context(resolved, settings, threads, inputs),
        "inputs": metadata,
        "totals": {
            "first_call_latency": timing_result("first_call_latency", first_call, unit),
            "latency": timing_result("latency", stats.latency, unit),
            "latency_iqr": timing_result("latency_iqr", stats.latency_iqr, unit),
            "throughput": timing_result("throughput", stats.throughput, unit),
        },
        "measurement": measurement,
    }
    notes = untested_torch_diagnostics()  # only on a torch newer than the newest tested one
    if notes:
        report["diagnostics"] = notes
    return report


def _run_timed(
    workload: Callable[[], Any],
    device: Device,
    settings: TimingSettings,
    timer_class: Any,
    progress: Progress | None = None,
    agreement: Agreement | None = None,
) -> tuple[float, int, list[float], int]:
    """The timed section (workloads.md 5.2), under the timing lock.

    With an ``agreement`` the calibration and block loop of ``blocked_autorange`` run as
    :func:`~torchscan.measure.rank_agreement.agreed_autorange` (the same procedure, counts agreed
    across ranks). Returns ``(first_call, number_per_run, block durations, threads)``.
    """
    sync = synchronizer(device)

    def clock() -> float:
        sync()
        return time.perf_counter()

    timer_clock = clock if progress is None else _ReportingClock(clock, progress, settings.min_run_time)
    with ANALYSIS_LOCK, TIMING_LOCK:  # analysis lock first: one acquisition order, no deadlock
        threads = torch.get_num_threads()
        if agreement is not None:  # before the first call: ranks that disagree all raise, none hangs
            agreement.same_on_every_rank("warmup", settings.warmup)
        try:
            if progress is not None:
                progress.update("first_call", 0, 1)
            start = clock()
            workload()
            first_call = clock() - start
            if progress is not None:
                progress.update("first_call", 1, 1, final=True)
            for done in range(settings.warmup):
                workload()
                if progress is not None:
                    progress.update("warmup", done + 1, settings.warmup, final=done + 1 == settings.warmup)
            timer = timer_class(
                stmt="workload()", globals={"workload": workload}, timer=timer_clock, num_threads=threads
            )
            if agreement is not None:
                number_per_run, blocks = agreed_autorange(
                    timer, settings.min_run_time, settings.min_repeats, agreement
                )
            else:
                measurement = timer.blocked_autorange(min_run_time=settings.min_run_time)
                number_per_run = int(measurement.number_per_run)
                blocks = [float(t) for t in measurement.raw_times]
            while len(blocks) < settings.min_repeats:  # already met when counts were agreed
                extra = timer.timeit(number_per_run)
                if not extra.raw_times:
                    raise RuntimeError("torch.utils.benchmark.Timer.timeit returned no timed block")
                blocks.extend(float(t) for t in extra.raw_times)
            if progress is not None:
                spent = getattr(timer_clock, "spent", 0.0)
                progress.update("timing", spent, spent, final=True)
        finally:
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
    return first_call, number_per_run, blocks, threads


class _ReportingClock:
    """The timer's clock, reporting progress between blocks, never inside one.

    ``timeit`` reads the clock in pairs (block start, block end); an update is sent only right after
    an *end* reading, so its cost falls between two blocks and in no measured duration.
    """

    def __init__(self, clock: Callable[[], float], progress: Progress, budget: float) -> None:
        self.clock = clock
        self.progress = progress
        self.budget = budget
        self.reads = 0
        self.started: float | None = None
        self.spent = 0.0

    def __call__(self) -> float:
        now = self.clock()
        self.reads += 1
        if self.started is None:
            self.started = now
        elif self.reads % 2 == 0:
            self.spent = now - self.started
            self.progress.update("timing", self.spent, self.budget)
        return now
