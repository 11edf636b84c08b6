"""``progress=`` of the workload APIs: who hears about a long measurement, and how (issue 15 item 5).

``None`` (the default) shows one self-updating line on stderr, only when stderr is a terminal, so
logs and pipes stay clean; ``False`` shows nothing; ``True`` always writes the line to stderr; a
callable receives ``(phase, done, total_estimate)``. Phases and their units:

- ``first_call``: calls, ``0`` then ``1`` of ``1``;
- ``warmup``: calls done of ``warmup``;
- ``timing``: seconds spent in timed blocks of the ``min_run_time`` budget (an estimate: the
  timer may overrun it to finish a block or reach ``min_repeats``); the last update gives
  ``done == total_estimate``, the seconds actually spent;
- ``operator_flops``, ``peak_memory``, ``memory_ledger`` (also ``measure_memory``), ``profile``,
  ``process_peak_rss``: passes, ``0`` then ``1``;
- ``scaling`` (``measure_scaling``): points measured of all points, ``0`` first.

Updates are throttled (at most one every :data:`INTERVAL` seconds per phase) except the first and
last of each phase. They never run inside a timed block. No new dependency: a ``\\r`` line, cleared
at the end.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import TextIO

from torchscan.runtime.arguments import ArgumentTypeError

ProgressCallback = Callable[[str, float, float], object]
INTERVAL = (
    0.25  # seconds between throttled updates: often enough to look alive, rarely enough to cost nothing
)


def check_progress(progress: object) -> None:
    """``TypeError`` naming ``progress`` unless it is ``None``, a bool or a callable."""
    if progress is None or isinstance(progress, bool) or callable(progress):
        return
    raise ArgumentTypeError(
        "progress must be None, True, False or a callable (phase, done, total_estimate), "
        f"got {type(progress).__name__}"
    )


class Progress:
    """Throttled updates to one callback; :meth:`close` ends a terminal line."""

    def __init__(self, callback: ProgressCallback, line: StderrLine | None = None) -> None:
        self.callback = callback
        self.line = line
        self.phase = ""
        self.last = 0.0

    def update(self, phase: str, done: float, total: float, *, final: bool = False) -> None:
        """Forward ``(phase, done, total)`` unless an update of this phase was sent moments ago."""
        now = time.perf_counter()
        if phase == self.phase and not final and now - self.last < INTERVAL:
            return
        self.phase, self.last = phase, now
        self.callback(phase, done, total)

    def close(self) -> None:
        """Clear the terminal line (a callback hears nothing more)."""
        if self.line is not None:
            self.line.clear()


def start_progress(progress: object, stream: TextIO | None = None) -> Progress | None:
    """The reporter ``progress`` asks for, or ``None`` for silence (checked by :func:`check_progress`)."""
    check_progress(progress)
    if progress is False:
        return None
    if callable(progress):
        return Progress(progress)
    target = sys.stderr if stream is None else stream
    if progress is None and not _is_terminal(target):
        return None
    line = StderrLine(target)
    return Progress(line.show, line)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or minimal stream is no terminal
        return False


def describe(phase: str, done: float, total: float) -> str:
    """``timing 1.2 s / 8 s budget``, ``warmup 3/5 calls``, ``operator_flops pass``."""
    if phase == "timing":
        return f"timing {done:.1f} s / {total:g} s budget"
    if phase == "warmup":
        return f"warmup {int(done)}/{int(total)} calls"
    if phase == "first_call":
        return "first call …" if done < total else "first call done"
    if phase == "scaling":
        return f"scaling {int(done)}/{int(total)} points"
    return f"{phase.replace('_', ' ')} pass …" if done < total else f"{phase.replace('_', ' ')} pass done"


class StderrLine:
    """One self-updating line: ``\\r`` rewrites it, the erase-line code clears what is left."""

    def __init__(self, stream: TextIO, label: str = "torchscan") -> None:
        self.stream = stream
        self.label = label
        self.shown = False

    def show(self, phase: str, done: float, total: float) -> None:
        """Rewrite the line for this update."""
        self.write(describe(phase, done, total))

    def write(self, text: str) -> None:
        """Rewrite the line with ``text``."""
        self.stream.write(f"\r{self.label}: {text}\033[K")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        """Erase the line, leaving the cursor at its start."""
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False


@contextlib.contextmanager
def one_pass(progress: Progress | None, phase: str | None) -> Iterator[None]:
    """Report ``phase`` as ``0`` then ``1`` of ``1`` around the block (``None``: no updates).

    When the block raises, the terminal line is cleared first, so the traceback starts on a clean line.
    """
    if progress is not None and phase is not None:
        progress.update(phase, 0, 1)
    try:
        yield
    except BaseException:
        if progress is not None:
            progress.close()
        raise
    if progress is not None and phase is not None:
        progress.update(phase, 1, 1, final=True)
