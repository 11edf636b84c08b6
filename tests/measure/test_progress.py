"""``progress=`` of measure_latency, measure_workload and profile_workload (issue 15 item 5)."""

from __future__ import annotations

import io
import sys
from typing import Any

import pytest
import torch

from torchscan import measure_latency, measure_workload, profile_workload
from torchscan.measure import progress as progress_mod
from torchscan.measure.latency import _ReportingClock
from torchscan.measure.progress import Progress, StderrLine, describe, start_progress

FAST = {"device": "cpu", "warmup": 2, "min_run_time": 0.01, "min_repeats": 2}


class Collector:
    """A progress callable that keeps every update."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, float, float]] = []

    def __call__(self, phase: str, done: float, total: float) -> None:
        self.updates.append((phase, done, total))

    def phases(self) -> list[str]:
        return list(dict.fromkeys(phase for phase, _, _ in self.updates))


def _work() -> None:
    torch.ones(8).sum()


def test_latency_reports_every_phase_with_its_units() -> None:
    seen = Collector()
    measure_latency(_work, progress=seen, **FAST)
    assert seen.phases() == ["first_call", "warmup", "timing"]
    assert seen.updates[:2] == [("first_call", 0, 1), ("first_call", 1, 1)]
    warmup = [u for u in seen.updates if u[0] == "warmup"]
    assert warmup[0] == ("warmup", 1, 2) and warmup[-1] == ("warmup", 2, 2)
    timing = [u for u in seen.updates if u[0] == "timing"]
    assert all(total == 0.01 for _, _, total in timing[:-1])  # the min_run_time budget, in seconds
    *_, (_, done, total) = timing
    assert done == total > 0  # the last update: the seconds actually spent
    assert [d for _, d, _ in timing] == sorted(d for _, d, _ in timing)


def test_timing_updates_fall_between_blocks_never_inside_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_mod, "INTERVAL", 0.0)
    seen = Collector()
    ticks = iter(range(100))
    clock = _ReportingClock(lambda: float(next(ticks)), Progress(seen), budget=8.0)
    assert [clock() for _ in range(5)] == [0.0, 1.0, 2.0, 3.0, 4.0]
    # Reads 1/2 and 3/4 bracket two blocks; updates follow the end readings (2nd and 4th) only.
    assert seen.updates == [("timing", 1.0, 8.0), ("timing", 3.0, 8.0)]


def test_workload_reports_each_pass() -> None:
    seen = Collector()
    measure_workload(_work, metrics=("latency", "memory"), progress=seen, **FAST)
    assert seen.phases() == ["first_call", "warmup", "timing", "peak_memory"]
    assert [u for u in seen.updates if u[0] == "peak_memory"] == [
        ("peak_memory", 0, 1),
        ("peak_memory", 1, 1),
    ]


def test_profile_reports_its_pass() -> None:
    seen = Collector()
    profile_workload(_work, device="cpu", progress=seen)
    assert seen.updates == [("profile", 0, 1), ("profile", 1, 1)]


CALLS = [
    lambda work, p: measure_latency(work, progress=p, **FAST),
    lambda work, p: measure_workload(work, metrics=("latency",), progress=p, **FAST),
    lambda work, p: profile_workload(work, device="cpu", progress=p),
]


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("bad", ["yes", 1, 0.5, [print]])
def test_non_callable_non_bool_progress_is_refused_before_the_workload_runs(call: Any, bad: object) -> None:
    ran: list[int] = []

    def workload() -> None:
        ran.append(1)

    with pytest.raises(TypeError, match="progress"):
        call(workload, bad)
    assert ran == []


@pytest.mark.parametrize("call", CALLS)
def test_default_is_silent_off_a_terminal_and_false_is_silent_on_one(
    call: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    call(_work, None)
    assert capsys.readouterr().err == ""  # pytest's stderr is no terminal
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    call(_work, False)
    assert capsys.readouterr().err == ""


def test_default_on_a_terminal_is_one_self_updating_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    measure_latency(_work, **FAST)
    err = capsys.readouterr().err
    assert "\n" not in err  # rewritten in place, never scrolled
    assert err.startswith("\rtorchscan: first call …\x1b[K")
    assert "\rtorchscan: timing " in err and " s / 0.01 s budget" in err
    assert err.endswith("\r\x1b[K")  # cleared when done


def test_true_writes_the_line_even_off_a_terminal() -> None:
    stream = io.StringIO()
    reporter = start_progress(True, stream)
    assert reporter is not None
    reporter.update("warmup", 3, 5)
    reporter.close()
    assert stream.getvalue() == "\rtorchscan: warmup 3/5 calls\x1b[K\r\x1b[K"
    assert start_progress(None, io.StringIO()) is None  # StringIO is no terminal


def test_descriptions() -> None:
    assert describe("timing", 1.25, 8) == "timing 1.2 s / 8 s budget"
    assert describe("first_call", 1, 1) == "first call done"
    assert describe("peak_memory", 0, 1) == "peak memory pass …"
    line = StderrLine(io.StringIO())
    line.clear()  # nothing shown: nothing to clear
    assert line.stream.getvalue() == ""  # type: ignore[attr-defined]


def test_a_raising_workload_clears_the_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)

    def broken() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        measure_workload(broken, metrics=("memory",), device="cpu")
    assert capsys.readouterr().err.endswith("\r\x1b[K")
