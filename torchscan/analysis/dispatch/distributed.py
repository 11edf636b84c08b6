"""What the operator observer does under ``torch.distributed`` (distributed.md 2-3).

Mechanism (measured on torch 2.13 and 2.14 with gloo): a ``TorchDispatchMode`` sees a DTensor
operator *before* DTensor's ``__torch_dispatch__``, with DTensor arguments whose shapes are global.
The observer counts that call once at those global shapes for ``logical_total``, then re-dispatches
it with itself re-entered; the re-dispatched call reaches the mode again and the mode answers
``NotImplemented``, which hands it to DTensor's own dispatch *with the mode still active*. Every
local operator DTensor then runs (the local matrix product, the chunk/clone/div of a redistribution,
a collective) reaches the mode as a plain-tensor operator and is counted once, as executed work.
Nothing is counted twice: the DTensor-level call only feeds the logical tally, the local calls only
the executed one. DTensor's sharding propagation runs operators on fake tensors the first time it
sees a signature; those calls are skipped (they execute nothing and are cached after one call).

Collectives (``_c10d_functional.*``, ``c10d.*``) are never FLOP gaps: they are tallied as
communication, with the bytes this rank contributed. FSDP2's copy operators in and out of its
communication buffers are ignored with a stated reason. The caller's process group is only read
(``is_initialized``, backend, world size, rank): never initialized, joined or destroyed here.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable
from typing import Any

import torch

from torchscan.analysis.dispatch.kinds import CUSTOM, IGNORED, INHERITED, UNCOUNTED
from torchscan.report.diagnostics import diagnostic
from torchscan.report.schema import (
    COMMUNICATION_METHOD,
    OPERATOR_METHOD,
    Communication,
    Diagnostic,
    DistributedContext,
    MeshDimension,
    MetricResult,
    metric_result,
)

COMMUNICATION_PREFIXES = ("_c10d_functional", "c10d.")
FSDP_COPY_REASON = (
    "FSDP2 copy of parameter or gradient shards into or out of a communication buffer: moves data, "
    "performs no arithmetic."
)
# torch 2.15 moved the reduce-scatter copy-in to ``chunk_cat_mixed_dtype`` (chunks, casts, concatenates)
FSDP_COPIES = frozenset(
    {"fsdp.all_gather_copy_in", "fsdp.split_with_sizes_copy", "fsdp.chunk_cat", "fsdp.chunk_cat_mixed_dtype"}
)
FSDP_STREAM_REASON = "FSDP2 stream bookkeeping: orders a buffer's reuse, performs no arithmetic."
FSDP_STREAMS = frozenset({"fsdp.record_grad_output_stream"})

# Which positional argument of a c10d operator holds the tensors this rank hands to it
# (distributed.md 3: all_reduce the input, all_gather and reduce_scatter the local input, broadcast
# the tensor on each rank). ``_c10d_functional`` operators all take their input first.
C10D_CONTRIBUTION = {
    "c10d.allreduce_": 0,
    "c10d.allreduce_coalesced_": 0,
    "c10d.broadcast_": 0,
    "c10d.reduce_": 0,
    "c10d.send": 0,
    "c10d._allgather_base_": 1,
    "c10d.allgather_": 1,
    "c10d.allgather_coalesced_": 1,
    "c10d.allgather_into_tensor_coalesced_": 1,
    "c10d._reduce_scatter_base_": 1,
    "c10d.reduce_scatter_": 1,
    "c10d.reduce_scatter_tensor_coalesced_": 1,
    "c10d.alltoall_base_": 1,
    "c10d.alltoall_": 1,
    "c10d.gather_": 1,
    "c10d.scatter_": 1,
}
# Operators that hand no payload to the network from this rank: synchronisation, receiving, and the
# functional collectives' bookkeeping (waiting on or wrapping an output). Their calls are recorded.
NO_PAYLOAD = frozenset(
    {
        "c10d.barrier",
        "c10d.monitored_barrier_",
        "c10d.recv_",
        "c10d.recv_any_source_",
        "_c10d_functional.wait_tensor",
        "_c10d_functional._wrap_tensor_autograd",
    }
)


def is_communication(name: str) -> bool:
    """Whether an operator packet name is a collective or point-to-point operator."""
    return name.startswith(COMMUNICATION_PREFIXES)


def ignored_reason(name: str) -> str | None:
    """The reason a distributed bookkeeping operator is ignored, or ``None``."""
    if name in FSDP_COPIES:
        return FSDP_COPY_REASON
    return FSDP_STREAM_REASON if name in FSDP_STREAMS else None


def _tensor_bytes(value: Any) -> int:
    """Elements × element size of every tensor in ``value`` (a tensor or nested lists of them)."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, list | tuple):
        return sum(_tensor_bytes(item) for item in value)
    return 0


