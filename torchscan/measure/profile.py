"""``profile_workload``: hot operators of one separate, instrumented call (workloads.md 4).

A profile is diagnostic evidence, never timing: self times are instrumented and overlap, net bytes
are not peaks, and a missing device time is unknown rather than zero.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch

from torchscan.analysis.lock import ANALYSIS_LOCK
from torchscan.measure.progress import ProgressCallback, check_progress, one_pass, start_progress
from torchscan.report.diagnostics import diagnostic
from torchscan.report.names import report_name
from torchscan.report.schema import SCHEMA_VERSION, Diagnostic
from torchscan.report.workload_schema import ProfileReport, ProfileRow
from torchscan.runtime.arguments import check_count, check_output_path
from torchscan.runtime.device import Device, resolve_device, synchronizer
from torchscan.runtime.locks import MEMORY_LOCK
from torchscan.runtime.quiet import quiet_profile
from torchscan.runtime.torch_versions import untested_torch_diagnostics

PROFILE_METHOD = "torch.profiler.profile"


def profile_workload(
    workload: Callable[[], Any],
    *,
    device: str | torch.device,
    trace_path: str | os.PathLike[str] | None = None,
    limit: int = 20,
    progress: bool | ProgressCallback | None = None,
) -> ProfileReport:
    """Call ``workload`` once under ``torch.profiler`` and rank its grouped operator events.

    Rows give each event's call count, input shapes, self CPU seconds, self device seconds (``None``
    when the profiler cannot see the device: unknown, not zero) and net CPU bytes (allocations minus
    frees). Rows are sorted by device self time when available, else CPU self time, and cut to
    ``limit``. With ``trace_path`` a Chrome trace is written there (never overwritten; the path is not
    recorded in the report). ``progress`` reports the ``profile`` phase (``0`` then ``1`` of ``1``;
    see :mod:`torchscan.measure.progress`): a stderr line on a terminal by default, ``False`` for none.

    What these numbers do NOT mean: instrumented self times overlap and must not be summed into a
    model latency or quoted as clean timing; net bytes are not peaks; a hot operator shows where this
    one instrumented call spent time and promises no gain from changing it. Judge a change with fresh
    ``measure_latency`` runs plus an output check.

    Raises, before the workload runs: ``TypeError`` (not callable; ``limit`` not an int or a bool;
    ``trace_path`` not a str/PathLike; ``device`` not a str/torch.device), ``ValueError`` (``limit <
    1``; ``trace_path`` empty, with a NUL character, a directory, in a missing, non-directory or
    unwritable folder, or where no file can be created, such as ``/proc``; a malformed or
    unavailable device), ``NotImplementedError`` (other device types) and
    ``FileExistsError`` (``trace_path`` exists). The workload's own exception propagates unchanged.
    """
    if not callable(workload):
        raise TypeError("workload must be callable")
    check_count("limit", limit, 1)
    check_progress(progress)
    # Checked before the call: the profiler's export into a missing folder fails silently.
    trace = None if trace_path is None else check_output_path("trace_path", trace_path)
    resolved = resolve_device(device)
    profiler = torch.profiler
    activities = [profiler.ProfilerActivity.CPU]
    device_time_supported = False
    if resolved.type == "cuda" and profiler.ProfilerActivity.CUDA in profiler.supported_activities():
        activities.append(profiler.ProfilerActivity.CUDA)
        device_time_supported = True
    sync = synchronizer(resolved)
    with ANALYSIS_LOCK, MEMORY_LOCK:  # analysis lock first: one acquisition order
        if trace is not None:
            _reserve_trace(trace)  # before any workload code: a path that cannot be written is refused
        try:
            profiled = _profile(workload, activities, sync, progress)
            if trace is not None:
                _export(profiled.prof, trace)
        except BaseException:
            if trace is not None:
                _release_trace(trace)
            raise
    events = profiled.averages
    rows = [_row(event, device_time_supported) for event in events]
    # sorted(reverse=True) is stable: equal times keep the profiler's order.
    if device_time_supported:
        ranked = sorted(rows, key=lambda row: row["device_self_seconds"] or 0.0, reverse=True)
    else:
        ranked = sorted(rows, key=lambda row: row["cpu_self_seconds"], reverse=True)
    return {
        "schema_version": SCHEMA_VERSION,
        "context": {
            "torch_version": str(torch.__version__),
            "device": resolved.name,
            "method": PROFILE_METHOD,
            "operator_groups": len(rows),
            "limit": limit,
            "device_time_supported": device_time_supported,
        },
        "operators": ranked[:limit],
        "diagnostics": _diagnostics(resolved, device_time_supported) + untested_torch_diagnostics(),
    }


class _Profiled:
    """The profiler of the call and its grouped events."""

    def __init__(self, prof: Any) -> None:
        self.prof = prof
        self.averages = prof.key_averages(group_by_input_shape=True)


def _profile(
    workload: Callable[[], Any], activities: list[Any], sync: Callable[[], None], progress: Any
) -> _Profiled:
    """The one instrumented call, with its progress line."""
    reporter = start_progress(progress)
    try:
        with one_pass(reporter, "profile"):
            sync()
            session = torch.profiler.profile(activities=activities, record_shapes=True, profile_memory=True)
            with quiet_profile(session) as prof:  # the profiler's native start/stop lines only
                workload()
                sync()
    finally:
        if reporter is not None:
            reporter.close()
    return _Profiled(prof)


def _reserve_trace(trace: str) -> None:
    """Create the empty trace file now (never overwriting one), so that a path no file can be
    created at (a NUL byte is refused earlier; a folder in ``/proc``, a read-only mount, a
    permission that ``os.access`` misjudges for root) fails before the workload runs."""
    try:
        descriptor = os.open(trace, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise FileExistsError(f"trace_path already exists and is never overwritten: {trace}") from None
    except OSError as error:
        raise ValueError(f"trace_path cannot be created ({error.strerror}): {trace}") from None
    os.close(descriptor)


def _release_trace(trace: str) -> None:
    """Remove the file :func:`_reserve_trace` created, unless something was written to it."""
    try:
        if os.path.getsize(trace) == 0:
            os.unlink(trace)
    except OSError:
        pass


def _export(prof: Any, trace: str) -> None:
    prof.export_chrome_trace(trace)
    if os.path.getsize(trace) == 0:  # the export reports no failure of its own
        raise OSError(f"trace_path was not written by the profiler: {trace}")


def _row(event: Any, device_time_supported: bool) -> ProfileRow:
    device_seconds: float | None = None
    if device_time_supported:
        device_us = getattr(event, "self_device_time_total", None)
        if device_us is None:  # PyTorch before the device-neutral names
            device_us = event.self_cuda_time_total
        device_seconds = float(device_us) / 1e6
    return {
        "operator": report_name(str(event.key)),  # record_function labels are caller text
        "calls": int(event.count),
        "input_shapes": _json_shapes(event.input_shapes),
        "cpu_self_seconds": float(event.self_cpu_time_total) / 1e6,
        "device_self_seconds": device_seconds,
        "cpu_net_bytes": int(event.self_cpu_memory_usage),
    }


def _json_shapes(shapes: Any) -> Any:
    """Recorded input shapes as nested lists of ints; anything that is not a shape becomes ``None``."""
    if isinstance(shapes, list | tuple):
        return [_json_shapes(item) for item in shapes]
    if isinstance(shapes, int) and not isinstance(shapes, bool):
        return int(shapes)
    return None


def _diagnostics(device: Device, device_time_supported: bool) -> list[Diagnostic]:
    if device.type == "mps":
        return [
            diagnostic(
                "mps_gpu_trace_unavailable",
                "Rows describe CPU-side dispatch only; torch.profiler has no MPS device activity. Use "
                "torch.mps.profiler with Instruments for GPU traces.",
                metric="device_time",
            )
        ]
    if device.type == "cuda" and not device_time_supported:
        return [
            diagnostic(
                "cuda_gpu_trace_unavailable",
                "The installed PyTorch profiler lacks the CUDA activity: device self times are unknown "
                "and rows describe CPU-side dispatch only.",
                metric="device_time",
            )
        ]
    return []
