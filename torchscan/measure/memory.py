"""``measure_memory``: the storage ledger of one workload call (memory.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from torchscan.analysis.lock import ANALYSIS_LOCK
from torchscan.analysis.memory_build import build_memory_report
from torchscan.analysis.memory_ledger import StorageLedger
from torchscan.analysis.recursion import frames_for_workload, recursion_limit_at_least
from torchscan.measure.progress import ProgressCallback, check_progress, one_pass, start_progress
from torchscan.report.memory_schema import CUDA_ALLOCATED_METHOD, CUDA_RESERVED_METHOD, MemoryReport
from torchscan.report.schema import MetricResult, metric_result
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


def measure_memory(
    workload: Callable[[], object],
    *,
    device: str | torch.device | None = None,
    modules: nn.Module | Sequence[nn.Module] | None = None,
    timeline: bool = True,
    progress: bool | ProgressCallback | None = None,
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
    ``torch.cuda``'s own peak deltas beside the ledger (for ``device="cuda..."``); it is empty on
    CPU, meta and fake tensors. Never a substitute for each other.

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
    name = _check_device(device)
    cuda = _cuda_figures(name) if name is not None and name.startswith("cuda") else None
    reporter = start_progress(progress)
    allocator: dict[str, MetricResult] = {}
    with (
        ANALYSIS_LOCK,
        MEMORY_LOCK,
        recursion_limit_at_least(frames_for_workload()),
        one_pass(reporter, PROGRESS_PHASE),
    ):
        ledger = StorageLedger(roots)
        if cuda is not None:
            cuda[0]()
        try:
            ledger.start()  # inside: a start that fails half-way still has every hook removed
            with ledger:
                workload()
        finally:
            ledger.stop()
        if cuda is not None:
            allocator = cuda[1]()
    if reporter is not None:
        reporter.close()
    return build_memory_report(ledger, device=name, timeline=timeline, allocator=allocator)
