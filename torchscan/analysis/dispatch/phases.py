"""Workload phases of operator FLOPs (training-and-hardware.md 1): forward, backward, optimizer, recompute.

The operator observer asks :meth:`PhaseTally.add` to file every counted call under the phase that is
running when it is dispatched. The phase is read from PyTorch's own state at that moment (the
autograd engine's graph task, its current node, the saved-tensor hooks of ``torch.utils.checkpoint``)
plus one counter kept by PyTorch's global optimizer step hooks, which are installed only while an
observation is active and always removed after it.
"""

from __future__ import annotations

import threading
from typing import Any

import torch
from torch.optim import optimizer as optim_module  # imported by ``import torch`` itself

from torchscan.report.schema import FlopPhases, MetricResult, Status, metric_result

PHASES = ("forward", "backward", "optimizer", "recompute")
"""Report order of the ``by_phase`` keys."""
FORWARD, BACKWARD, OPTIMIZER, RECOMPUTE = range(4)

_graph_task_id = torch._C._current_graph_task_id
_current_node = torch._C._current_autograd_node
# Absent on some releases: then only the reentrant checkpoint variant is recognised (documented).
_top_saved_hooks = getattr(torch._C._autograd, "_top_saved_tensors_default_hooks", None)
_CHECKPOINT_MODULE = "torch.utils.checkpoint"
_REENTRANT_NODE = "CheckpointFunctionBackward"  # the autograd node of CheckpointFunction


def in_checkpoint_recompute() -> bool:
    """Whether the autograd engine is re-running a checkpointed forward right now.

    Non-reentrant ``torch.utils.checkpoint`` recomputes from a saved-tensor unpack hook, under its
    own ``_recomputation_hook`` saved-tensor hooks (the top of the thread's default-hooks stack while
    the recompute runs); a checkpoint nested in the recomputed code pushes its ``_checkpoint_hook``
    there, so any hook of ``torch.utils.checkpoint`` on top inside the engine means recompute (a
    checkpoint called from a backward hook would count as recompute too). The reentrant variant
    recomputes inside ``CheckpointFunction.backward``: the engine's current node is then
    ``CheckpointFunctionBackward`` (the backward of the recomputed graph is a nested graph task with
    its own nodes, so it stays ``backward``).
    Limit: saved-tensor hooks that the checkpointed code pushes itself (e.g. ``save_on_cpu``) hide
    the checkpoint's hooks, and its operators under them are reported as ``backward``.
    """
    hooks = _top_saved_hooks(True) if _top_saved_hooks is not None else None
    if hooks is not None and getattr(hooks[0], "__module__", None) == _CHECKPOINT_MODULE:
        return True
    node = _current_node()
    return node is not None and node.name() == _REENTRANT_NODE


def current_phase(optimizer_depth: int) -> int:
    """The phase of the operator being dispatched now (one C call outside backward).

    ``optimizer`` while an ``Optimizer.step`` runs on the observing thread (``optimizer_depth`` > 0).
    Otherwise the autograd engine reports a graph task id other than -1 while it executes backward
    nodes (its worker threads inherit the id and the dispatch mode with the caller's thread-local
    state): that is ``backward``, unless a checkpointed forward is being re-run
    (:func:`in_checkpoint_recompute`), which is ``recompute``. Grad mode is not consulted: a
    ``create_graph=True`` backward runs with grad on and is still ``backward``.
    """
    if optimizer_depth:
        return OPTIMIZER
    if _graph_task_id() == -1:
        return FORWARD
    return RECOMPUTE if in_checkpoint_recompute() else BACKWARD


class PhaseTally:
    """FLOPs and completeness per phase for one observation, and the optimizer step hooks.

    ``install``/``remove`` bracket the observation (``remove`` always runs, also after an error).
    The hooks are process-global: a step on another thread, whose operators the thread-local dispatch
    mode does not see, must not turn this thread's operators into optimizer work, so only steps on
    the installing thread count. A step that raises never runs its post hook: ``remove`` resets the
    depth, so the next observation starts clean (within the raising call the rest stays
    ``optimizer``, a documented limit).
    """

    def __init__(self) -> None:
        self.flops = [0, 0, 0, 0]  # indexed by FORWARD, BACKWARD, OPTIMIZER, RECOMPUTE
        self.gaps = [False, False, False, False]  # a phase had an operator not counted in full
        self.optimizer_depth = 0
        self._hooks: list[Any] = []
        self._thread = threading.get_ident()

    def _pre_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if threading.get_ident() == self._thread:
            self.optimizer_depth += 1

    def _post_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if threading.get_ident() == self._thread:
            self.optimizer_depth = max(self.optimizer_depth - 1, 0)

    def install(self) -> None:
        """Register the global optimizer step hooks for the calling thread."""
        self._thread = threading.get_ident()
        self._hooks = [optim_module.register_optimizer_step_pre_hook(self._pre_step)]
        try:
            self._hooks.append(optim_module.register_optimizer_step_post_hook(self._post_step))
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        """Remove the hooks (idempotent) and forget any step left open by an exception."""
        hooks, self._hooks = self._hooks, []
        for handle in hooks:
            handle.remove()
        self.optimizer_depth = 0

    def add(self, flops: int, complete: bool) -> None:
        """File one counted call under the phase running now."""
        phase = current_phase(self.optimizer_depth)
        self.flops[phase] += flops
        if not complete:
            self.gaps[phase] = True

    def add_counted(self, flops: int) -> None:
        """:meth:`add` for a completely counted call, the forward case without :func:`current_phase`'s
        call: the observer's one-pass path files most operators here."""
        if self.optimizer_depth or _graph_task_id() != -1:
            self.add(flops, True)
        else:
            self.flops[FORWARD] += flops

    def results(self, method: str) -> FlopPhases:
        """``by_phase``: one result per phase; complete unless an operator of it was not counted."""
        forward, backward, optimizer, recompute = (
            _phase_result("partial" if self.gaps[index] else "complete", self.flops[index], method)
            for index in range(len(PHASES))
        )
        return {"forward": forward, "backward": backward, "optimizer": optimizer, "recompute": recompute}


def _phase_result(status: Status, value: int | None, method: str) -> MetricResult:
    return metric_result(status, value, unit="FLOPs", scope="workload_phase", method=method)


def unavailable_phases(method: str) -> FlopPhases:
    """``by_phase`` of a report that counted nothing (structure mode): every phase unavailable."""
    return {
        "forward": _phase_result("unavailable", None, method),
        "backward": _phase_result("unavailable", None, method),
        "optimizer": _phase_result("unavailable", None, method),
        "recompute": _phase_result("unavailable", None, method),
    }
