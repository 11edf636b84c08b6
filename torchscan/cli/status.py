"""The self-updating stderr status line of the ``torchscan`` command line (cli.md, ``latency``/``scan``).

A terminal shows ``torchscan: <what> (N s elapsed)`` from the first second of a slow import or
analysis; anything else (a pipe, a file, a test's capture) shows nothing, so logs stay clean.
While the line is up, anything else written to stderr (a warning from torch or the model) first
erases it and starts on a clean line, so the two are never glued together (issue 23 item 6); the
next tick draws the status again below.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO


class Status:
    """One self-updating stderr line with elapsed seconds, ticking every second (terminals only).

    The ticker starts at once, so something is on screen from the first second of a slow import or
    analysis; ``set`` changes the text (a progress callback of the timing APIs calls it).
    """

    def __init__(self, text: str, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.text = text
        self.start = time.perf_counter()
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.shown = False

    def set(self, text: str) -> None:
        """Show ``text`` now (followed by the elapsed seconds)."""
        self.text = text
        self._draw()

    def _draw(self) -> None:
        with self.lock:
            if self.done.is_set():
                return
            elapsed = time.perf_counter() - self.start
            self.stream.write(f"\rtorchscan: {self.text} ({elapsed:.0f} s elapsed)\033[K")
            self.stream.flush()
            self.shown = True

    def erase(self) -> None:
        """Erase the line (if shown) so other output starts at column 0; the next tick redraws it."""
        with self.lock:
            if self.shown:
                self.stream.write("\r\033[K")
                self.shown = False

    def _tick(self) -> None:
        while not self.done.wait(1.0):
            self._draw()

    def clear(self) -> None:
        """Stop ticking and erase the line."""
        with self.lock:
            self.done.set()
            if self.shown:
                self.stream.write("\r\033[K")
                self.stream.flush()
                self.shown = False


class _Stderr:
    """``sys.stderr`` while a status line is up: other writers first erase the line."""

    def __init__(self, stream: TextIO, status: Status) -> None:
        self._stream = stream
        self._status = status

    def write(self, text: str) -> int:
        if text:
            self._status.erase()
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding: the real stream's
        return getattr(self._stream, name)


@contextlib.contextmanager
def status_line(text: str) -> Iterator[Status | None]:
    """A :class:`Status` line while the block runs, or ``None`` when stderr is not a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    original = sys.stderr
    status = Status(text, original)
    status.set(text)
    thread = threading.Thread(target=status._tick, daemon=True)
    thread.start()
    sys.stderr = _Stderr(original, status)  # type: ignore[assignment]
    try:
        yield status
    finally:
        sys.stderr = original
        status.clear()
        thread.join()
