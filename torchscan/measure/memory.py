"""``measure_memory``: the storage ledger of one workload call (memory.md)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

import torch
from torch import nn

from torchscan.analysis.ledger.build import build_memory_report
from torchscan.analysis.ledger.ledger import StorageLedger
from torchscan.analysis.lock import ANALYSIS_LOCK
from torchscan.analysis.recursion import frames_for_workload, recursion_limit_at_least
from torchscan.measure.progress import ProgressCallback, check_progress, one_pass, start_progress
from torchscan.process.memory import TimelineExtent, cpu_memory_timeline
from torchscan.report.diagnostics import diagnostic
from torchscan.report.memory_schema import (
    ALLOCATOR_GAP_BYTES,
    ALLOCATOR_GAP_SHARE,
    CPU_PROFILER_METHOD,
    CUDA_ALLOCATED_METHOD,
    CUDA_RESERVED_METHOD,
    MemoryReport,
)
from torchscan.report.schema import Diagnostic, MetricResult, metric_result
from torchscan.runtime.arguments import ArgumentTypeError
from torchscan.runtime.device import resolve_device
from torchscan.runtime.locks import MEMORY_LOCK

PROGRESS_PHASE = "memory_ledger"
"""The phase name ``progress`` callbacks hear: ``0`` then ``1`` of ``1``."""


def _check_modules(modules: object) -> list[nn.Module] | None:
    if modules is None:
        return None
    if isinstance(modules, nn.Module):
        return [modules]
    if isinstance(modules, Sequence) and not isinstance(modules, str | bytes):
        items = list(modules)
        if items and all(isinstance(item, nn.Module) for item in items):
            if len({id(item) for item in items}) != len(items):
                raise ValueError("modules must not name the same module twice")
            return items
        if not items:
            raise ValueError("modules must not be empty; pass None to observe every module called")
    raise ArgumentTypeError(
        f"modules must be None, an nn.Module or a sequence of nn.Module, got {type(modules).__name__}"
    )


def _check_device(device: object) -> str | None:
    """The normalised device name; ``meta`` is accepted (the ledger needs no allocator there)."""
    if device is None:
        return None
    if isinstance(device, str | torch.device):
        try:
            parsed = torch.device(device)
        except (RuntimeError, ValueError) as error:
            raise ValueError(f"invalid device {device!r}: {error}") from error
        if parsed.type == "meta":
            return "meta"
    return resolve_device(device).name


def _cuda_figures(device: str) -> tuple[Callable[[], None], Callable[[], dict[str, MetricResult]]]:
    """Reset the CUDA allocator's peak counters before; read the peak deltas after (memory.md 3)."""
    target = torch.device(device)
    before: dict[str, int] = {}

    def start() -> None:
        torch.cuda.synchronize(target)
        before["allocated"] = int(torch.cuda.memory_allocated(target))
        before["reserved"] = int(torch.cuda.memory_reserved(target))
        torch.cuda.reset_peak_memory_stats(target)

    def finish() -> dict[str, MetricResult]:
        torch.cuda.synchronize(target)
        allocated = int(torch.cuda.max_memory_allocated(target)) - before["allocated"]
        reserved = int(torch.cuda.max_memory_reserved(target)) - before["reserved"]
        return {
            "max_allocated_delta": metric_result(
                "complete", max(allocated, 0), unit="bytes", scope="workload", method=CUDA_ALLOCATED_METHOD
            ),
            "max_reserved_delta": metric_result(
                "complete", max(reserved, 0), unit="bytes", scope="workload", method=CUDA_RESERVED_METHOD
            ),
        }

    return start, finish


def _cpu_figures(extent: TimelineExtent) -> dict[str, MetricResult]:
    """The CPU profiler's peak delta of the same call (memory.md 3), or nothing when it saw no event."""
    if extent.value is None:
        return {}
    baseline, peak = extent.value
    return {
        "profiler_peak_delta": metric_result(
            "complete", max(peak - baseline, 0), unit="bytes", scope="workload", method=CPU_PROFILER_METHOD
        )
    }


# The allocator figure set beside the ledger's peak - baseline, per device kind.
_COMPARED = (
    ("profiler_peak_delta", "CPU profiler", "cpu"),
    ("max_allocated_delta", "CUDA allocator", "cuda"),
)


def allocator_gap(report: MemoryReport) -> Diagnostic | None:
    """``allocator_ledger_gap`` when the ledger's peak − baseline and the allocator's own figure of the
    same call differ by more than 1 % (of the larger) or 64 KiB, else None (a pure function of the report).

    The ledger counts live storages at operator boundaries; the allocator also sees what no operator
    output holds (a kernel's workspace allocated and freed inside one operator, such as oneDNN's
    convolution backward on CPU or cuDNN's and cuBLAS's on CUDA; allocator rounding) and other
    threads' work. The diagnostic names the difference; neither figure replaces the other. Only a
    figure of the ledger's own device kind is compared (the CPU profiler with CPU tensors).
    """
    peak, baseline = report["peak"]["known_value"], report["baseline"]["known_value"]
    if peak is None or baseline is None:
        return None
    for key, source, kind in _COMPARED:
        figure = report["allocator"].get(key)
        if figure is None or figure["known_value"] is None or report["context"]["ledger_device"] != kind:
            continue
        ledger, measured = int(peak) - int(baseline), int(figure["known_value"])
        gap = measured - ledger
        if abs(gap) <= max(ALLOCATOR_GAP_SHARE * max(ledger, measured), ALLOCATOR_GAP_BYTES):
            return None
        share = abs(gap) / max(ledger, 1)
        if gap > 0:
            why = (
                "memory no operator output holds: a workspace a kernel allocates and frees inside one "
                "operator (CPU convolution backward and im2col buffers, sort, LAPACK and cdist work "
                "arrays, cuDNN and cuBLAS workspaces on CUDA), allocator rounding, or allocations "
                "outside the dispatch mode (other threads)"
            )
        else:
            why = (
                "storages the ledger counts that the allocator did not report for this call (memory "
                "allocated outside PyTorch's allocator, or before the call and first used in it)"
            )
        message = (
            f"The {source}'s {key} ({measured:,} bytes) is {abs(gap):,} bytes ({share:.1%}) "
            f"{'above' if gap > 0 else 'below'} the ledger's peak - baseline ({ledger:,} bytes): {why}. "
            "The ledger's figures stay live-storage bytes; see docs/memory.md."
        )
        return diagnostic("allocator_ledger_gap", message, metric="peak")
    return None


