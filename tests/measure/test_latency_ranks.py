"""Rank-agreed timing (measure/rank_agreement.py) without a process group.

Two simulated ranks run ``agreed_autorange`` in threads with an agreement that meets at a barrier
(the all_reduce MAX of a real group); their timers return synthetic block durations (exact binary
fractions) from a per-call cost, so the agreed counts are derived by hand. The real gloo run is in
tests/distributed.
"""

from __future__ import annotations

import threading
import time

import pytest
import torch

from torchscan.measure import latency, rank_agreement
from torchscan.measure.latency import measure_latency
from torchscan.measure.rank_agreement import ProcessGroupAgreement, agreed_autorange, agreement_device


class Block:
    def __init__(self, seconds: float) -> None:
        self.raw_times = [seconds]


class PerCallTimer:
    """Blocks last ``number × per_call`` seconds (0 for ``timeit(0)``); counts the calls it would run."""

    def __init__(self, per_call: float) -> None:
        self.per_call = per_call
        self.numbers: list[int] = []

    def timeit(self, number: int) -> Block:
        self.numbers.append(number)
        return Block(number * self.per_call)


class BarrierAgreement:
    """``any_rank`` for simulated ranks: each posts its flag, all meet, each reads the OR."""

    def __init__(self, world_size: int) -> None:
        self.world_size = world_size
        self.flags: dict[int, bool] = {}
        self.posted = threading.Barrier(world_size)
        self.read = threading.Barrier(world_size)
        self.local = threading.local()

    def any_rank(self, flag: bool) -> bool:
        self.flags[self.local.rank] = flag
        self.posted.wait(timeout=10)
        result = any(self.flags.values())
        self.read.wait(timeout=10)  # nobody posts the next flag before everyone has read this one
        return result

    def same_on_every_rank(self, name: str, value: int) -> None:
        raise AssertionError("agreed_autorange itself checks no argument")


