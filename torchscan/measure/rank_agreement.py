"""Rank-safe timing: every rank of a ``torch.distributed`` job runs the same number of calls.

``torch.utils.benchmark.Timer.blocked_autorange`` picks its calls per block (calibration) and its
number of blocks (until ``min_run_time``) from this process's clock. Under ``torch.distributed`` each
rank reads its own clock, so ranks would run different numbers of calls, and a workload that runs a
collective (DDP, tensor parallel) deadlocks: one rank waits in an all-reduce that the other never
enters. Here every such data-dependent decision is agreed on the default group with one
``all_reduce(MAX)`` of a small integer tensor, *between* timed blocks (never inside one): a rank
continues calibrating or timing while any rank wants to. The procedure is otherwise the one of
``blocked_autorange`` (workloads.md 5.2), followed by the ``min_repeats`` top-up.

The caller's process group is only read and used for these collectives: never initialized, joined
or destroyed here. An uninitialized group (or world size 1) means no agreement at all.
"""

from __future__ import annotations

import statistics
import sys
from typing import Any, Protocol

import torch

# blocked_autorange stops calibrating once the timer's own overhead is at most this fraction of a
# block (and the block lasts at least min_run_time / 1000), or once a block exceeds min_run_time.
RELATIVE_OVERHEAD = 1e-4
MAX_NUMBER = 2_147_483_647  # the C++ timer's int limit, as in blocked_autorange


class Agreement(Protocol):
    """What the agreed procedure needs from the ranks (the seam unit tests replace)."""

    world_size: int

    def any_rank(self, flag: bool) -> bool:
        """Whether ``flag`` is true on at least one rank (a collective: every rank must call it)."""
        ...

    def same_on_every_rank(self, name: str, value: int) -> None:
        """Raise ``ValueError`` on every rank when ``value`` differs between ranks."""
        ...


def _initialized_group() -> Any:
    """``torch.distributed`` when a default group is initialized, else ``None`` (never imports it)."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist


def agreement_device(backend: str) -> torch.device:
    """Where the agreement tensor lives: CPU when the backend serves CPU tensors, else the accelerator.

    ``gloo`` and ``mpi`` (alone or in a ``"cpu:gloo,cuda:nccl"`` map) take CPU tensors; ``nccl`` only
    takes tensors on the current CUDA device; other accelerator backends the current accelerator.
    """
    names = [part.split(":")[-1].strip() for part in backend.lower().split(",")]
    if any(name in ("gloo", "mpi") for name in names):
        return torch.device("cpu")
    if "nccl" in names:
        return torch.device("cuda", torch.cuda.current_device())
    accelerator: Any = getattr(torch, "accelerator", None)  # torch >= 2.6
    current = accelerator.current_accelerator() if accelerator is not None else None
    if current is None:
        return torch.device("cpu")
    return torch.device(current.type, accelerator.current_device_index())


class ProcessGroupAgreement:
    """Agreement over the caller's default process group (``all_reduce`` with ``MAX``)."""

    def __init__(self, dist: Any) -> None:
        self.dist = dist
        self.world_size = int(dist.get_world_size())
        self.device = agreement_device(str(dist.get_backend()))

    def _max(self, values: list[int]) -> list[int]:
        tensor = torch.tensor(values, dtype=torch.int64, device=self.device)
        self.dist.all_reduce(tensor, op=self.dist.ReduceOp.MAX)
        return [int(v) for v in tensor.tolist()]  # .tolist() waits for the collective to finish

    def any_rank(self, flag: bool) -> bool:
        """All-reduce ``flag`` with ``MAX``: true when any rank passed true."""
        return self._max([int(flag)])[0] == 1

    def same_on_every_rank(self, name: str, value: int) -> None:
        """MAX of ``value`` and of ``-value`` give the largest and smallest value over ranks."""
        largest, negated_smallest = self._max([value, -value])
        if largest != -negated_smallest:
            raise ValueError(
                f"{name} must be the same on every rank to agree call counts across ranks; it ranges "
                f"from {-negated_smallest} to {largest} over the {self.world_size} ranks"
            )


def rank_agreement(enabled: bool) -> ProcessGroupAgreement | None:
    """The agreement to time under, or ``None`` for single-process timing.

    ``None`` when ``enabled`` is false, ``torch.distributed`` is not initialized, or the world size is 1.
    """
    dist = _initialized_group() if enabled else None
    if dist is None or int(dist.get_world_size()) < 2:
        return None
    return ProcessGroupAgreement(dist)


def agreed_autorange(
    timer: Any, min_run_time: float, min_repeats: int, agreement: Agreement
) -> tuple[int, list[float]]:
    """``blocked_autorange`` plus the ``min_repeats`` top-up, with every count agreed across ranks.

    Calibration times ``timeit(0)`` five times (the timer's overhead, no workload call), then blocks
    of 1, 10, 100, … calls until the block is long enough on *every* rank; so the agreed calls per
    block are the largest any rank would have chosen. Blocks of that size are then timed while any
    rank has spent less than ``min_run_time`` in blocks or has fewer than ``min_repeats`` blocks.
    Returns ``(number_per_run, block durations)``; every rank returns the same number of blocks.

    Blocks are timed with the public ``Timer.timeit``, which first runs ``max(n // 100, 2)`` untimed
    warm-up calls: a fixed count, the same on every rank (``blocked_autorange`` uses a private
    method without them).
    """
    overhead = statistics.median(_block(timer, 0) for _ in range(5))
    number = 1
    while True:
        taken = _block(timer, number)
        # a non-positive block (a coarse or patched clock) ends calibration; the caller rejects it
        settled = (
            taken <= 0
            or (overhead / taken <= RELATIVE_OVERHEAD and taken >= min_run_time / 1000)
            or taken > min_run_time
        )
        if number * 10 > MAX_NUMBER or not agreement.any_rank(not settled):
            break
        number *= 10
    blocks: list[float] = []
    while True:
        blocks.append(_block(timer, number))
        more = sum(blocks) < min_run_time or len(blocks) < min_repeats
        if not agreement.any_rank(more):
            return number, blocks


def _block(timer: Any, number: int) -> float:
    """One timed block of ``number`` calls (``timeit`` reads the synchronised clock at both ends)."""
    raw = timer.timeit(number).raw_times
    if not raw:
        raise RuntimeError("torch.utils.benchmark.Timer.timeit returned no timed block")
    return float(raw[0])
