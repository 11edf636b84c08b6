"""The FlopReport of an operator observer: diagnostics, totals and context from its raw tallies.

The observer (:mod:`torchscan.analysis.dispatch.observer`) keeps plain integers, names and reasons
while the workload runs; MetricResults, diagnostics and the report's context are built here, once,
when the report is asked for (issue #36: nothing per operator for what only the report needs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import torch

from torchscan.analysis.dispatch import distributed, higher_order
from torchscan.analysis.dispatch.phases import PhaseTally, unavailable_phases
from torchscan.report.diagnostics import diagnostic
from torchscan.report.names import report_name
from torchscan.report.schema import (
    ATTENTION_COUNTING,
    COUNTING_CONVENTION,
    NOT_REQUESTED,
    OPERATOR_METHOD,
    SCHEMA_VERSION,
    Diagnostic,
    FlopContext,
    FlopReport,
    MetricResult,
    metric_result,
)
from torchscan.runtime.torch_versions import installed_version, untested_torch_diagnostics


class ObservedTallies(Protocol):
    """What a report reads from an :class:`~torchscan.analysis.dispatch.observer.OperatorObserver`."""

    by_operator: dict[str, int]
    ignored: dict[str, int]
    ignored_reasons: dict[str, str]
    unverified: dict[str, tuple[int, int]]
    native: Mapping[Any, Any]
    phases: PhaseTally
    distributed: distributed.DistributedTally

    def diagnostics(self) -> list[Diagnostic]: ...

    def by_module(self) -> dict[str, int]: ...


def operator_diagnostics(
    unsupported: Mapping[str, str],
    uncounted: Mapping[str, int],
    unverified: Mapping[str, tuple[int, int]],
    incomplete: Mapping[str, str],
) -> list[Diagnostic]:
    """Operator diagnostics in the order of formulas.md B.4: unsupported formulas, uncounted
    operators (unverified inherited formulas among them, each with its ``info`` figure), then
    incomplete formulas."""
    entries = [
        diagnostic("unsupported_operator_formula", reason, metric="flops", operator=name)
        for name, reason in unsupported.items()
    ]
    entries += [
        diagnostic(
            "uncounted_operator",
            f"{name} was observed {calls} time(s), but no FLOP formula is registered.",
            metric="flops",
            operator=name,
        )
        for name, calls in sorted(uncounted.items())
        if name not in unsupported
    ]
    version = installed_version()
    for name, (calls, flops) in sorted(unverified.items()):
        if name in unsupported:
            continue
        entries.append(
            diagnostic(
                "uncounted_operator",
                f"{name} was observed {calls} time(s); TorchScan has no formula of its own for it and "
                f"FlopCounterMode's is not checked on torch {version}, so it is not counted.",
                metric="flops",
                operator=name,
            )
        )
        entries.append(
            diagnostic(
                "unverified_inherited_formula",
                f"FlopCounterMode's formula for {name} on torch {version}, which TorchScan's reference "
                f"suite has not checked there, gives {flops} FLOPs over {calls} call(s); left out of "
                "the total.",
                metric="flops",
                severity="info",
                operator=name,
            )
        )
    entries += [
        diagnostic("incomplete_operator_formula", reason, metric="flops", operator=name)
        for name, reason in sorted(incomplete.items())
    ]
    return entries


def flop_report(observer: ObservedTallies) -> FlopReport:
    """The :class:`FlopReport` of everything ``observer`` saw so far."""
    diagnostics = observer.diagnostics()
    known = sum(observer.by_operator.values())
    gaps = any(entry["severity"] != "info" for entry in diagnostics)
    total = metric_result(
        "partial" if gaps else "complete",
        known,
        unit="FLOPs",
        scope="workload",
        method=OPERATOR_METHOD,
    )
    report = _report(observer, total, diagnostics)
    tally = observer.distributed
    logical = tally.logical_total(total, gaps)
    if logical is not None:
        report["logical_total"] = logical
    communication = tally.communication()
    if communication is not None:
        report["communication"] = communication
    report["diagnostics"] += tally.diagnostics()
    report["diagnostics"] += untested_torch_diagnostics(sorted(observer.unverified))
    context = distributed.process_group_context(tally.mesh)
    if context is not None:
        report["context"]["distributed"] = context
    return report


def _report(observer: ObservedTallies, total: MetricResult, diagnostics: list[Diagnostic]) -> FlopReport:
    return {
        "schema_version": SCHEMA_VERSION,
        "context": flop_context(OPERATOR_METHOD, observer.by_operator, observer.native),
        "total": total,
        "by_phase": observer.phases.results(OPERATOR_METHOD),
        "by_module": {report_name(k): v for k, v in sorted(observer.by_module().items()) if k != "Global"},
        "by_operator": dict(sorted(observer.by_operator.items())),
        "ignored_operators": {
            name: {"calls": calls, "reason": observer.ignored_reasons[name]}
            for name, calls in sorted(observer.ignored.items())
        },
        "diagnostics": diagnostics,
    }


# The report names of a registry's operators, per registry object and size (as resolution decisions
# are remembered, resolution._DECISIONS): every report reads them.
_COVERED: dict[int, tuple[Mapping[Any, Any], int, frozenset[str]]] = {}


def _covered(registry: Mapping[Any, Any]) -> frozenset[str]:
    known = _COVERED.get(id(registry))
    if known is not None and known[0] is registry and known[1] == len(registry):
        return known[2]
    names = frozenset(
        higher_order.operator_name(k) if higher_order.is_higher_order(k) else str(k) for k in registry
    )
    if len(_COVERED) > 16:  # caller-built registries (tests): stay bounded
        _COVERED.clear()
    _COVERED[id(registry)] = (registry, len(registry), names)
    return names


def flop_context(method: str, by_operator: Mapping[str, int], registry: Mapping[Any, Any]) -> FlopContext:
    """A FlopReport's context; ``flop_counter_operators`` read from the running torch's ``registry``
    (torch-versions.md 1: what "FlopCounterMode alone" counts is never a list fixed in code)."""
    covered = _covered(registry)
    return {
        "torch_version": str(torch.__version__),
        "method": method,
        "counting_convention": COUNTING_CONVENTION,
        "attention": ATTENTION_COUNTING,
        "flop_counter_operators": sorted(name for name in by_operator if name in covered),
    }


def not_requested_report() -> FlopReport:
    """The empty operator report of structure mode (analysis.md 6.2)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "context": flop_context(NOT_REQUESTED, {}, {}),
        "total": metric_result("unavailable", unit="FLOPs", scope="workload", method=NOT_REQUESTED),
        "by_phase": unavailable_phases(NOT_REQUESTED),
        "by_module": {},
        "by_operator": {},
        "ignored_operators": {},
        "diagnostics": [],
    }
