"""Storage-ledger records -> ``MemoryReport`` (memory.md 2). Pure bookkeeping, no hooks.

Every record says from which sample to which sample its storage was live and in which category, so
the live bytes per category at every sample are prefix sums of +nbytes at creation and -nbytes at
death. The peak is the highest total at any sample (the baseline included); ``by_module`` and the
timeline are read off the same sums.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from torchscan.analysis.dispatch.distributed import process_group_context
from torchscan.analysis.ledger.calls import CallRecord
from torchscan.analysis.ledger.ledger import ACTIVATIONS, TEMPORARIES, StorageLedger, StorageRecord
from torchscan.report.diagnostics import diagnostic
from torchscan.report.memory_schema import (
    CATEGORIES,
    LEDGER_DEVICES,
    MAX_TIMELINE_POINTS,
    METHOD,
    PHASES,
    SCOPE_AT_PEAK,
    SCOPE_CALL,
    SCOPE_PHASE,
    SCOPE_START,
    SCOPE_WORKLOAD,
    MemoryCategories,
    MemoryModuleCall,
    MemoryPhases,
    MemoryReport,
    ModuleCallRef,
    TimelinePoint,
)
from torchscan.report.schema import Diagnostic, MetricResult, metric_result
from torchscan.runtime.torch_versions import untested_torch_diagnostics

_ALL = frozenset(range(len(CATEGORIES)))


def _bytes(value: int | None, scope: str, partial: bool) -> MetricResult:
    if value is None:
        return metric_result("unavailable", None, unit="bytes", scope=scope, method=METHOD)
    return metric_result(
        "partial" if partial else "complete", value, unit="bytes", scope=scope, method=METHOD
    )


class _Sums:
    """Live bytes per sample: the total at every sample, per category on demand (two sweeps)."""

    def __init__(self, records: Sequence[StorageRecord], samples: int) -> None:
        self.samples = samples
        self.deltas: list[list[int]] = [[0] * (samples + 1) for _ in CATEGORIES]
        for record in records:
            if record.created > samples:  # made after the last boundary: never live at one
                continue
            row = self.deltas[record.category]
            row[record.created] += record.nbytes
            if record.freed is not None and record.freed <= samples:
                row[record.freed] -= record.nbytes
        self.total: list[int] = []
        running = 0
        columns = list(zip(*self.deltas, strict=True))
        for column in columns:
            running += sum(column)
            self.total.append(running)

    def at(self, wanted: Sequence[int]) -> dict[int, list[int]]:
        """Live bytes per category at each of the ``wanted`` samples."""
        targets = set(wanted)
        found: dict[int, list[int]] = {}
        running = [0] * len(CATEGORIES)
        for sample in range(self.samples + 1):
            for index, row in enumerate(self.deltas):
                running[index] += row[sample]
            if sample in targets:
                found[sample] = list(running)
        return found


def _diagnostics(ledger: StorageLedger) -> tuple[list[Diagnostic], set[int]]:
    """What the ledger could not see, and the categories whose figures it makes lower bounds."""
    found: list[Diagnostic] = []
    partial: set[int] = set()
    if ledger.untracked:
        partial |= {TEMPORARIES}
        found.append(
            diagnostic(
                "untracked_storage",
                f"{ledger.untracked} storage(s) were read that were neither created under the ledger nor "
                "reachable before the call (made outside the dispatch mode, e.g. from NumPy, or held only "
                "by C++ such as a graph built before the call); counted from their first use only",
                metric="peak",
            )
        )
    if ledger.subclasses:
        partial |= _ALL
        names = ", ".join(sorted(ledger.subclasses))
        found.append(
            diagnostic(
                "tensor_subclass",
                f"tensor subclasses or layouts ({names}) hide their storages from the ledger; not counted",
                metric="peak",
            )
        )
    if ledger.data_dependent:
        partial |= _ALL
        names = ", ".join(sorted(ledger.data_dependent))
        found.append(
            diagnostic(
                "data_dependent_operator",
                f"value-dependent operators ({names}) ran on meta or fake tensors: their output sizes "
                "are not those of a real run",
                metric="peak",
            )
        )
    if ledger.opaque:
        partial |= {TEMPORARIES}
        names = ", ".join(sorted(ledger.opaque))
        found.append(
            diagnostic(
                "higher_order_operator",
                f"higher-order operators ({names}) ran as one call: storages they create and free "
                "inside it are not seen, so temporaries and the peak are lower bounds",
                metric="peak",
            )
        )
    if ledger.hidden_saves:
        partial |= {ACTIVATIONS, TEMPORARIES}
        found.append(
            diagnostic(
                "saved_tensor_hooks_hidden",
                "the workload's own saved-tensor hooks hid what autograd saved: storages they keep count "
                "as temporaries, so activations is a lower bound (their sum is exact)",
                metric="activations",
            )
        )
    if ledger.opaque_saves:
        partial |= {ACTIVATIONS}
        found.append(
            diagnostic(
                "opaque_saved_tensor",
                "an outer saved-tensor hook packed a tensor into a non-tensor object: not counted as saved",
                metric="activations",
            )
        )
    return found, partial


def _decimate(samples: int, peak: int) -> list[int]:
    """At most MAX_TIMELINE_POINTS sample indices, evenly spaced, the peak always included."""
    if samples + 1 <= MAX_TIMELINE_POINTS:
        return list(range(samples + 1))
    count = MAX_TIMELINE_POINTS - 1
    chosen = {round(index * samples / (count - 1)) for index in range(count)}
    chosen.add(peak)
    return sorted(chosen)


def _phase(index: int | None) -> str | None:
    return None if index is None else PHASES[index]


def _call_peaks(calls: Sequence[CallRecord], total: Sequence[int]) -> list[int]:
    """Highest total inside each call, children first (calls nest, so each sample is read once)."""
    children: list[list[int]] = [[] for _ in calls]
    for index, call in enumerate(calls):
        if call.parent >= 0:
            children[call.parent].append(index)
    peaks = [0] * len(calls)
    for index in range(len(calls) - 1, -1, -1):
        call = calls[index]
        best = total[call.start]
        position = call.start
        for child in children[index]:
            inner = calls[child]
            if position < inner.start:
                best = max(best, max(total[position : inner.start]))
            best = max(best, peaks[child])
            position = max(position, inner.end + 1)
        if position <= call.end:
            best = max(best, max(total[position : call.end + 1]))
        peaks[index] = best
    return peaks


def _by_module(ledger: StorageLedger, total: Sequence[int], partial: bool) -> list[MemoryModuleCall]:
    calls = ledger.calls.calls
    allocated = [0] * len(calls)
    saved = [0] * len(calls)
    for record in ledger.records:
        if record.call >= 0 and not record.preexisting:
            allocated[record.call] += record.nbytes
            if record.category == ACTIVATIONS:
                saved[record.call] += record.nbytes
    for index in range(len(calls) - 1, -1, -1):  # a parent's figures include its children's
        parent = calls[index].parent
        if parent >= 0:
            allocated[parent] += allocated[index]
            saved[parent] += saved[index]
    peaks = _call_peaks(calls, total)
    return [
        {
            "path": call.path,
            "call_index": call.call_index,
            "module_type": call.module_type,
            "activations_saved": _bytes(saved[index], SCOPE_CALL, partial),
            "allocated": _bytes(allocated[index], SCOPE_CALL, partial),
            "peak_inside": _bytes(peaks[index], SCOPE_CALL, partial),
        }
        for index, call in enumerate(calls)
    ]


def _context_devices(ledger: StorageLedger, device: str | None) -> tuple[str, str, list[Diagnostic]]:
    """``context.device`` and ``context.ledger_device``, from the storages seen (or the argument)."""
    devices = ledger.devices
    shown = next(iter(devices)) if len(devices) == 1 else ("mixed" if devices else (device or "cpu"))
    kinds = sorted({name.split(":")[0] for name in devices})
    if ledger.fake:
        return shown, "fake", []
    if len(kinds) == 1:
        kind = kinds[0]
    elif device is not None:  # several device types: the one the caller named
        kind = device.split(":")[0]
    else:
        kind = next((name for name in kinds if name != "cpu"), "cpu")
    if kind in LEDGER_DEVICES:
        return shown, kind, []
    message = f"tensors on device type {kind!r}: the ledger counts their storages as on any device"
    return shown, "cpu", [diagnostic("unsupported_ledger_device", message, metric="peak")]


def build_memory_report(
    ledger: StorageLedger, *, device: str | None, timeline: bool, allocator: dict[str, MetricResult]
) -> MemoryReport:
    """The MemoryReport of one finished (stopped) ledger."""
    samples = ledger.event
    sums = _Sums(ledger.records, samples)
    total = sums.total
    peak_sample = max(range(samples + 1), key=total.__getitem__)  # the first highest sample
    diagnostics, partial_categories = _diagnostics(ledger)
    partial = bool(partial_categories)
    wanted = _decimate(samples, peak_sample) if timeline else []
    snapshots = sums.at([*wanted, peak_sample])
    at_peak = snapshots[peak_sample]
    by_category: MemoryCategories = {  # type: ignore[assignment]
        name: _bytes(at_peak[index], SCOPE_AT_PEAK, index in partial_categories)
        for index, name in enumerate(CATEGORIES)
    }
    phase_peaks: list[int | None] = [None] * len(PHASES)
    for sample in range(1, samples + 1):
        phase = ledger.phases[sample]
        if phase is not None:
            best = phase_peaks[phase]
            if best is None or total[sample] > best:
                phase_peaks[phase] = total[sample]
    by_phase: MemoryPhases = {  # type: ignore[assignment]
        name: _bytes(phase_peaks[index], SCOPE_PHASE, partial) for index, name in enumerate(PHASES)
    }
    call = ledger.sample_calls[peak_sample]
    module: ModuleCallRef | None = None
    if call >= 0:
        record = ledger.calls.calls[call]
        module = {"path": record.path, "call_index": record.call_index}
    points: list[TimelinePoint] = [
        {
            "event": sample,
            "phase": _phase(ledger.phases[sample]),  # type: ignore[typeddict-item]
            "by_category": dict(zip(CATEGORIES, snapshots[sample], strict=True)),  # type: ignore[typeddict-item]
        }
        for sample in wanted
    ]
    shown, kind, device_notes = _context_devices(ledger, device)
    report: MemoryReport = {
        "schema_version": 1,
        "report_type": "memory",
        "context": {
            "torch_version": str(torch.__version__),
            "device": shown,
            "ledger_device": kind,  # type: ignore[typeddict-item]
            "dtypes": sorted(ledger.dtypes),
            "method": METHOD,
        },
        "peak": _bytes(total[peak_sample], SCOPE_WORKLOAD, partial),
        "baseline": _bytes(total[0], SCOPE_START, partial),
        "at_peak": {
            "by_category": by_category,
            "phase": _phase(ledger.phases[peak_sample]),  # type: ignore[typeddict-item]
            "module": module,
        },
        "by_phase": by_phase,
        "by_module": _by_module(ledger, total, partial),
        "timeline": points,
        "timeline_events": samples,
        "allocator": allocator,
        "diagnostics": diagnostics + device_notes + untested_torch_diagnostics(),
    }
    group = process_group_context(None)
    if group is not None:
        report["context"]["distributed"] = group
    return report