def contributed_bytes(name: str, args: tuple[Any, ...]) -> int | None:
    """Bytes this rank handed to one collective call; ``None`` when the operator is not known."""
    if name in NO_PAYLOAD:
        return 0
    if name.startswith("_c10d_functional"):
        index: int | None = 0
    else:
        index = C10D_CONTRIBUTION.get(name)
    if index is None:
        return None
    return _tensor_bytes(args[index]) if len(args) > index else 0


def _fake_mode_active() -> bool:
    """Whether a FakeTensorMode is active (DTensor's sharding propagation), on this torch build."""
    getter = getattr(torch._C, "_get_dispatch_mode", None)
    key = getattr(getattr(torch._C, "_TorchDispatchModeKey", None), "FAKE", None)
    if getter is None or key is None:
        return False
    return getter(key) is not None


def dtensor_type() -> type | None:
    """DTensor's class once ``torch.distributed.tensor`` was imported by someone; never imports it."""
    module = sys.modules.get("torch.distributed.tensor")
    return getattr(module, "DTensor", None)


def _first_dtensor(values: Iterable[Any], cls: type) -> Any:
    for value in values:
        if isinstance(value, cls):
            return value
        if isinstance(value, list | tuple):
            found = _first_dtensor(value, cls)
            if found is not None:
                return found
    return None


def mesh_dimensions(mesh: Any) -> list[MeshDimension]:
    """A device mesh as ``[{"name", "size"}]``; unnamed dimensions are called ``dim0``, ``dim1``…"""
    names = getattr(mesh, "mesh_dim_names", None) or ()
    shape = tuple(mesh.shape)
    return [
        {"name": str(names[i]) if i < len(names) else f"dim{i}", "size": int(size)}
        for i, size in enumerate(shape)
    ]


def process_group_context(mesh: list[MeshDimension] | None) -> DistributedContext | None:
    """``context.distributed`` when ``torch.distributed`` is initialized, else ``None``.

    Only reads the caller's default group (backend, world size, rank); never initializes it.
    """
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return {
        "backend": str(dist.get_backend()),
        "world_size": int(dist.get_world_size()),
        "rank": int(dist.get_rank()),
        "mesh": mesh,
    }


