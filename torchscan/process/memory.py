"""``measure_peak_memory``: PyTorch peak memory of exactly one workload call (workloads.md 2).

CPU figures come from the profiler's memory timeline (tracked tensor bytes); CUDA and MPS figures come
from the caching allocator's reserved-bytes counters. Neither is process RSS nor total device memory.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator
from typing import Any, cast

import torch

from torchscan.analysis.lock import ANALYSIS_LOCK
from torchscan.runtime.device import Device, resolve_device
from torchscan.runtime.locks import MEMORY_LOCK
from torchscan.runtime.quiet import quiet_profile

_ALLOCATOR_FUNCTIONS = (
    "memory_reserved",
    "reset_peak_memory_stats",
    "max_memory_reserved",
    "max_memory_allocated",
)


class NoMemoryEventsError(RuntimeError):
    """The CPU timeline had no point: the workload produced no PyTorch-tracked CPU memory event."""


def measure_peak_memory(workload: Callable[[], Any], *, device: str | torch.device) -> dict[str, str | int]:
    """Call ``workload`` once and return PyTorch's byte statistics for that call on ``device``.

    CPU (``metric "pytorch_tensor_bytes"``): ``baseline_bytes`` is what the profiler's memory
    timeline saw resident before the call (parameters, inputs and other tensors the workload uses;
    never a tensor the workload allocates), ``peak_bytes`` the largest running total,
    ``delta_bytes = peak - baseline``. CUDA/MPS (``"pytorch_reserved_bytes"``):
    reserved bytes before the call, the allocator's reserved peak during it, and
    ``allocated_peak_bytes`` (live tensors). The allocator cache is never emptied; only its peak
    counters are reset.

    What these numbers do NOT mean: ``peak_bytes`` is not an increment (``delta_bytes`` is); CPU
    figures exclude the Python heap and third-party native allocations and are not process RSS;
    accelerator figures are process-global allocator state (unrelated allocations in this process
    count), not total device memory, driver memory or other processes. Two results compare only when
    hardware, PyTorch, inputs, model, gradient/optimizer state and allocator warm-up all match. No
    memory budget is implied.

    Raises ``TypeError`` (not callable), ``RuntimeError`` (unavailable device, or
    :class:`NoMemoryEventsError` when the CPU timeline is empty), ``NotImplementedError`` (other
    device types, missing allocator APIs); the workload's own exception propagates unchanged.
    """
    if not callable(workload):
        raise TypeError("workload must be callable")
    resolved = resolve_device(device)
    if resolved.type == "cpu":
        return _cpu_peak(workload)
    if resolved.type == "cuda":
        return _cuda_peak(workload, resolved)
    return _mps_peak(workload, resolved)


# --- CPU: profiler memory timeline --------------------------------------------------------------


# Action codes of the raw memory timeline (``torch.profiler._memory_profiler.Action`` values, part of
# the documented ``.raw.json.gz`` export format).
_PREEXISTING = 1


def _cpu_peak(workload: Callable[[], Any]) -> dict[str, str | int]:
    # analysis lock first: one acquisition order
    with ANALYSIS_LOCK, MEMORY_LOCK, cpu_memory_timeline() as extent:
        workload()
    if extent.value is None:
        raise NoMemoryEventsError(
            "no memory timeline points for 'cpu': the workload produced no PyTorch-tracked CPU memory "
            f"event (PyTorch {torch.__version__})"
        )
    baseline, peak = extent.value
    return {
        "device": "cpu",
        "metric": "pytorch_tensor_bytes",
        "baseline_bytes": baseline,
        "peak_bytes": peak,
        "delta_bytes": peak - baseline,
    }


class TimelineExtent:
    """What :func:`cpu_memory_timeline` read once its block ended: ``(baseline, peak)`` bytes, or None
    when the timeline had no event."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: tuple[int, int] | None = None


@contextlib.contextmanager
def cpu_memory_timeline() -> Iterator[TimelineExtent]:
    """Run the block under the profiler's CPU memory timeline (the figure of ``measure_peak_memory``).

    After the block, the yielded :class:`TimelineExtent` holds the baseline (what the profiler saw
    resident before) and the peak of the tracked tensor bytes. The caller holds the analysis and
    memory locks (the profiler is process-global); an exception of the block propagates unchanged
    and leaves ``value`` None. ``measure_memory(..., allocator=True)`` uses it around its ledger, so
    both figures come from one call.
    """
    profiler = torch.profiler
    extent = TimelineExtent()
    # The ".raw.json.gz" suffix selects the raw event export (see _timeline_extent).
    handle, path = tempfile.mkstemp(prefix="torchscan-memory-", suffix=".raw.json.gz")
    os.close(handle)
    try:
        session = profiler.profile(
            activities=[profiler.ProfilerActivity.CPU],
            profile_memory=True,
            record_shapes=True,
            with_stack=True,
        )
        with quiet_profile(session) as prof:  # the profiler's native start/stop lines, not the block's
            yield extent
        extent.value = _timeline_extent(prof, path)
    finally:
        os.unlink(path)