def _run_ranks(per_call: list[float], min_run_time: float, min_repeats: int):
    agreement = BarrierAgreement(len(per_call))
    timers = [PerCallTimer(cost) for cost in per_call]
    results: list[tuple[int, list[float]] | None] = [None] * len(per_call)

    def rank_main(rank: int) -> None:
        agreement.local.rank = rank
        results[rank] = agreed_autorange(timers[rank], min_run_time, min_repeats, agreement)

    threads = [threading.Thread(target=rank_main, args=(rank,)) for rank in range(len(per_call))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert not any(thread.is_alive() for thread in threads)
    return results, timers


def test_a_single_rank_follows_blocked_autorange():
    # per call 2^-4 s, min_run_time 0.25: timeit(0) lasts 0 s, so the overhead ratio is 0 and one
    # call (0.0625 s ≥ 0.25 / 1000) settles calibration; blocks of 0.0625 s until 0.25 s: 4 blocks
    (result,), (timer,) = _run_ranks([2**-4], 0.25, 2)
    assert result == (1, [0.0625] * 4)
    assert timer.numbers == [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]


def test_every_rank_runs_the_largest_count_any_rank_needs():
    # rank 0 alone: 1 call per block, 4 blocks. Rank 1 (2^-12 s per call): 1 call lasts
    # 0.000244 s < 0.25 / 1000 = 0.00025, 10 calls settle; blocks of 10·2^-12 s need
    # ceil(0.25 / (10·2^-12)) = ceil(102.4) = 103 blocks. Agreed: 10 calls per block, 103 blocks.
    results, timers = _run_ranks([2**-4, 2**-12], 0.25, 2)
    assert [(number, len(blocks)) for number, blocks in results] == [(10, 103), (10, 103)]
    assert timers[0].numbers == timers[1].numbers == [0] * 5 + [1, 10] + [10] * 103
    assert results[0][1] == [0.625] * 103  # rank 0's blocks of 10 calls at 2^-4 s each


def test_min_repeats_is_agreed_too():
    # both ranks need only one block of 0.5 s for min_run_time 0.25; min_repeats 3 adds two more
    results, _ = _run_ranks([0.5, 0.5], 0.25, 3)
    assert results == [(1, [0.5, 0.5, 0.5])] * 2


class FakeDist:
    """The part of ``torch.distributed`` ProcessGroupAgreement uses; the other rank holds ``other``."""

    class ReduceOp:
        MAX = "max"

    def __init__(self, other: list[int], backend: str = "gloo") -> None:
        self.other = other
        self.backend = backend
        self.reduced: list[tuple[list[int], str, torch.device]] = []

    def get_world_size(self) -> int:
        return 2

    def get_backend(self) -> str:
        return self.backend

    def all_reduce(self, tensor: torch.Tensor, op: str) -> None:
        self.reduced.append((tensor.tolist(), op, tensor.device))
        tensor.copy_(torch.maximum(tensor, torch.tensor(self.other[: tensor.numel()])))


def test_process_group_agreement_all_reduces_max_on_cpu_for_gloo():
    dist = FakeDist([1])
    assert ProcessGroupAgreement(dist).any_rank(False) is True
    assert dist.reduced == [([0], "max", torch.device("cpu"))]
    assert ProcessGroupAgreement(FakeDist([0])).any_rank(False) is False


def test_same_on_every_rank_raises_naming_the_argument():
    agreement = ProcessGroupAgreement(FakeDist([5, -5]))
    agreement.same_on_every_rank("warmup", 5)  # max 5, min 5: agreed
    with pytest.raises(ValueError, match=r"warmup must be the same on every rank.*from 3 to 5"):
        ProcessGroupAgreement(FakeDist([5, -5])).same_on_every_rank("warmup", 3)


def test_agreement_device_follows_the_backend(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    assert agreement_device("gloo") == torch.device("cpu")
    assert agreement_device("cpu:gloo,cuda:nccl") == torch.device("cpu")  # gloo serves CPU tensors
    assert agreement_device("nccl") == torch.device("cuda", 3)  # nccl takes only CUDA tensors


def test_no_initialized_group_means_no_agreement():
    assert not torch.distributed.is_initialized()
    assert rank_agreement.rank_agreement(True) is None
    assert rank_agreement.rank_agreement(False) is None


class AgreedTimer:
    """A timer seam whose ``blocked_autorange`` must not run when counts are agreed."""

    def __init__(self, *, stmt, globals, timer, num_threads) -> None:
        self.workload = globals["workload"]

    def blocked_autorange(self, min_run_time):
        raise AssertionError("agreed timing replaces blocked_autorange")

    def timeit(self, number: int) -> Block:
        for _ in range(number):
            self.workload()
        return Block(number * 2**-4)


class TwoRankAgreement:
    """The other rank's flags are scripted: it agrees to stop calibrating, then wants a third block."""

    world_size = 2

    def __init__(self) -> None:
        self.checked: list[tuple[str, int]] = []
        self.flags: list[bool] = []
        self.other = [False, True, True, False]

    def any_rank(self, flag: bool) -> bool:
        self.flags.append(flag)
        return flag or self.other[len(self.flags) - 1]

    def same_on_every_rank(self, name: str, value: int) -> None:
        self.checked.append((name, value))


def test_measure_latency_records_the_agreed_world_size(monkeypatch):
    agreement = TwoRankAgreement()
    monkeypatch.setattr(latency, "load_timer", lambda: AgreedTimer)
    monkeypatch.setattr(latency, "rank_agreement", lambda enabled: agreement if enabled else None)
    calls: list[int] = []
    report = measure_latency(lambda: calls.append(1), device="cpu", warmup=2, min_run_time=0.1, min_repeats=2)
    # calibration: one call settles locally (0.0625 s > 0.1 / 1000) and the other rank agrees; the
    # other rank keeps timing until 3 blocks (this rank alone would stop at 2 blocks = 0.125 s)
    assert agreement.checked == [("warmup", 2)]
    assert agreement.flags == [False, True, False, False]
    assert report["measurement"] == {
        "number_per_run": 1,
        "raw_times_seconds": [0.0625] * 3,
        "measured_calls": 3,
        "agreed_across_ranks": 2,
    }
    assert len(calls) == 1 + 2 + 1 + 3  # first call, warmup, calibration block, measured blocks


def test_opting_out_keeps_single_process_timing(monkeypatch):
    seen: list[bool] = []

    def no_agreement(enabled: bool) -> None:
        seen.append(enabled)

    monkeypatch.setattr(latency, "rank_agreement", no_agreement)
    report = measure_latency(
        lambda: time.sleep(0),
        device="cpu",
        warmup=0,
        min_run_time=0.001,
        min_repeats=2,
        agree_across_ranks=False,
    )
    assert seen == [False]
    assert set(report["measurement"]) == {"number_per_run", "raw_times_seconds", "measured_calls"}


@pytest.mark.parametrize("value", [1, None, "yes"])
def test_agree_across_ranks_must_be_a_bool(value):
    def never() -> None:
        raise AssertionError("the workload must not run")

    with pytest.raises(TypeError, match="agree_across_ranks"):
        measure_latency(never, device="cpu", agree_across_ranks=value)


@pytest.mark.parametrize("enabled", [True, False])
def test_measure_workload_forwards_the_choice(monkeypatch, enabled):
    from torchscan import measure_workload

    seen: list[bool] = []

    def record(flag: bool) -> None:
        seen.append(flag)

    monkeypatch.setattr(latency, "rank_agreement", record)
    measure_workload(
        lambda: time.sleep(0),
        device="cpu",
        metrics=("latency",),
        warmup=0,
        min_run_time=0.001,
        min_repeats=2,
        agree_across_ranks=enabled,
    )
    assert seen == [enabled]
