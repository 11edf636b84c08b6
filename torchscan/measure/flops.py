"""``measure_flops``: operator FLOPs of one workload call (formulas.md Part B)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torch import nn

from torchscan.analysis.dispatch.observer import OperatorObserver
from torchscan.analysis.dispatch.resolution import native_registry, validate_custom_mapping
from torchscan.analysis.dispatch.steps import StepObserver
from torchscan.analysis.lock import ANALYSIS_LOCK
from torchscan.analysis.recursion import frames_for_workload, recursion_limit_at_least
from torchscan.measure.module_labels import ModuleLabels
from torchscan.report.schema import FlopReport


def measure_flops(
    workload: Callable[[], object],
    *,
    modules: nn.Module | list[nn.Module] | None = None,
    custom_mapping: Mapping[Any, Callable[..., int]] | None = None,
    by_step: bool = False,
    bytes: bool = False,
) -> FlopReport:
    """Count the operator FLOPs of one call of ``workload`` under ``torchscan_flops_v1``.

    The workload is invoked exactly once; its return value is discarded and its exceptions
    propagate unchanged. Forward and backward work are counted as executed (no multipliers).

    The total is ``complete`` only when every observed operator was counted or ignored with a
    stated reason; otherwise it is ``partial`` and ``known_value`` is a lower bound — not an
    estimate of the whole, and never a coverage percentage. These are not FLOP/s, not latency and
    not the module-formula FLOPs of ``crawl_module`` (the two methods are never mixed).

    ``by_phase`` splits the total into ``forward``, ``backward``, ``optimizer`` and ``recompute``
    (training-and-hardware.md 1; :mod:`torchscan.analysis.dispatch.phases` says how each is recognised): their
    known values sum exactly to the total, and each is complete only when all of its operators were
    counted or ignored. PyTorch's global optimizer step hooks are installed for the call only and are
    removed, with every other hook and the dispatch mode, also when the workload raises.

    ``modules`` is validated and otherwise unused, except as the step root of ``by_step``:
    ``by_module`` labels come from a module tracker with PyTorch's ``ModuleTracker`` labels
    (:mod:`torchscan.measure.module_labels`), which records only module calls of the calling thread.

    ``bytes=True`` adds ``operator_bytes`` (operand bytes read plus output bytes written at each
    operator boundary, generation.md 1; not DRAM traffic) and ``by_operator_bytes``.
    ``by_step=True`` needs ``modules`` to be exactly one ``nn.Module``, the step root: each top-level
    call of it is one entry of ``by_step`` (FLOPs, operator bytes, attention KV bytes, input tokens)
    and everything else goes to ``outside_steps``; with ``operator_bytes``, they sum exactly to the
    totals. The root's two hooks are removed after the call, also when the workload raises. Without
    these options nothing of this runs per operator.

    Python's recursion limit is raised for the call (three times the current one, at most 30,000,
    never lowered) and restored afterwards: a workload whose plain run fits the current limit does
    not hit ``RecursionError`` because module hooks add a frame per nesting level.
    """
    if not callable(workload):
        raise TypeError(f"workload must be callable, got {type(workload).__name__}")
    if not (
        modules is None
        or isinstance(modules, nn.Module)
        or (isinstance(modules, list) and all(isinstance(m, nn.Module) for m in modules))
    ):
        raise TypeError("modules must be None, an nn.Module or a list of nn.Module")
    if by_step is not True and by_step is not False:
        raise TypeError(f"by_step must be a bool, got {type(by_step).__name__}")
    if bytes is not True and bytes is not False:
        raise TypeError(f"bytes must be a bool, got {type(bytes).__name__}")
    if by_step and not isinstance(modules, nn.Module):
        raise ValueError(
            "by_step=True needs modules= to be exactly one nn.Module (the step root whose top-level "
            f"calls are the steps), got {'None' if modules is None else type(modules).__name__}"
        )
    mapping = validate_custom_mapping(custom_mapping)
    native_registry()  # raises NotImplementedError before the workload runs when unavailable

    # The module tracker installs process-global module hooks: one counting call at a time. Hooked
    # module calls take an extra frame per nesting level, so the recursion limit is raised for the
    # call (as crawl_module does) and restored exactly, also when the workload raises.
    with ANALYSIS_LOCK, recursion_limit_at_least(frames_for_workload()):
        if by_step or bytes:
            root = modules if by_step and isinstance(modules, nn.Module) else None
            stepped = StepObserver(mapping, root=root, by_operator_bytes=bytes)
            try:
                stepped.attach()
                _observe(stepped, workload)
            finally:
                stepped.detach()
            return stepped.report()
        observer = OperatorObserver(mapping)
        _observe(observer, workload)
        return observer.report()


def _observe(observer: OperatorObserver, workload: Callable[[], object]) -> None:
    """Run ``workload`` once under ``observer`` and the module tracker of ``by_module``."""
    labels = ModuleLabels(observer)
    observer.module_labels = labels
    with labels, observer:
        workload()