def measure_memory(
    workload: Callable[[], object],
    *,
    device: str | torch.device | None = None,
    modules: nn.Module | Sequence[nn.Module] | None = None,
    timeline: bool = True,
    progress: bool | ProgressCallback | None = None,
    allocator: bool = False,
) -> MemoryReport:
    """Run ``workload`` once under the storage ledger and report where its memory went (memory.md).

    Every storage the workload's operators create is recorded with its size (``nbytes()``, never its
    values) until it dies, on CPU, CUDA, MPS, meta and fake tensors alike, and put in one category:
    ``parameters``, ``buffers``, ``gradients`` and ``optimizer_state`` of ``modules`` (default: every
    module called) and of the optimizers whose ``step`` runs; ``activations`` (saved for backward by
    autograd); ``inputs`` (alive before the call); ``temporaries`` (everything else). ``peak`` is the
    highest sum of live storage bytes at any operator boundary, the baseline included.

    What these numbers do NOT mean: live-storage bytes, not what the allocator holds (rounding,
    caching, fragmentation, the CUDA context, library workspaces and communication buffers are
    excluded); not process RSS; not whether the step fits a device. On CUDA ``allocator`` carries
    ``torch.cuda``'s own peak deltas beside the ledger (for ``device="cuda..."``). On CPU it is empty
    unless ``allocator=True``: then the profiler's memory timeline runs around the same call and
    ``allocator.profiler_peak_delta`` is its peak minus its baseline (``measure_peak_memory``'s
    figure; ``device=None`` counts as ``"cpu"`` here). Never a substitute for each other: when the
    ledger's peak − baseline and the allocator's figure differ by more than 1 % or 64 KiB, an
    ``allocator_ledger_gap`` diagnostic names the difference (statuses are unchanged).
    ``allocator=True`` on meta, fake or MPS tensors raises ``ValueError`` (no allocator to read).

    ``device`` names where the workload's tensors live (``cpu``, ``cuda[:N]``, ``mps``, ``meta``);
    it moves nothing and only selects the allocator figures. The workload runs exactly once; its
    exception propagates unchanged after every hook, the dispatch mode and the saved-tensor hooks
    are removed. Raises ``TypeError``/``ValueError`` for bad arguments before anything runs.
    """
    if not callable(workload):
        raise ArgumentTypeError(f"workload must be callable, got {type(workload).__name__}")
    roots = _check_modules(modules)
    if not isinstance(timeline, bool):
        raise ArgumentTypeError(f"timeline must be a bool, got {type(timeline).__name__}")
    check_progress(progress)
    if not isinstance(allocator, bool):
        raise ArgumentTypeError(f"allocator must be a bool, got {type(allocator).__name__}")
    name = _check_device(device)
    cuda = _cuda_figures(name) if name is not None and name.startswith("cuda") else None
    profile_cpu = allocator and name in (None, "cpu")
    if allocator and cuda is None and not profile_cpu:
        raise ValueError(
            f"allocator=True reads the CPU profiler or the CUDA allocator; device {name!r} has no "
            "allocator figure (the ledger alone is measured there)"
        )
    reporter = start_progress(progress)
    figures: dict[str, MetricResult] = {}
    with (
        ANALYSIS_LOCK,
        MEMORY_LOCK,
        recursion_limit_at_least(frames_for_workload()),
        one_pass(reporter, PROGRESS_PHASE),
    ):
        ledger = StorageLedger(roots)
        if cuda is not None:
            cuda[0]()
        # The profiler (allocator=True on CPU) surrounds the ledger: one call gives both figures.
        profiled = cpu_memory_timeline() if profile_cpu else contextlib.nullcontext(TimelineExtent())
        with profiled as extent:
            try:
                ledger.start()  # inside: a start that fails half-way still has every hook removed
                with ledger:
                    workload()
            finally:
                ledger.stop()
        if cuda is not None:
            figures = cuda[1]()
        elif profile_cpu:
            figures = _cpu_figures(extent)
    if reporter is not None:
        reporter.close()
    report = build_memory_report(ledger, device=name, timeline=timeline, allocator=figures)
    if profile_cpu and report["context"]["ledger_device"] != "cpu":
        report["allocator"] = {}  # meta, fake or CUDA tensors: the CPU profiler saw none of them
    gap = allocator_gap(report)
    if gap is not None:
        report["diagnostics"].append(gap)
    return report