def _timeline_extent(prof: Any, path: str) -> tuple[int, int] | None:
    """``(baseline, peak)`` bytes of the profiler's CPU memory timeline, ``None`` when it has no event.

    The raw export lists every event ``(time, action, bytes, category)``: ``PREEXISTING`` for memory
    the profiler saw resident before the call (parameters, inputs), then signed changes (allocations
    positive, frees negative; a version bump is a -n/+n pair). The baseline is the pre-existing sum
    alone. The coalesced ``[times, sizes]`` plot cannot give that: its first point also holds every
    allocation of the first timestamp when nothing pre-existed, so a tensor the workload created was
    counted as baseline (issue #11). The peak is the largest running sum, which also sees a
    create-and-free within one timestamp that the plot merges away.

    ``export_memory_timeline`` is the only public route to these events (the alternative its
    deprecation names is CUDA-only), so its ``FutureWarning`` is silenced for this call alone.
    """
    export = getattr(prof, "export_memory_timeline", None)
    if not callable(export):
        raise NotImplementedError(
            "torch.profiler.profile.export_memory_timeline is missing; CPU peak memory for 'cpu' needs it "
            f"(PyTorch {torch.__version__})"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        export(path, device="cpu")
    with gzip.open(path, "rt", encoding="utf-8") as exported:
        events = json.load(exported)
    if not events:
        return None
    baseline = sum(int(numbytes) for _, action, numbytes, _ in events if action == _PREEXISTING)
    current = baseline
    peak = baseline
    # The export is time-ordered; pre-existing events carry time -1 and are already in ``current``.
    for _, action, numbytes, _ in events:
        if action != _PREEXISTING:
            current += int(numbytes)
            peak = max(peak, current)
    return baseline, peak


# --- CUDA and MPS: caching-allocator counters ---------------------------------------------------


def _cuda_peak(workload: Callable[[], Any], device: Device) -> dict[str, str | int]:
    names = ("synchronize", *_ALLOCATOR_FUNCTIONS)
    functions: dict[str, Any] = {name: getattr(torch.cuda, name, None) for name in names}
    _require(_missing(functions, "torch.cuda"), device.name)
    sync = functions["synchronize"]
    target = device.torch_device
    with ANALYSIS_LOCK, MEMORY_LOCK:  # analysis lock first: one acquisition order
        sync(target)
        baseline = int(functions["memory_reserved"](target))
        functions["reset_peak_memory_stats"](target)
        workload()
        sync(target)
        peak = int(functions["max_memory_reserved"](target))
        allocated_peak = int(functions["max_memory_allocated"](target))
    return _allocator_result(device.name, baseline, peak, allocated_peak)


def _mps_peak(workload: Callable[[], Any], device: Device) -> dict[str, str | int]:
    memory = getattr(getattr(torch, "accelerator", None), "memory", None)
    functions: dict[str, Any] = {name: getattr(memory, name, None) for name in _ALLOCATOR_FUNCTIONS}
    mps_sync = getattr(getattr(torch, "mps", None), "synchronize", None)
    missing = _missing({"synchronize": mps_sync}, "torch.mps")
    _require(missing + _missing(functions, "torch.accelerator.memory"), device.name)
    sync = cast(Callable[[], None], mps_sync)
    target = device.torch_device
    with ANALYSIS_LOCK, MEMORY_LOCK:  # analysis lock first: one acquisition order
        sync()
        try:
            baseline = int(functions["memory_reserved"](target))
            functions["reset_peak_memory_stats"](target)
        except (NotImplementedError, RuntimeError) as error:
            required = ", ".join(f"torch.accelerator.memory.{name}" for name in _ALLOCATOR_FUNCTIONS)
            raise NotImplementedError(
                f"Peak memory for 'mps' needs {required}, which this PyTorch does not implement for MPS "
                f"(PyTorch {torch.__version__}): {error}"
            ) from error
        workload()
        sync()
        peak = int(functions["max_memory_reserved"](target))
        allocated_peak = int(functions["max_memory_allocated"](target))
    return _allocator_result(device.name, baseline, peak, allocated_peak)


def _missing(functions: dict[str, Any], namespace: str) -> list[str]:
    return [f"{namespace}.{name}" for name, function in functions.items() if not callable(function)]


def _require(missing: list[str], device: str) -> None:
    if missing:
        raise NotImplementedError(
            f"Peak memory for '{device}' needs missing PyTorch APIs: {', '.join(missing)} "
            f"(PyTorch {torch.__version__})"
        )


def _allocator_result(device: str, baseline: int, peak: int, allocated_peak: int) -> dict[str, str | int]:
    return {
        "device": device,
        "metric": "pytorch_reserved_bytes",
        "baseline_bytes": baseline,
        "peak_bytes": peak,
        "delta_bytes": peak - baseline,
        "allocated_peak_bytes": allocated_peak,
    }