class DistributedTally:
    """Logical DTensor work and communication seen by one observer (plain state, no torch globals).

    ``depth`` > 0 while DTensor's own dispatch of an operator runs under the observer.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.dtensor_seen = False
        self.mesh: list[MeshDimension] | None = None
        self.logical_flops = 0
        self.logical_gaps: dict[str, str] = {}
        self.inside_flops = 0  # executed FLOPs counted inside DTensor dispatches
        self.plain_flops = 0  # executed FLOPs outside them (set when logical_total is built)
        self.calls: dict[str, int] = {}
        self.bytes: dict[str, int] = {}
        self.unknown_bytes: set[str] = set()
        self._dtensor_types: dict[Any, bool] = {}  # a call's ``types`` -> has a DTensor among them

    def skip(self) -> bool:
        """Whether the current call is DTensor's sharding propagation on fake tensors (not executed)."""
        return bool(self.depth) and _fake_mode_active()

    def is_dtensor_call(self, types: Any) -> bool:
        """Whether a dispatched call has a DTensor among its tensor types (``types`` is non-empty)."""
        cls = dtensor_type()
        if cls is None:
            return False
        # Runs for every dispatched call once DTensor's module is imported (transformers imports it):
        # the answer for one tuple of types never changes, so it is looked up, not recomputed.
        if type(types) is not tuple:  # PyTorch passes a tuple; anything else is checked each time
            return any(issubclass(t, cls) for t in types)
        known = self._dtensor_types.get(types)
        if known is None:
            known = self._dtensor_types[types] = any(issubclass(t, cls) for t in types)
        return known

    def record_collective(self, name: str, args: tuple[Any, ...]) -> None:
        """One collective or point-to-point call and the bytes this rank handed to it."""
        self.calls[name] = self.calls.get(name, 0) + 1
        size = contributed_bytes(name, args)
        if size is None:
            self.unknown_bytes.add(name)
            size = 0
        self.bytes[name] = self.bytes.get(name, 0) + size

    def dtensor_call(
        self,
        observer: Any,
        entry: Any,
        func: Any,
        args: tuple[Any, ...],
        kwargs: Any,
    ) -> Any:
        """Run one DTensor operator so that its local work is observed, and count it logically.

        The outermost DTensor call is re-dispatched under the re-entered ``observer``; the call
        coming back (and any DTensor call nested in DTensor's dispatch) gets ``NotImplemented``,
        so DTensor's dispatch handles it and its local operators reach the observer.
        """
        if self.depth:
            return NotImplemented
        if not self.dtensor_seen:
            self.dtensor_seen = True
            cls = dtensor_type()
            found = _first_dtensor((*args, *kwargs.values()), cls) if cls is not None else None
            if found is not None:
                self.mesh = mesh_dimensions(found.device_mesh)
        before = sum(observer.phases.flops)
        self.depth += 1
        try:
            with observer:
                out = func(*args, **kwargs)
        finally:
            self.depth -= 1
        self.inside_flops += sum(observer.phases.flops) - before
        flops, gap = logical_count(entry, args, kwargs, out)
        self.logical_flops += flops
        if gap is not None:
            self.logical_gaps.setdefault(entry.name, gap)
        return out

    # --- report parts ---------------------------------------------------------------------------

    def logical_total(self, executed: MetricResult, executed_partial: bool) -> MetricResult | None:
        """``logical_total`` (scope ``global``), or ``None`` when no DTensor operator was seen.

        DTensor operators count once at their global shapes; plain-tensor operators outside any
        DTensor dispatch count as executed (this process cannot know whether they are shards).
        """
        if not self.dtensor_seen:
            return None
        known = executed["known_value"] or 0
        self.plain_flops = int(known) - self.inside_flops
        value = self.plain_flops + self.logical_flops
        # Plain-tensor work may be a shard (after to_local(), or ColwiseParallel's default
        # use_local_output=True): counted at local shapes it can only understate the logical work.
        partial = executed_partial or bool(self.logical_gaps) or self.plain_flops > 0
        return metric_result(
            "partial" if partial else "complete",
            value,
            unit="FLOPs",
            scope="global",
            method=OPERATOR_METHOD,
        )

    def communication(self) -> Communication | None:
        """``communication``, present once any collective ran or a process group is initialized."""
        if not self.calls and process_group_context(None) is None:
            return None
        total = sum(self.bytes.values())
        return {
            "total_bytes": metric_result(
                "partial" if self.unknown_bytes else "complete",
                total,
                unit="bytes",
                scope="workload",
                method=COMMUNICATION_METHOD,
            ),
            "by_operator": {
                name: {"calls": self.calls[name], "bytes": self.bytes[name]} for name in sorted(self.calls)
            },
        }

    def diagnostics(self) -> list[Diagnostic]:
        """Gaps of the logical total and collectives whose payload is unknown."""
        entries = [
            diagnostic("logical_operator_formula", reason, metric="logical_flops", operator=name)
            for name, reason in sorted(self.logical_gaps.items())
        ]
        if self.dtensor_seen and self.plain_flops > 0:
            entries.append(
                diagnostic(
                    "plain_tensor_work_in_logical_total",
                    f"{self.plain_flops} FLOPs ran on plain tensors outside any DTensor operator (for "
                    "example after to_local(), or behind ColwiseParallel's default use_local_output=True). "
                    "They enter logical_total at the shapes this rank computed, which may be shards, so "
                    "logical_total is a lower bound.",
                    metric="logical_flops",
                )
            )
        entries += [
            diagnostic(
                "unknown_collective_bytes",
                f"{name} was called {self.calls[name]} time(s); the bytes it is handed are not known.",
                metric="communication_bytes",
                operator=name,
            )
            for name in sorted(self.unknown_bytes)
        ]
        return entries


def logical_count(entry: Any, args: tuple[Any, ...], kwargs: Any, out: Any) -> tuple[int, str | None]:
    """One DTensor operator counted at its global shapes: ``(flops, gap reason or None)``.

    Uses the formula the observer resolved for the operator (DTensor shapes are global), without
    touching the executed tallies.
    """
    kind = entry.kind
    if kind == IGNORED or (entry.ignore_when is not None and entry.ignore_when(args, kwargs)):
        return 0, None
    formula: Callable[..., Any] | None = entry.formula
    if kind == UNCOUNTED or formula is None:
        return 0, "No FLOP formula is registered for this DTensor operator."
    if kind == INHERITED and not entry.verified:
        return 0, "Only a FlopCounterMode formula TorchScan has not checked on this torch covers it."
    try:
        if kind in (CUSTOM, INHERITED):
            value = formula(*args, **kwargs, out_val=out)
        else:
            value = formula(args, kwargs, out)
    except Exception as error:  # a formula that cannot describe the global call is a gap, not a crash
        return 0, f"The formula failed at global shapes: {type(error).__name__}"
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return 0, "The formula returned no finite non-negative number at global shapes."
    return int(value), None
